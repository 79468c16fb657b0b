// Hand-written protobuf for the v2 stream's updates (proto/stream_v2.proto), framed for gRPC. google-protobuf is
// for clients; the server writes these bytes itself so that a transaction's body is encoded once per bus record
// and shared by every stream it goes to.
//
// Every update leaves the server as one gRPC message laid out so that the part that differs per stream comes
// first and the part shared by every stream comes after it, as whole protobuf fields (a parser accepts fields in
// any order):
//
// (A stream that negotiated gzip or zstd gets its larger updates compressed instead: shared ‖ per stream ‖ seq, the
// shared part compressed once — proto/grpc-compression.ts draws that layout.)
//
//   +0   u8       gRPC compressed flag (0)
//   +1   u32 BE   message length
//   +5   0x09     SubscribeUpdate.seq tag (field 1, fixed64)
//   +6   u64 LE   seq — written by stampSeq when the update is handed to the transport, so dropped updates
//                 never leave a hole
//   +14  per stream: 0x22 filters[] (transaction updates), or the whole body of a control update
//   ...  shared:     0x12 cursor ‖ 0x1a created_at ‖ 0x2a transaction | 0x32 slot | 0x62 entry (encoded once
//                    per record)
//
//   Transaction:  0x08 slot varint, 0x12 signature, 0x1a decoded (arpc SubscribeResponseTransaction bytes from
//                 ingest, unchanged), 0x22 raw, 0x2a loaded, 0x32 observed_at, 0x3a block
//   BlockRef:     0x08 slot, 0x10 parent_slot, 0x1a parent_block_id, 0x20 source, 0x28 batch_first_shred (from the
//                 record's `blk` header, bus/topics/block-ref.ts)
//   LoadedAddresses: 0x0a writable[], 0x12 readonly[], 0x1a unresolved_tables[] (32 bytes each)
//   SlotUpdate:   0x08 slot, 0x10 status, 0x1a observed_at, 0x22 dead_reason, 0x2a block
//   BlockIdentity: 0x0a block_id, 0x10 parent_slot, 0x1a parent_block_id, 0x22 update_parent, 0x2a footer
//   UpdateParentRetraction: 0x08 fec_set_index, 0x12 discarded_signatures[], 0x18 incomplete
//   BlockFooter:  0x0a bank_hash, 0x10 producer_time_nanos, 0x1a user_agent, 0x20..0x38 certificate presence
//   Entry:        0x08 slot, 0x10 index, 0x18 index_known, 0x20 starting_transaction_index, 0x28 num_hashes,
//                 0x32 hash, 0x38 transaction_count, 0x42 signatures[], 0x48 batch_first_shred, 0x50 index_in_batch,
//                 0x5a observed_at, 0x62 block
//   Gap:          0x0a from_cursor, 0x10 reason, 0x18 count, 0x20 first_slot, 0x28 last_slot
//   ReplayComplete 0x08 replayed; Heartbeat 0x08 newest_slot; FilterAck 0x0a id, 0x10 status, 0x1a reason,
//   0x22 reason_code; Pong 0x08 id (int32)
import { stampCompressedSeq } from './grpc-compression';
import { varint64Size, varintSize, writeVarint, writeVarint64 } from './wire';

export const GRPC_PREFIX_SZ = 5;
/** Offset of the seq value in a framed update. */
export const SEQ_OFF = 6;
/** prefix ‖ seq tag ‖ seq */
export const HEAD_SZ = 14;

const SEQ_TAG = 0x09;
const CURSOR_TAG = 0x12;
const CREATED_AT_TAG = 0x1a;
const FILTERS_TAG = 0x22;
const TRANSACTION_TAG = 0x2a;
const SLOT_TAG = 0x32;
const GAP_TAG = 0x3a;
const REPLAY_COMPLETE_TAG = 0x42;
const HEARTBEAT_TAG = 0x4a;
const FILTER_ACK_TAG = 0x52;
const PONG_TAG = 0x5a;
const ENTRY_TAG = 0x62;

