import crypto from 'node:crypto';
import { sign, type Keypair } from '../keys';

// Real, signed legacy System Program transfers for demo traffic. Each one differs (amount, blockhash), so
// signatures are unique and the fanout's duplicate filter lets them through.
//
//   signatures: compact-u16 count (1) | sig[64]
//   message:    header (1, 0, 1) | compact-u16 3 | payer | recipient | system program | blockhash[32]
//               | compact-u16 1 | { program 2, compact-u16 2, [0, 1], compact-u16 12, u32 2 (Transfer), u64 lamports }

export const SYSTEM_PROGRAM = Buffer.alloc(32);
const TRANSFER = 2;

export function transferMessage(payer: Buffer, recipient: Buffer, lamports: bigint, blockhash: Buffer): Buffer {
  const data = Buffer.alloc(12);
  data.writeUInt32LE(TRANSFER, 0);
  data.writeBigUInt64LE(lamports, 4);
  return Buffer.concat([
    Buffer.from([1, 0, 1, 3]),
    payer,
    recipient,
    SYSTEM_PROGRAM,
    blockhash,
    Buffer.from([1, 2, 2, 0, 1, data.length]),
    data,
  ]);
}

export function signedTransfer(payer: Keypair, recipient: Buffer, lamports: bigint, blockhash: Buffer = crypto.randomBytes(32)): Buffer {
  const message = transferMessage(payer.publicKey, recipient, lamports, blockhash);
  return Buffer.concat([Buffer.from([1]), sign(payer, message), message]);
}

/** bincode Vec<Entry>: u64 count, then per entry num_hashes u64 | hash[32] | u64 tx count | txs. */
export function entriesBincode(entries: Array<{ numHashes: bigint; hash: Buffer; txs: Buffer[] }>): Buffer {
  const parts: Buffer[] = [];
  const count = Buffer.alloc(8);
  count.writeBigUInt64LE(BigInt(entries.length));
  parts.push(count);
  for (const e of entries) {
    const head = Buffer.alloc(48);
    head.writeBigUInt64LE(e.numHashes, 0);
    e.hash.copy(head, 8);
    head.writeBigUInt64LE(BigInt(e.txs.length), 40);
    parts.push(head, ...e.txs);
  }
  return Buffer.concat(parts);
}
