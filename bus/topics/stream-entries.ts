// stream.entries — one record per decoded entry (spec/shreds.md §3; a run of ticks rides in the record of the entry
// after it, below), produced once per entry batch after the batch's stream.transactions records. It carries the entry's header, its transactions' first signatures, and
// every transaction's wire bytes exactly as they sat in the shreds (what v2's TRANSACTION_ENCODING_RAW serves:
// stream.transactions keeps its v1 layout untouched).
//
//   key   = slot u64 BE ‖ batch first shred u32 BE ‖ index in batch u32 BE (16 bytes; unique per entry, sorts by
//           slot; redundant ingest workers publish the same key for the same entry)
//   value:
//   +0   u8    VERSION (1)
//   +1   u8    flags: bit 0 = INDEX_KNOWN (index and starting tx index below are valid)
//   +2   u16   reserved (0)
//   +4   u64   slot (LE)
//   +12  u32   entry index within the slot (LE; entries of the slot before this one), valid with INDEX_KNOWN
//   +16  u32   starting transaction index within the slot (LE; transactions of the slot before this entry), ditto
//   +20  u32   first data shred index of the entry's batch (LE; orders batches within a slot)
//   +24  u32   index of the entry within its batch (LE)
//   +28  u64   num_hashes (LE)
//   +36  [32]  hash
//   +68  f64   observed-at, ms since epoch (LE; first shred of the batch seen by ingest)
//   +76  u32   transaction count T (LE)
//   +80  T×64  each transaction's first signature (its id), in entry order
//   then T × transaction, in entry order:
//        u16  wire length L (LE; ≤ 4096, the largest transaction any version allows)
//        u16  offset K of the static account keys within the wire bytes (LE)
//        u16  static account key count N (LE; the keys are wire[K .. K+32N), what filters match, without decoding)
//        L    the transaction's wire bytes (signatures and message), as a node would accept them
//
//   VERSION 2 only (a record that carries ticks before its entry), after the last transaction:
//   u32   tick count K (LE; ≥ 1)
//   K × tick, in entry order:  u64 num_hashes (LE) ‖ [32] hash
//
// Ticks (entries without transactions) need not cost a record each: a run of ticks goes into the record of the
// entry that follows it in the batch, as VERSION 2 (a run at the batch's end goes into the record of its own last
// tick). The record's fields above are its own (last) entry's; tick i of K sits at index in batch
// `indexInBatch − K + i`, slot-wide index `index.entry − K + i`, starting transaction index `index.firstTx`. A
// record without ticks before it is written as VERSION 1, byte for byte as before; a reader that knows only VERSION
// 1 refuses the records that carry ticks ('unknown version 2') and reads the others (upgrade readers first).
//
// INDEX_KNOWN is set when ingest decoded every batch of the slot before this entry's batch before it published
// this one (batches can complete out of order, and a worker that joins mid-slot never sees the first ones): the
// position (slot, batch first shred, index in batch) is always exact, the slot-wide index only then.

import type { BlockRef } from './block-ref';

export const ENTRY_RECORD_VERSION = 1;
/** A record with ticks before its entry. */
export const ENTRY_RECORD_VERSION_TICKS = 2;
export const ENTRY_FLAG_INDEX_KNOWN = 1;
const SLOT_OFF = 4;
const INDEX_OFF = 12;
const START_TX_OFF = 16;
const BATCH_SHRED_OFF = 20;
const IN_BATCH_OFF = 24;
const NUM_HASHES_OFF = 28;
const HASH_OFF = 36;
const OBSERVED_AT_OFF = 68;
const TX_COUNT_OFF = 76;
export const ENTRY_RECORD_HEADER_SZ = 80;
export const ENTRY_KEY_SZ = 16;
export const ENTRY_HASH_SZ = 32;
const SIGNATURE_SZ = 64;
const PUBKEY_SZ = 32;
const TX_HEAD_SZ = 6;
const TICK_SZ = 8 + ENTRY_HASH_SZ;
const NO_TICKS: readonly EntryTick[] = Object.freeze([]);
/** u16 wire length: v1 transactions are at most 4096 bytes (proto/txn/v1.ts V1_MAX_TX_SZ), legacy/v0 1232. */
const MAX_WIRE_LEN = 0xffff;