export const SlotStatus = { firstShredReceived: 1, completed: 2, processed: 3, confirmed: 4, finalized: 5, dead: 6, decoded: 7 } as const;
export const GapReason = { slowConsumer: 1, retention: 2 } as const;
export const FilterAckStatus = { ok: 0, invalid: 1, limitReached: 2, rateLimited: 3, unknownFilter: 4 } as const;
export type FilterAckStatus = (typeof FilterAckStatus)[keyof typeof FilterAckStatus];

// ---- a small field writer for the parts that are not per record --------------------------------------------

/** Accumulates the fields of one message (sizes first, bytes once). */
class Fields {
  private readonly parts: Array<{ tag: number; kind: 'varint' | 'u64' | 'len' | 'sint'; n: number; big?: bigint; bytes?: Uint8Array }> = [];
  size = 0;

  varint(tag: number, v: number): this {
    if (v === 0) return this;
    this.parts.push({ tag, kind: 'varint', n: v });
    this.size += 1 + varintSize(v);
    return this;
  }

  /** int32: negative values take 10 bytes (sign-extended), as protobuf writes them. */
  int32(tag: number, v: number): this {
    if (v === 0) return this;
    if (v > 0) return this.varint(tag, v);
    const big = BigInt.asUintN(64, BigInt(v));
    this.parts.push({ tag, kind: 'u64', n: 0, big });
    this.size += 1 + varint64Size(big);
    return this;
  }

  u64(tag: number, v: bigint): this {
    if (v === 0n) return this;
    this.parts.push({ tag, kind: 'u64', n: 0, big: v });
    this.size += 1 + varint64Size(v);
    return this;
  }

  bytes(tag: number, b: Uint8Array, keepEmpty = false): this {
    if (b.length === 0 && !keepEmpty) return this;
    this.parts.push({ tag, kind: 'len', n: b.length, bytes: b });
    this.size += 1 + varintSize(b.length) + b.length;
    return this;
  }

  string(tag: number, s: string): this {
    return this.bytes(tag, Buffer.from(s, 'utf8'));
  }

  message(tag: number, f: Fields): this {
    return this.bytes(tag, f.toBuffer(), true);
  }

  writeTo(buf: Buffer, o: number): number {
    for (const p of this.parts) {
      buf[o++] = p.tag;
      if (p.kind === 'varint') o = writeVarint(buf, o, p.n);
      else if (p.kind === 'u64') o = writeVarint64(buf, o, p.big!);
      else {
        o = writeVarint(buf, o, p.n);
        buf.set(p.bytes!, o);
        o += p.n;
      }
    }
    return o;
  }

  toBuffer(): Buffer {
    const buf = Buffer.allocUnsafe(this.size);
    const o = this.writeTo(buf, 0);
    if (o !== this.size) throw new Error(`Fields: wrote ${o}, sized ${this.size}`); // a bug, never data
    return buf;
  }
}

function timestamp(ms: number): Fields {
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.min(999_999_999, Math.round((ms - seconds * 1000) * 1e6));
  return new Fields().int32(0x08, seconds).varint(0x10, nanos);
}

// ---- framing and seq -----------------------------------------------------------------------------------------

/** One framed update: head (seq 0 until stamped) ‖ perStream ‖ shared. One allocation, one copy of each part. */
export function frameUpdate(perStream: Uint8Array, shared: Uint8Array): Buffer {
  const buf = Buffer.allocUnsafe(HEAD_SZ + perStream.length + shared.length);
  writeHead(buf, perStream, shared.length);
  buf.set(shared, HEAD_SZ + perStream.length);
  return buf;
}

/**
 * The first chunk of an update whose shared part is written after it as a chunk of its own (the same bytes as
 * frameUpdate's, without copying `shared` into every stream's message): head (seq 0 until stamped) ‖ perStream.
 */
export function frameHead(perStream: Uint8Array, sharedLen: number): Buffer {
  const buf = Buffer.allocUnsafe(HEAD_SZ + perStream.length);
  writeHead(buf, perStream, sharedLen);
  return buf;
}

