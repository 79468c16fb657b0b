import crypto from 'node:crypto';
import fs from 'node:fs';
import { encodeBlockMarker, type ParsedMarker } from '../../../ingest/entry/block-component';
import { encodeEntryBatch } from '../../../ingest/entry/entries';
import { shredBatch } from '../../../ingest/shred/shredder';
import { fixture } from '../../support/paths';

// Alpenglow blocks for tests: each component (marker or entry batch) shredded into FEC sets of its own, as Agave's
// broadcast does, the sets chained, the last component flagged LAST_IN_SLOT.

export const LEADER_SEED = crypto.createHash('sha256').update('meridian alpenglow test leader').digest();

export interface ShreddedBlock {
  shreds: Buffer[];
  /** Every FEC set's Merkle root, in order (the block id's leaves). */
  roots: Buffer[];
  /** Each component's first data shred index. */
  starts: number[];
}

export function shredBlock(slot: bigint, parentOffset: number, components: Buffer[], chainedRoot = Buffer.alloc(32, 9)): ShreddedBlock {
  const shreds: Buffer[] = [];
  const roots: Buffer[] = [];
  const starts: number[] = [];
  let fec = 0;
  let chained: Buffer = chainedRoot;
  components.forEach((c, i) => {
    starts.push(fec);
    const b = shredBatch(c, { slot, parentOffset, shredVersion: 0, fecSetIndexStart: fec, chainedRoot: chained, leaderSeed32: LEADER_SEED, lastInSlot: i === components.length - 1 });
    shreds.push(...b.shreds);
    roots.push(...b.merkleRoots);
    chained = b.merkleRoots[b.merkleRoots.length - 1]!;
    fec = b.nextFecSetIndex;
  });
  return { shreds, roots, starts };
}

export const header = (parentSlot: bigint, parentBlockId = Buffer.alloc(32, 0xa1)): Buffer =>
  encodeBlockMarker({ kind: 'header', byteLen: 0, parentSlot, parentBlockId });
export const updateParent = (parentSlot: bigint, parentBlockId = Buffer.alloc(32, 0xb2)): Buffer =>
  encodeBlockMarker({ kind: 'update_parent', byteLen: 0, parentSlot, parentBlockId });
export const FOOTER: Extract<ParsedMarker, { kind: 'footer' }> = {
  kind: 'footer',
  byteLen: 0,
  bankHash: Buffer.alloc(32, 0xc3),
  producerTimeNanos: 1_792_540_800_123_456_789n,
  userAgent: Buffer.from('meridian-test/1'),
  finalCert: null,
  skipRewardCert: null,
  notarRewardCert: null,
};
export const footer = (): Buffer => encodeBlockMarker(FOOTER);
export const alpentick = (): Buffer => encodeEntryBatch([{ numHashes: 1n, hash: Buffer.alloc(32, 0xee), txs: [] }]);

const TXS = ['disco_pack_txn1.bin', 'disco_pack_txn2.bin', 'disco_pack_txn3.bin', 'disco_pack_txn4.bin', 'disco_pack_txn5.bin', 'disco_pack_txn6.bin', 'disco_pack_txn7.bin'];
/** Real mainnet transactions from the fixtures (wire bytes). */
export const fixtureTxs = (): Buffer[] => TXS.map((n) => fs.readFileSync(fixture('txns', n)));

/** An entry batch of one entry holding `txs`, then a tick. */
export const txBatch = (txs: Buffer[], salt = 0): Buffer =>
  encodeEntryBatch([
    { numHashes: 100n + BigInt(salt), hash: crypto.createHash('sha256').update(`e${salt}`).digest(), txs },
    { numHashes: 12_500n, hash: crypto.createHash('sha256').update(`t${salt}`).digest(), txs: [] },
  ]);