export interface EntryTx {
  /** The transaction's wire bytes. */
  wire: Buffer;
  /** Where the static account keys start within `wire`, and how many there are. */
  keysOffset: number;
  keyCount: number;
}

/** An entry without transactions, carried in the record of the entry after it. */
export interface EntryTick {
  numHashes: bigint;
  hash: Buffer;
}

export interface EntryRecord {
  slot: bigint;
  /** Entry index within the slot and the slot-wide index of its first transaction; null when not known. */
  index: { entry: number; firstTx: number } | null;
  batchFirstShred: number;
  indexInBatch: number;
  numHashes: bigint;
  hash: Buffer;
  observedAtMs: number;
  /** T × 64 bytes, contiguous: each transaction's first signature. */
  signatures: Buffer;
  txs: EntryTx[];
  /** The block it belongs to, from the record's `blk` header (block-ref.ts; not part of the value), when read. */
  block?: BlockRef | null;

  /** The ticks just before this entry in its batch, in order (they come before it); empty for most records. */
  ticks: readonly EntryTick[];
}

export function entryKey(slot: bigint, batchFirstShred: number, indexInBatch: number): Buffer {
  const k = Buffer.allocUnsafe(ENTRY_KEY_SZ);
  k.writeBigUInt64BE(slot, 0);
  k.writeUInt32BE(batchFirstShred, 8);
  k.writeUInt32BE(indexInBatch, 12);
  return k;
}

/** What encodeEntryRecord takes: a record, its ticks optional (none: a VERSION 1 record). */
export type EntryRecordInit = Omit<EntryRecord, 'ticks'> & { ticks?: readonly EntryTick[] };

export function encodeEntryRecord(r: EntryRecordInit): Buffer {
  const t = r.txs.length;
  if (r.signatures.length !== t * SIGNATURE_SZ) throw new RangeError(`${r.signatures.length} signature bytes for ${t} transactions`);
  if (r.hash.length !== ENTRY_HASH_SZ) throw new RangeError('entry hash must be 32 bytes');
  let size = ENTRY_RECORD_HEADER_SZ + r.signatures.length;
  for (const x of r.txs) {
    if (x.wire.length > MAX_WIRE_LEN) throw new RangeError(`a ${x.wire.length}-byte transaction does not fit the u16 length`);
    if (x.keysOffset + x.keyCount * PUBKEY_SZ > x.wire.length) throw new RangeError('static keys past the transaction');
    size += TX_HEAD_SZ + x.wire.length;
  }
  const ticks = r.ticks ?? NO_TICKS;
  const k = ticks.length;
  if (k > 0) size += 4 + k * TICK_SZ;
  const out = Buffer.allocUnsafe(size);
  out[0] = k > 0 ? ENTRY_RECORD_VERSION_TICKS : ENTRY_RECORD_VERSION;
  out[1] = r.index === null ? 0 : ENTRY_FLAG_INDEX_KNOWN;
  out.writeUInt16LE(0, 2);
  out.writeBigUInt64LE(r.slot, SLOT_OFF);
  out.writeUInt32LE(r.index?.entry ?? 0, INDEX_OFF);
  out.writeUInt32LE(r.index?.firstTx ?? 0, START_TX_OFF);
  out.writeUInt32LE(r.batchFirstShred, BATCH_SHRED_OFF);
  out.writeUInt32LE(r.indexInBatch, IN_BATCH_OFF);
  out.writeBigUInt64LE(r.numHashes, NUM_HASHES_OFF);
  r.hash.copy(out, HASH_OFF);
  out.writeDoubleLE(r.observedAtMs, OBSERVED_AT_OFF);
  out.writeUInt32LE(t, TX_COUNT_OFF);
  r.signatures.copy(out, ENTRY_RECORD_HEADER_SZ);
  let o = ENTRY_RECORD_HEADER_SZ + r.signatures.length;
  for (const x of r.txs) {
    out.writeUInt16LE(x.wire.length, o);
    out.writeUInt16LE(x.keysOffset, o + 2);
    out.writeUInt16LE(x.keyCount, o + 4);
    x.wire.copy(out, o + TX_HEAD_SZ);
    o += TX_HEAD_SZ + x.wire.length;
  }
  if (k > 0) {
    out.writeUInt32LE(k, o);
    o += 4;
    for (const t of ticks) {
      if (t.hash.length !== ENTRY_HASH_SZ) throw new RangeError('a tick hash must be 32 bytes');
      out.writeBigUInt64LE(t.numHashes, o);
      t.hash.copy(out, o + 8);
      o += TICK_SZ;
    }
  }
  return out;
}