function writeHead(buf: Buffer, perStream: Uint8Array, sharedLen: number): void {
  buf[0] = 0;
  buf.writeUInt32BE(HEAD_SZ - GRPC_PREFIX_SZ + perStream.length + sharedLen, 1);
  buf[5] = SEQ_TAG;
  // Zeroed by hand: Buffer.fill's argument checks cost more than 8 stores (it showed in the hub's profile).
  for (let i = SEQ_OFF; i < HEAD_SZ; i++) buf[i] = 0;
  buf.set(perStream, HEAD_SZ);
}

/** Writes seq into a framed update (the transport is about to take it), compressed (flag 1) or not. seq < 2^53. */
export function stampSeq(buf: Buffer, seq: number): void {
  if (buf[0] === 1) return stampCompressedSeq(buf, seq);
  buf.writeUInt32LE(seq % 0x1_0000_0000, SEQ_OFF);
  buf.writeUInt32LE(Math.floor(seq / 0x1_0000_0000), SEQ_OFF + 4);
}

const EMPTY = Buffer.alloc(0);

function control(cursor: Uint8Array | null, createdAtMs: number, tag: number, body: Fields): Buffer {
  const f = new Fields();
  if (cursor !== null) f.bytes(CURSOR_TAG, cursor);
  f.message(CREATED_AT_TAG, timestamp(createdAtMs)).message(tag, body);
  return frameUpdate(EMPTY, f.toBuffer());
}

// ---- the shared parts (once per bus record) ------------------------------------------------------------------

/** A record's block as its `blk` header says (bus/topics/block-ref.ts BlockRef; source 0 = the shred header only). */
export interface BlockRefFields {
  source: number;
  batchFirstShred: number;
  parentSlot: bigint;
  parentBlockId: Uint8Array;
}

/** A BlockRef field; nothing when the record carried no block. */
function blockRef(into: Fields, tag: number, slot: bigint, b: BlockRefFields | null | undefined): void {
  if (b === null || b === undefined) return;
  const f = new Fields().u64(0x08, slot).u64(0x10, b.parentSlot);
  if (b.source !== 0) f.bytes(0x1a, b.parentBlockId);
  into.message(tag, f.varint(0x20, b.source).varint(0x28, b.batchFirstShred));
}

/**
 * The shared part of a transaction update: cursor ‖ created_at ‖ transaction{slot, signature, decoded?, raw?,
 * observed_at}. `decoded` is the SubscribeResponseTransaction bytes ingest encoded (copied, never re-encoded).
 */
export function encodeTxShared(
  cursor: Uint8Array,
  createdAtMs: number,
  tx: { slot: bigint; signature: Uint8Array; decoded: Uint8Array | null; raw: Uint8Array | null; observedAtMs: number; loaded?: Uint8Array | null; block?: BlockRefFields | null },
): Buffer {
  const t = new Fields().u64(0x08, tx.slot).bytes(0x12, tx.signature);
  if (tx.decoded !== null) t.bytes(0x1a, tx.decoded, true);
  if (tx.raw !== null) t.bytes(0x22, tx.raw, true);
  if (tx.loaded !== undefined && tx.loaded !== null) t.bytes(0x2a, tx.loaded, true);
  t.message(0x32, timestamp(tx.observedAtMs));
  blockRef(t, 0x3a, tx.slot, tx.block);
  return new Fields().bytes(CURSOR_TAG, cursor).message(CREATED_AT_TAG, timestamp(createdAtMs)).message(TRANSACTION_TAG, t).toBuffer();
}

/**
 * A `LoadedAddresses` body (the Transaction's field 5, without its tag): 0x0a writable[] ‖ 0x12 readonly[] ‖
 * 0x1a unresolved_tables[], each a 32-byte key, in the chain's load order. Encoded once per record and copied into
 * the shared part of the streams whose matched filters asked for it.
 */
