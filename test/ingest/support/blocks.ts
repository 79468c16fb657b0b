import crypto from 'node:crypto';
import bs58 from 'bs58';
import { encodeEntryBatch } from '../../../ingest/entry/entries';
import { shredBatch } from '../../../ingest/shred/shredder';
import type { Keypair } from '../../../infra/base/keypair';
import { signedTransfer } from '../../../infra/local/demo/transfers';

// Whole signed blocks of real transfers for the hostile-input tests: one slot = one entry batch = one FEC set
// (64 shreds), signed by `leader` like the demo traffic (infra/local/demo/traffic.ts).

export interface Block {
  slot: bigint;
  shreds: Buffer[];
  /** The transactions' first signatures, base58. */
  signatures: string[];
}

export function makeBlock(slot: bigint, leader: Keypair, payer: Keypair, txs = 20, shredVersion = 0): Block {
  const signatures: string[] = [];
  const list: Buffer[] = [];
  for (let i = 0; i < txs; i++) {
    const tx = signedTransfer(payer, crypto.randomBytes(32), BigInt(1 + i));
    list.push(tx);
    signatures.push(bs58.encode(tx.subarray(1, 65)));
  }
  const batch = shredBatch(encodeEntryBatch([{ numHashes: 12_500n, hash: crypto.randomBytes(32), txs: list }]), {
    slot, parentOffset: 1, shredVersion, fecSetIndexStart: 0, chainedRoot: crypto.randomBytes(32), leaderSeed32: leader.seed, lastInSlot: true,
  });
  return { slot, shreds: batch.shreds, signatures };
}

/** A copy of `shred` with its slot rewritten (its signature no longer matches the root it folds to). */
export function withSlot(shred: Buffer, slot: bigint): Buffer {
  const b = Buffer.from(shred);
  b.writeBigUInt64LE(slot, 0x41);
  return b;
}
