import { readTransaction, type DecodedTxn } from '../../proto/txn/decode';
import type { TxnReason } from '../../proto/txn/reasons';
import { parseBlockMarker, type MarkerReason, type ParsedMarker } from './block-component';

// An entry batch is bincode Vec<Entry> (spec/shreds.md §3):
//
//   +0   u64  count
//   then count × Entry:
//        u64  num_hashes
//        [32] hash
//        u64  tx count
//        txs  serialized transactions, back to back, NOT length-prefixed (decode one to learn its length)
//   then zero padding (real producers pad; a testnet block carried ~25 KB of zeros)
//
// count = 0 is an empty batch (all zeros after it), or (Alpenglow) a block marker, read strictly as Agave's crate
// reads it (block-component.ts): bytes after the marker are left unread, as Agave leaves them. Whether an empty
// batch is allowed depends on the block's format (block-rules.ts). Counts are checked against the bytes left
// before anything is read or allocated.
//
// Transactions of all three live versions sit back to back (Agave's Entry: Vec<VersionedTransaction>, each in the
// SDK's wincode form: legacy/v0 signatures first, v1 message first; proto/txn/decode.ts tells them apart by their
// first byte). A transaction whose first byte names a version we do not know ends the batch: its length is
// unknowable. What was decoded before it (whole entries, and the transactions of the entry it sits in) is kept.

export const COUNT_SZ = 8;
const NUM_HASHES_SZ = 8;
export const HASH_SZ = 32;
const TX_COUNT_SZ = 8;
const ENTRY_HEAD_SZ = NUM_HASHES_SZ + HASH_SZ + TX_COUNT_SZ; // 48
/** 1 sig (compact-u16 + 64) + header 3 + 1 key (1 + 32) + blockhash 32 + 0 instructions (1): the smallest valid tx. */
export const MIN_TX_SZ = 134;

export const ENTRY_REASONS = {
  truncated: 'the batch ends inside an entry header',
  bad_entry_count: 'entry count larger than the bytes can hold',
  bad_tx_count: 'transaction count larger than the bytes can hold',
  bad_transaction: 'a transaction failed to decode (its length, and so the rest of the batch, is unknown)',
  unknown_tx_version: 'a transaction of a version this decoder does not know (its length, and so the rest of the batch, is unknown)',
  bad_marker: 'a block marker Agave refuses (markerReason says why)',
  trailing_garbage: 'non-zero bytes after the last entry',
} as const;
export type EntryReason = keyof typeof ENTRY_REASONS;

export interface Entry {
  numHashes: bigint;
  /** View into the batch payload. */
  hash: Buffer;
  txs: DecodedTxn[];
  /** Each transaction's wire bytes (views into the batch payload), parallel to `txs`: stream.entries carries them. */
  wires: Buffer[];
}

export type BatchDecode =
  | { ok: true; entries: Entry[]; consumed: number; trailingZeros: number; marker: ParsedMarker | null }
  /**
   * `entries` = the entries decoded completely before the failure, `partial` = the transactions decoded before
   * it in the entry it stopped in (both still worth publishing). `unknownVersion`: the version number when the
   * reason is 'unknown_tx_version'.
   */
  | { ok: false; reason: EntryReason; txReason?: TxnReason; markerReason?: MarkerReason; unknownVersion?: number; at: number; entries: Entry[]; partial: DecodedTxn[] };

const NO_TXS: DecodedTxn[] = [];

/** Reads a u64 that must fit below 2^32 (counts); -1 when it does not. */
function smallU64(b: Buffer, off: number): number {
  return b.readUInt32LE(off + 4) === 0 ? b.readUInt32LE(off) : -1;
}

function allZero(b: Buffer, from: number): boolean {
  for (let i = from; i < b.length; i++) if (b[i] !== 0) return false;
  return true;
}

export function decodeEntryBatch(payload: Buffer, slot: bigint): BatchDecode {
  const entries: Entry[] = [];
  const partial = NO_TXS;
  if (payload.length < COUNT_SZ) return { ok: false, reason: 'truncated', at: 0, entries, partial };
  const count = smallU64(payload, 0);
  if (count < 0 || count > (payload.length - COUNT_SZ) / ENTRY_HEAD_SZ) return { ok: false, reason: 'bad_entry_count', at: 0, entries, partial };
  let off = COUNT_SZ;
  if (count === 0 && !allZero(payload, off)) {
    const m = parseBlockMarker(payload);
    if (!m.ok) return { ok: false, reason: 'bad_marker', markerReason: m.reason, at: m.at, entries, partial };
    return { ok: true, entries, consumed: m.consumed, trailingZeros: 0, marker: m.marker };
  }
  for (let e = 0; e < count; e++) {
    if (payload.length - off < ENTRY_HEAD_SZ) return { ok: false, reason: 'truncated', at: off, entries, partial };
    const numHashes = payload.readBigUInt64LE(off);
    const hash = payload.subarray(off + NUM_HASHES_SZ, off + NUM_HASHES_SZ + HASH_SZ);
    const txCount = smallU64(payload, off + NUM_HASHES_SZ + HASH_SZ);
    off += ENTRY_HEAD_SZ;
    if (txCount < 0 || txCount > (payload.length - off) / MIN_TX_SZ) return { ok: false, reason: 'bad_tx_count', at: off - TX_COUNT_SZ, entries, partial };
    const txs = new Array<DecodedTxn>(txCount);
    const wires = new Array<Buffer>(txCount);
    for (let t = 0; t < txCount; t++) {
      const r = readTransaction(payload, off, slot);
      if (!r.ok) {
        const before = txs.slice(0, t);
        if (r.version !== undefined) {
          return { ok: false, reason: 'unknown_tx_version', txReason: r.reason, unknownVersion: r.version, at: off, entries, partial: before };
        }
        return { ok: false, reason: 'bad_transaction', txReason: r.reason, at: off, entries, partial: before };
      }
      txs[t] = r;
      wires[t] = payload.subarray(off, off + r.wireLen);
      off += r.wireLen;
    }
    entries.push({ numHashes, hash, txs, wires });
  }
  if (!allZero(payload, off)) return { ok: false, reason: 'trailing_garbage', at: off, entries, partial };
  return { ok: true, entries, consumed: off, trailingZeros: payload.length - off, marker: null };
}

/** The encoder of the pair: bincode Vec<Entry> from raw transaction bytes (tests, bench, shredder input). */
export function encodeEntryBatch(entries: Array<{ numHashes: bigint; hash: Buffer; txs: Buffer[] }>): Buffer {
  const parts: Buffer[] = [];
  const count = Buffer.alloc(COUNT_SZ);
  count.writeBigUInt64LE(BigInt(entries.length));
  parts.push(count);
  for (const e of entries) {
    if (e.hash.length !== HASH_SZ) throw new RangeError('entry hash must be 32 bytes');
    const head = Buffer.alloc(ENTRY_HEAD_SZ);
    head.writeBigUInt64LE(e.numHashes, 0);
    e.hash.copy(head, NUM_HASHES_SZ);
    head.writeBigUInt64LE(BigInt(e.txs.length), NUM_HASHES_SZ + HASH_SZ);
    parts.push(head, ...e.txs);
  }
  return Buffer.concat(parts);
}