export function encodeLoadedAddresses(l: { writable: readonly Uint8Array[]; readonly: readonly Uint8Array[]; unresolvedTables: readonly Uint8Array[]; block?: Uint8Array; writableCount?: number }): Buffer {
  if (l.block !== undefined && l.writableCount !== undefined) return encodeLoadedBlock(l.block, l.writableCount, l.unresolvedTables);
  // Written directly (no Fields part per key): tens of keys per transaction, on the matching path.
  let size = 0;
  for (const list of [l.writable, l.readonly, l.unresolvedTables]) for (const k of list) size += 1 + varintSize(k.length) + k.length;
  const buf = Buffer.allocUnsafe(size);
  let o = 0;
  const put = (tag: number, list: readonly Uint8Array[]): void => {
    for (const k of list) {
      buf[o++] = tag;
      o = writeVarint(buf, o, k.length);
      buf.set(k, o);
      o += k.length;
    }
  };
  put(0x0a, l.writable);
  put(0x12, l.readonly);
  put(0x1a, l.unresolvedTables);
  return buf;
}

/**
 * encodeLoadedAddresses for loaded keys held in one block (32 bytes each, the first `writableCount` writable, the
 * rest readonly), as the table resolver makes them: the same bytes, without a view per key.
 */
export function encodeLoadedBlock(block: Uint8Array, writableCount: number, unresolvedTables: readonly Uint8Array[]): Buffer {
  const n = block.length >>> 5;
  let size = n * 34; // tag, length 32, key
  for (const k of unresolvedTables) size += 1 + varintSize(k.length) + k.length;
  const buf = Buffer.allocUnsafe(size);
  let o = 0;
  for (let i = 0; i < n; i++) {
    buf[o++] = i < writableCount ? 0x0a : 0x12;
    buf[o++] = 32;
    const from = i * 32;
    for (let j = 0; j < 32; j++) buf[o + j] = block[from + j]!; // no view per key
    o += 32;
  }
  for (const k of unresolvedTables) {
    buf[o++] = 0x1a;
    o = writeVarint(buf, o, k.length);
    buf.set(k, o);
    o += k.length;
  }
  return buf;
}

/** The shared part of a slot update. */
/** An Alpenglow block's identity as stream.slot-status carries it (bus/topics/stream-slot-status.ts extension 1). */
export interface BlockIdentityFields {
  blockId: Uint8Array;
  parentSlot: bigint;
  parentBlockId: Uint8Array;
  updateParentFecSetIndex: number | null;
  footer: { bankHash: Uint8Array; producerTimeNanos: bigint; userAgent: Uint8Array; certs: number };
  /** n × 64 bytes. */
  discarded: Uint8Array;
}

/** FOOTER_CERT bits of ingest/slot-status.ts, and the "list incomplete" bit of the record. */
const CERT_FINAL = 1;
const CERT_FINAL_NOTAR = 2;
const CERT_SKIP_REWARD = 4;
const CERT_NOTAR_REWARD = 8;
const DISCARDED_INCOMPLETE = 0x80;

function blockIdentity(b: BlockIdentityFields): Fields {
  const c = b.footer.certs;
  const footer = new Fields()
    .bytes(0x0a, b.footer.bankHash)
    .u64(0x10, b.footer.producerTimeNanos)
    .bytes(0x1a, b.footer.userAgent)
    .varint(0x20, c & CERT_FINAL ? 1 : 0)
    .varint(0x28, c & CERT_FINAL_NOTAR ? 1 : 0)
    .varint(0x30, c & CERT_SKIP_REWARD ? 1 : 0)
    .varint(0x38, c & CERT_NOTAR_REWARD ? 1 : 0);
  const f = new Fields().bytes(0x0a, b.blockId).u64(0x10, b.parentSlot).bytes(0x1a, b.parentBlockId);
  if (b.updateParentFecSetIndex !== null) {
    const up = new Fields().varint(0x08, b.updateParentFecSetIndex);
    for (let i = 0; i + 64 <= b.discarded.length; i += 64) up.bytes(0x12, b.discarded.subarray(i, i + 64), true);
    up.varint(0x18, c & DISCARDED_INCOMPLETE ? 1 : 0);
    f.message(0x22, up);
  }
  return f.message(0x2a, footer);
}