export type EntryRecordDecode = { ok: true; record: EntryRecord } | { ok: false; reason: string };

/** Views into `value`, no copies. Checks every length against the bytes present. */
export function decodeEntryRecord(value: Buffer): EntryRecordDecode {
  if (value.length < ENTRY_RECORD_HEADER_SZ) return { ok: false, reason: 'short header' };
  const version = value[0];
  if (version !== ENTRY_RECORD_VERSION && version !== ENTRY_RECORD_VERSION_TICKS) return { ok: false, reason: `unknown version ${version}` };
  const t = value.readUInt32LE(TX_COUNT_OFF);
  // Each transaction takes at least its signature and its 6-byte head: a count the bytes cannot hold is refused
  // before anything is allocated for it.
  if (t > (value.length - ENTRY_RECORD_HEADER_SZ) / (SIGNATURE_SZ + TX_HEAD_SZ)) return { ok: false, reason: 'transaction count past end' };
  const sigEnd = ENTRY_RECORD_HEADER_SZ + t * SIGNATURE_SZ;
  const txs = new Array<EntryTx>(t);
  let o = sigEnd;
  for (let i = 0; i < t; i++) {
    if (o + TX_HEAD_SZ > value.length) return { ok: false, reason: 'transaction head past end' };
    const len = value.readUInt16LE(o);
    const keysOffset = value.readUInt16LE(o + 2);
    const keyCount = value.readUInt16LE(o + 4);
    o += TX_HEAD_SZ;
    if (o + len > value.length) return { ok: false, reason: 'transaction bytes past end' };
    if (keysOffset + keyCount * PUBKEY_SZ > len) return { ok: false, reason: 'static keys past the transaction' };
    txs[i] = { wire: value.subarray(o, o + len), keysOffset, keyCount };
    o += len;
  }
  let ticks = NO_TICKS;
  if (version === ENTRY_RECORD_VERSION_TICKS) {
    if (o + 4 > value.length) return { ok: false, reason: 'tick count past end' };
    const k = value.readUInt32LE(o);
    o += 4;
    if (k === 0 || k > (value.length - o) / TICK_SZ) return { ok: false, reason: k === 0 ? 'no ticks in a version 2 record' : 'ticks past end' };
    const list = new Array<EntryTick>(k);
    for (let i = 0; i < k; i++, o += TICK_SZ) list[i] = { numHashes: value.readBigUInt64LE(o), hash: value.subarray(o + 8, o + TICK_SZ) };
    ticks = list;
  }
  if (o !== value.length) return { ok: false, reason: version === ENTRY_RECORD_VERSION ? 'bytes after the last transaction' : 'bytes after the last tick' };
  const known = (value[1]! & ENTRY_FLAG_INDEX_KNOWN) !== 0;
  return {
    ok: true,
    record: {
      slot: value.readBigUInt64LE(SLOT_OFF),
      index: known ? { entry: value.readUInt32LE(INDEX_OFF), firstTx: value.readUInt32LE(START_TX_OFF) } : null,
      batchFirstShred: value.readUInt32LE(BATCH_SHRED_OFF),
      indexInBatch: value.readUInt32LE(IN_BATCH_OFF),
      numHashes: value.readBigUInt64LE(NUM_HASHES_OFF),
      hash: value.subarray(HASH_OFF, HASH_OFF + ENTRY_HASH_SZ),
      observedAtMs: value.readDoubleLE(OBSERVED_AT_OFF),
      signatures: value.subarray(ENTRY_RECORD_HEADER_SZ, sigEnd),
      txs,
      ticks,
    },
  };
}

/** The static account keys of one transaction of a decoded record (a view, N × 32 contiguous). */
export function entryTxKeys(x: EntryTx): Buffer {
  return x.wire.subarray(x.keysOffset, x.keysOffset + x.keyCount * PUBKEY_SZ);
}