export function encodeSlotShared(cursor: Uint8Array, createdAtMs: number, slot: bigint, status: number, observedAtMs: number, deadReason = '', block?: BlockIdentityFields): Buffer {
  const s = new Fields().u64(0x08, slot).varint(0x10, status).message(0x1a, timestamp(observedAtMs));
  if (deadReason !== '') s.bytes(0x22, Buffer.from(deadReason, 'utf8'));
  if (block !== undefined) s.message(0x2a, blockIdentity(block));
  return new Fields().bytes(CURSOR_TAG, cursor).message(CREATED_AT_TAG, timestamp(createdAtMs)).message(SLOT_TAG, s).toBuffer();
}

/** The entry fields a shared part carries (bus/topics/stream-entries.ts decodes them). */
export interface EntryFields {
  slot: bigint;
  index: { entry: number; firstTx: number } | null;
  numHashes: bigint;
  hash: Uint8Array;
  /** T × 64 bytes: each transaction's first signature. */
  signatures: Uint8Array;
  batchFirstShred: number;
  indexInBatch: number;
  observedAtMs: number;
  /** The record's block, from its `blk` header (bus/topics/block-ref.ts), when it has one. */
  block?: BlockRefFields | null;
}

/** The shared part of an entry update: cursor ‖ created_at ‖ entry. */
export function encodeEntryShared(cursor: Uint8Array, createdAtMs: number, e: EntryFields): Buffer {
  const n = e.signatures.length / 64;
  const f = new Fields().u64(0x08, e.slot);
  if (e.index !== null) f.varint(0x10, e.index.entry).varint(0x18, 1).varint(0x20, e.index.firstTx);
  f.u64(0x28, e.numHashes).bytes(0x32, e.hash).varint(0x38, n);
  for (let i = 0; i < n; i++) f.bytes(0x42, e.signatures.subarray(i * 64, (i + 1) * 64), true);
  f.varint(0x48, e.batchFirstShred).varint(0x50, e.indexInBatch).message(0x5a, timestamp(e.observedAtMs));
  blockRef(f, 0x62, e.slot, e.block);
  return new Fields().bytes(CURSOR_TAG, cursor).message(CREATED_AT_TAG, timestamp(createdAtMs)).message(ENTRY_TAG, f).toBuffer();
}

/** The per-stream part of a transaction update: the ids of the filters that matched. */
export function encodeFilterIds(ids: readonly string[]): Buffer {
  const f = new Fields();
  for (const id of ids) f.bytes(FILTERS_TAG, Buffer.from(id, 'utf8'), true);
  return f.toBuffer();
}

// ---- control updates (per stream) ------------------------------------------------------------------------------

export function encodeGap(cursor: Uint8Array, createdAtMs: number, g: { fromCursor: Uint8Array; reason: number; count: number; firstSlot: bigint; lastSlot: bigint }): Buffer {
  const body = new Fields().bytes(0x0a, g.fromCursor).varint(0x10, g.reason).varint(0x18, g.count).u64(0x20, g.firstSlot).u64(0x28, g.lastSlot);
  return control(cursor, createdAtMs, GAP_TAG, body);
}

export function encodeReplayComplete(cursor: Uint8Array, createdAtMs: number, replayed: number): Buffer {
  return control(cursor, createdAtMs, REPLAY_COMPLETE_TAG, new Fields().varint(0x08, replayed));
}

export function encodeHeartbeat(cursor: Uint8Array | null, createdAtMs: number, newestSlot: bigint): Buffer {
  return control(cursor, createdAtMs, HEARTBEAT_TAG, new Fields().u64(0x08, newestSlot));
}

export function encodeFilterAck(createdAtMs: number, a: { id: string; status: FilterAckStatus; reason: string; reasonCode: string }): Buffer {
  const body = new Fields().string(0x0a, a.id).varint(0x10, a.status).string(0x1a, a.reason).string(0x22, a.reasonCode);
  return control(null, createdAtMs, FILTER_ACK_TAG, body);
}

export function encodePong(createdAtMs: number, id: number): Buffer {
  return control(null, createdAtMs, PONG_TAG, new Fields().int32(0x08, id));
}
