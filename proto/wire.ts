// Hand-written protobuf for the v1 stream's hot path: no google-protobuf here. Every encoder computes the
// exact size first, allocates once and writes once; the output is byte-identical to google-protobuf's
// serializeBinary for the same values (test/proto/roundtrip.test.ts holds it to that).
//
// Wire format (proto/arpc.proto). A field is  tag ‖ payload,  tag = varint(field_number << 3 | wire_type).
// Every field number here is < 16, so every tag is one byte (the *_TAG constants below).
//
//   SubscribeResponseTransaction                       proto3 defaults are omitted, like google-protobuf:
//     0x08 slot                       varint (u64)       0 → absent
//     0x10 num_required_signatures    varint (u32)       0 → absent
//     0x18 num_readonly_signed        varint (u32)       0 → absent
//     0x20 num_readonly_unsigned      varint (u32)       0 → absent
//     0x2a recent_blockhash           len ‖ bytes        empty → absent
//     0x32 signatures[]               len ‖ bytes        one field per element, empty elements kept
//     0x3a account_keys[]             len ‖ bytes        one field per element, empty elements kept
//     0x42 instructions[]             len ‖ CompiledInstruction
//     0x4a address_table_lookups[]    len ‖ MessageAddressTableLookup
//     0x52 versioned                  len ‖ BoolValue    undefined → absent; false → 52 00; true → 52 02 08 01
//   CompiledInstruction:        0x08 program_id_index varint, 0x12 accounts bytes, 0x1a data bytes (defaults omitted)
//   MessageAddressTableLookup:  0x0a account_key, 0x12 writable_indexes, 0x1a readonly_indexes (bytes, empty omitted)
//
//   SubscribeResponse (fields in number order, as google-protobuf writes them)
//     0x0a created_at   len ‖ Timestamp { 0x08 seconds varint(i64), 0x10 nanos varint(i32) } (zeros omitted)
//     0x12 filters[]    len ‖ UTF-8
//     0x1a transaction  len ‖ SubscribeResponseTransaction   (optional: present even when empty)
//     0x20 ping_id      varint (i32, negative → 10 bytes)     (optional: present even when 0)
//     0x28 new_slot     varint (u64)                          (optional: present even when 0)
//
//   SubscribeRequest (decoded by the generated class; checkSubscribeRequest vets the bytes first)
//     0x0a transactions map entry  len ‖ { 0x0a key string, 0x12 value SubscribeRequestFilterTransactions }
//     0x10 ping_id varint (i32), 0x18 new_seen_slots varint (bool)
//   SubscribeRequestFilterTransactions: 0x12 account_include[], 0x1a account_exclude[], 0x22 account_required[]
import { isUtf8 } from 'node:buffer';
import { WireInstruction, type InstructionFields, type TxFields } from './tx-fields';

const WT_VARINT = 0;
const WT_I64 = 1;
const WT_LEN = 2;
const WT_I32 = 5;

const TX_SLOT_TAG = 0x08;
const TX_NUM_REQUIRED_SIGS_TAG = 0x10;
const TX_NUM_RO_SIGNED_TAG = 0x18;
const TX_NUM_RO_UNSIGNED_TAG = 0x20;
const TX_BLOCKHASH_TAG = 0x2a;
const TX_SIGNATURE_TAG = 0x32;
const TX_ACCOUNT_KEY_TAG = 0x3a;
const TX_INSTRUCTION_TAG = 0x42;
const TX_LOOKUP_TAG = 0x4a;
const TX_VERSIONED_TAG = 0x52;
const IX_PROGRAM_ID_TAG = 0x08;
const IX_ACCOUNTS_TAG = 0x12;
const IX_DATA_TAG = 0x1a;
const LUT_ACCOUNT_KEY_TAG = 0x0a;
const LUT_WRITABLE_TAG = 0x12;
const LUT_READONLY_TAG = 0x1a;
const BOOL_VALUE_TAG = 0x08;
const RESP_CREATED_AT_TAG = 0x0a;
const RESP_FILTER_TAG = 0x12;
const RESP_TRANSACTION_TAG = 0x1a;
const RESP_PING_ID_TAG = 0x20;
const RESP_NEW_SLOT_TAG = 0x28;
const TS_SECONDS_TAG = 0x08;
const TS_NANOS_TAG = 0x10;

/** BoolValue{value:false} is an empty message (its only field is at its default), so only tag ‖ len 0 remain. */
const VERSIONED_FALSE_SZ = 2;
/** tag ‖ len 2 ‖ 0x08 0x01 */
const VERSIONED_TRUE_SZ = 4;
/** A negative int32/int64 is sign-extended to 64 bits: always 10 varint bytes. */
const NEGATIVE_VARINT_SZ = 10;
const U64_MAX = (1n << 64n) - 1n;
const MAX_SAFE_BIG = BigInt(Number.MAX_SAFE_INTEGER);

// ---- varints ---------------------------------------------------------------------------------------------

/** Size of a varint for a non-negative integer ≤ 2^53 − 1. */
export function varintSize(v: number): number {
  if (v < 0x80) return 1;
  if (v < 0x4000) return 2;
  if (v < 0x200000) return 3;
  if (v < 0x10000000) return 4;
  let n = 5;
  v = Math.floor(v / 0x800000000);
  while (v > 0) {
    n++;
    v = Math.floor(v / 0x80);
  }
  return n;
}

/** Writes a varint for a non-negative integer ≤ 2^53 − 1; returns the offset after it. */
export function writeVarint(buf: Buffer, o: number, v: number): number {
  while (v >= 0x80) {
    buf[o++] = (v & 0x7f) | 0x80; // `&` takes the value mod 2^32 exactly, so the low 7 bits are right for any safe integer
    v = Math.floor(v / 0x80);
  }
  buf[o++] = v;
  return o;
}

export function varint64Size(v: bigint): number {
  if (v <= MAX_SAFE_BIG) return varintSize(Number(v));
  let n = 1;
  while (v >= 0x80n) {
    n++;
    v >>= 7n;
  }
  return n;
}

export function writeVarint64(buf: Buffer, o: number, v: bigint): number {
  if (v <= MAX_SAFE_BIG) return writeVarint(buf, o, Number(v));
  while (v >= 0x80n) {
    buf[o++] = Number(v & 0x7fn) | 0x80;
    v >>= 7n;
  }
  buf[o++] = Number(v);
  return o;
}

/** int32/int64 field encoding of a safe integer: negative values become their 64-bit two's complement. */
function signedVarintSize(v: number): number {
  return v < 0 ? NEGATIVE_VARINT_SZ : varintSize(v);
}

function writeSignedVarint(buf: Buffer, o: number, v: number): number {
  return v < 0 ? writeVarint64(buf, o, BigInt.asUintN(64, BigInt(v))) : writeVarint(buf, o, v);
}

function checkU64(v: bigint, what: string): void {
  if (v < 0n || v > U64_MAX) throw new RangeError(`${what} ${v} is outside uint64`);
}

/** One-byte tag ‖ varint length ‖ n bytes. */
function lenFieldSize(n: number): number {
  return 1 + varintSize(n) + n;
}

function writeBytesField(buf: Buffer, o: number, tag: number, bytes: Uint8Array): number {
  buf[o++] = tag;
  o = writeVarint(buf, o, bytes.length);
  buf.set(bytes, o);
  return o + bytes.length;
}

// ---- SubscribeResponseTransaction ------------------------------------------------------------------------

function u32FieldSize(v: number): number {
  return v === 0 ? 0 : 1 + varintSize(v);
}

function bytesFieldSize(b: Uint8Array): number {
  return b.length === 0 ? 0 : lenFieldSize(b.length);
}

function lenSize(n: number): number {
  return n === 0 ? 0 : lenFieldSize(n);
}

/** An instruction's data length, without making a view of a decoded one. */
function dataLength(ix: InstructionFields): number {
  return ix instanceof WireInstruction ? ix.dataLength : ix.data.length;
}

function instructionSize(ix: InstructionFields): number {
  const accounts = ix instanceof WireInstruction ? ix.accountsLength : ix.accounts.length;
  return u32FieldSize(ix.programIdIndex) + lenSize(accounts) + lenSize(dataLength(ix));
}

/** Up to this many bytes are copied by a loop; more by a native copy through a typed array over the range
 *  (measured alone in Node 20: ~28 ns whatever the length, against ~2.3 ns a byte for the loop; they cross near 12). */
const LOOP_COPY_MAX = 12;

/** writeOptBytesField of src[off, off + n) (a decoded instruction's range: no Buffer view made). */
function writeOptRange(buf: Buffer, o: number, tag: number, src: Uint8Array, off: number, n: number): number {
  if (n === 0) return o;
  buf[o++] = tag;
  o = writeVarint(buf, o, n);
  if (n <= LOOP_COPY_MAX) for (let i = 0; i < n; i++) buf[o + i] = src[off + i]!;
  else buf.set(new Uint8Array(src.buffer, src.byteOffset + off, n), o);
  return o + n;
}

function lookupSize(l: TxFields['addressTableLookups'][number]): number {
  return bytesFieldSize(l.accountKey) + bytesFieldSize(l.writableIndexes) + bytesFieldSize(l.readonlyIndexes);
}

function writeU32Field(buf: Buffer, o: number, tag: number, v: number): number {
  if (v === 0) return o;
  buf[o++] = tag;
  return writeVarint(buf, o, v);
}

function writeOptBytesField(buf: Buffer, o: number, tag: number, b: Uint8Array): number {
  return b.length === 0 ? o : writeBytesField(buf, o, tag, b);
}

/** Exact encoded size of the SubscribeResponseTransaction message for tx. */
export function transactionSize(tx: TxFields): number {
  let n = tx.slot === 0n ? 0 : 1 + varint64Size(tx.slot);
  n += u32FieldSize(tx.numRequiredSignatures);
  n += u32FieldSize(tx.numReadonlySignedAccounts);
  n += u32FieldSize(tx.numReadonlyUnsignedAccounts);
  n += bytesFieldSize(tx.recentBlockhash);
  for (const s of tx.signatures) n += lenFieldSize(s.length);
  for (const k of tx.accountKeys) n += lenFieldSize(k.length);
  for (const ix of tx.instructions) n += lenFieldSize(instructionSize(ix));
  for (const l of tx.addressTableLookups) n += lenFieldSize(lookupSize(l));
  if (tx.versioned !== undefined) n += tx.versioned ? VERSIONED_TRUE_SZ : VERSIONED_FALSE_SZ;
  return n;
}

/**
 * The SubscribeResponseTransaction message bytes, encoded once in ingest and shared by every subscriber.
 * Preconditions (the decoder's output satisfies them): slot in [0, 2^64); the three counts and every
 * programIdIndex are integers in [0, 2^32).
 */
export function encodeTransaction(tx: TxFields): Buffer {
  const size = transactionSize(tx);
  const buf = Buffer.allocUnsafe(size);
  encodeTransactionInto(buf, 0, tx, size);
  return buf;
}

/**
 * encodeTransaction's bytes written at `at` in `buf` (`size` = transactionSize(tx), which the caller has already
 * made room for): ingest writes the message straight into its stream.transactions record, one allocation and no
 * copy per transaction. `positions`, when given (at least 1 + instructions long), receives where things were
 * written, relative to `at`: [0] the first signature's bytes when it is 64 bytes long (else -1), [1 + i]
 * instruction i's data (an empty data field writes nothing: the instruction's end) — the record's `facts` header.
 */
export function encodeTransactionInto(buf: Buffer, at: number, tx: TxFields, size: number, positions?: Int32Array): void {
  checkU64(tx.slot, 'slot');
  let o = at;
  if (tx.slot !== 0n) {
    buf[o++] = TX_SLOT_TAG;
    o = writeVarint64(buf, o, tx.slot);
  }
  o = writeU32Field(buf, o, TX_NUM_REQUIRED_SIGS_TAG, tx.numRequiredSignatures);
  o = writeU32Field(buf, o, TX_NUM_RO_SIGNED_TAG, tx.numReadonlySignedAccounts);
  o = writeU32Field(buf, o, TX_NUM_RO_UNSIGNED_TAG, tx.numReadonlyUnsignedAccounts);
  o = writeOptBytesField(buf, o, TX_BLOCKHASH_TAG, tx.recentBlockhash);
  if (positions !== undefined) positions[0] = tx.signatures.length > 0 && tx.signatures[0]!.length === 64 ? o - at + 2 : -1; // tag, length 64
  for (const s of tx.signatures) o = writeBytesField(buf, o, TX_SIGNATURE_TAG, s);
  for (const k of tx.accountKeys) o = writeBytesField(buf, o, TX_ACCOUNT_KEY_TAG, k);
  const ixs = tx.instructions;
  for (let i = 0; i < ixs.length; i++) {
    const ix = ixs[i]!;
    buf[o++] = TX_INSTRUCTION_TAG;
    o = writeVarint(buf, o, instructionSize(ix));
    o = writeU32Field(buf, o, IX_PROGRAM_ID_TAG, ix.programIdIndex);
    if (ix instanceof WireInstruction) {
      o = writeOptRange(buf, o, IX_ACCOUNTS_TAG, ix.bytes, ix.accountsOff, ix.accountsLength);
      o = writeOptRange(buf, o, IX_DATA_TAG, ix.bytes, ix.dataOff, ix.dataLength);
    } else {
      o = writeOptBytesField(buf, o, IX_ACCOUNTS_TAG, ix.accounts);
      o = writeOptBytesField(buf, o, IX_DATA_TAG, ix.data);
    }
    if (positions !== undefined) positions[1 + i] = o - at - dataLength(ix);
  }
  for (const l of tx.addressTableLookups) {
    buf[o++] = TX_LOOKUP_TAG;
    o = writeVarint(buf, o, lookupSize(l));
    o = writeOptBytesField(buf, o, LUT_ACCOUNT_KEY_TAG, l.accountKey);
    o = writeOptBytesField(buf, o, LUT_WRITABLE_TAG, l.writableIndexes);
    o = writeOptBytesField(buf, o, LUT_READONLY_TAG, l.readonlyIndexes);
  }
  if (tx.versioned !== undefined) {
    buf[o++] = TX_VERSIONED_TAG;
    if (tx.versioned) {
      buf[o++] = 2;
      buf[o++] = BOOL_VALUE_TAG;
      buf[o++] = 1;
    } else {
      buf[o++] = 0;
    }
  }
  if (o !== at + size) throw new Error(`encodeTransaction: wrote ${o - at} bytes, sized ${size}`); // a bug, never data
}

// ---- SubscribeResponse framing ---------------------------------------------------------------------------

/** Splits epoch milliseconds (fractions allowed) into Timestamp seconds and nanos (0 ≤ nanos < 1e9). */
function splitMs(ms: number): { seconds: number; nanos: number } {
  if (!Number.isFinite(ms)) throw new RangeError(`created_at ${ms} is not a finite number`);
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.min(999_999_999, Math.round((ms - seconds * 1000) * 1e6));
  return { seconds, nanos };
}

function timestampSize(seconds: number, nanos: number): number {
  return (seconds === 0 ? 0 : 1 + signedVarintSize(seconds)) + (nanos === 0 ? 0 : 1 + varintSize(nanos));
}

/** Size of the created_at field (tag ‖ len ‖ Timestamp) for epoch milliseconds. */
export function timestampFieldSize(createdAtMs: number): number {
  const { seconds, nanos } = splitMs(createdAtMs);
  return 2 + timestampSize(seconds, nanos); // a Timestamp is at most 17 bytes, so its length is one byte
}

/** Writes the created_at field (SubscribeResponse field 1) at o; returns the offset after it. */
export function writeTimestamp(buf: Buffer, o: number, createdAtMs: number): number {
  const { seconds, nanos } = splitMs(createdAtMs);
  buf[o++] = RESP_CREATED_AT_TAG;
  buf[o++] = timestampSize(seconds, nanos);
  if (seconds !== 0) {
    buf[o++] = TS_SECONDS_TAG;
    o = writeSignedVarint(buf, o, seconds);
  }
  if (nanos !== 0) {
    buf[o++] = TS_NANOS_TAG;
    o = writeVarint(buf, o, nanos);
  }
  return o;
}

/**
 * One filter name as a complete `filters` field (SubscribeResponse field 2). Precompute this per filter when a
 * subscriber's filter map changes; per transaction, pass the matched names' fields to encodeTxResponse.
 */
export function encodeFilterName(name: string): Buffer {
  const n = Buffer.byteLength(name, 'utf8');
  const buf = Buffer.allocUnsafe(lenFieldSize(n));
  let o = 0;
  buf[o++] = RESP_FILTER_TAG;
  o = writeVarint(buf, o, n);
  buf.write(name, o, 'utf8');
  return buf;
}

/** Several names' `filters` fields, concatenated in order. */
export function encodeFilterNames(names: readonly string[]): Buffer {
  return Buffer.concat(names.map(encodeFilterName));
}

/**
 * One transaction response for one subscriber: created_at ‖ filters ‖ field-3 header ‖ txMessage, one
 * allocation and one copy of each part. filterFields are encodeFilterName outputs (or one concatenation);
 * txMessage is the shared encodeTransaction output. `headroom` bytes are left unwritten at the front (for the
 * transport's framing, so the response need not be copied again to get it).
 */
export function encodeTxResponse(createdAtMs: number, filterFields: readonly Buffer[] | Buffer, txMessage: Uint8Array, headroom = 0): Buffer {
  let filtersLen = 0;
  if (Buffer.isBuffer(filterFields)) filtersLen = filterFields.length;
  else for (const f of filterFields) filtersLen += f.length;
  const size = headroom + timestampFieldSize(createdAtMs) + filtersLen + lenFieldSize(txMessage.length);
  const buf = Buffer.allocUnsafe(size);
  let o = writeTimestamp(buf, headroom, createdAtMs);
  if (Buffer.isBuffer(filterFields)) {
    buf.set(filterFields, o);
    o += filterFields.length;
  } else {
    for (const f of filterFields) {
      buf.set(f, o);
      o += f.length;
    }
  }
  o = writeBytesField(buf, o, RESP_TRANSACTION_TAG, txMessage);
  if (o !== size) throw new Error(`encodeTxResponse: wrote ${o} bytes, sized ${size}`);
  return buf;
}

/** A ping response: ping_id only (present even when 0, so pingId 0 is the heartbeat). No created_at. */
export function encodePingResponse(pingId: number): Buffer {
  if (!Number.isInteger(pingId) || pingId < -0x80000000 || pingId > 0x7fffffff) throw new RangeError(`ping_id ${pingId} is not an int32`);
  const buf = Buffer.allocUnsafe(1 + signedVarintSize(pingId));
  buf[0] = RESP_PING_ID_TAG;
  writeSignedVarint(buf, 1, pingId);
  return buf;
}

/** A slot response: created_at ‖ new_slot (present even when 0). */
export function encodeSlotResponse(slot: bigint, createdAtMs: number): Buffer {
  checkU64(slot, 'new_slot');
  const size = timestampFieldSize(createdAtMs) + 1 + varint64Size(slot);
  const buf = Buffer.allocUnsafe(size);
  let o = writeTimestamp(buf, 0, createdAtMs);
  buf[o++] = RESP_NEW_SLOT_TAG;
  o = writeVarint64(buf, o, slot);
  if (o !== size) throw new Error(`encodeSlotResponse: wrote ${o} bytes, sized ${size}`);
  return buf;
}

// ---- SubscribeRequest vetting ----------------------------------------------------------------------------

/** Malformed request bytes. The message says what and where; it never echoes the bytes. */
export class WireError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WireError';
  }
}

/** Field number → the only wire type accepted for it; unknown fields are skipped by their wire type. */
type Schema = Readonly<Record<number, { wt: number; check?: (b: Uint8Array, start: number, end: number, what: string) => void }>>;

function checkUtf8(b: Uint8Array, start: number, end: number, what: string): void {
  if (!isUtf8(b.subarray(start, end))) throw new WireError(`${what}: invalid UTF-8`);
}

const FILTER_SCHEMA: Schema = {
  2: { wt: WT_LEN, check: checkUtf8 }, // account_include
  3: { wt: WT_LEN, check: checkUtf8 }, // account_exclude
  4: { wt: WT_LEN, check: checkUtf8 }, // account_required
};
const MAP_ENTRY_SCHEMA: Schema = {
  1: { wt: WT_LEN, check: checkUtf8 }, // key: the filter name
  2: { wt: WT_LEN, check: (b, s, e, what) => checkMessage(b, s, e, FILTER_SCHEMA, what) },
};
const REQUEST_SCHEMA: Schema = {
  1: { wt: WT_LEN, check: (b, s, e, what) => checkMessage(b, s, e, MAP_ENTRY_SCHEMA, what) }, // transactions
  2: { wt: WT_VARINT }, // ping_id
  3: { wt: WT_VARINT }, // new_seen_slots
};

/** Reads a varint of at most 10 bytes ending before end; returns [value (exact up to 2^53), offset after]. */
function readVarint(b: Uint8Array, o: number, end: number, what: string): [number, number] {
  let v = 0;
  for (let i = 0; i < 10; i++) {
    if (o >= end) throw new WireError(`${what}: truncated varint`);
    const byte = b[o++]!;
    v += (byte & 0x7f) * 2 ** (7 * i);
    if (byte < 0x80) return [v, o];
  }
  throw new WireError(`${what}: varint longer than 10 bytes`);
}

function checkMessage(b: Uint8Array, o: number, end: number, schema: Schema, what: string): void {
  while (o < end) {
    let tag: number;
    [tag, o] = readVarint(b, o, end, what);
    if (tag > 0xffffffff) throw new WireError(`${what}: tag out of range`);
    const field = tag >>> 3;
    const wt = tag & 7;
    const at = `${what} field ${field}`;
    if (field === 0) throw new WireError(`${what}: field number 0`);
    const known = schema[field];
    if (known !== undefined && known.wt !== wt) throw new WireError(`${at}: wire type ${wt}, want ${known.wt}`);
    switch (wt) {
      case WT_VARINT:
        [, o] = readVarint(b, o, end, at);
        break;
      case WT_I64:
      case WT_I32: {
        const n = wt === WT_I64 ? 8 : 4;
        if (end - o < n) throw new WireError(`${at}: truncated`);
        o += n;
        break;
      }
      case WT_LEN: {
        let n: number;
        [n, o] = readVarint(b, o, end, at);
        if (n > end - o) throw new WireError(`${at}: length ${n} exceeds the ${end - o} bytes left`);
        known?.check?.(b, o, o + n, at);
        o += n;
        break;
      }
      default: // 3/4 are proto2 groups (never valid in this proto3 API), 6/7 do not exist
        throw new WireError(`${at}: unsupported wire type ${wt}`);
    }
  }
}

/**
 * Vets SubscribeRequest bytes before the generated decoder sees them, which would otherwise accept invalid
 * UTF-8 (it drops the bad bytes, so "key\xff" would turn into a valid-looking "key") and fail only on a
 * subset of malformations, with bare assertion messages. Throws WireError; returns nothing.
 */
export function checkSubscribeRequest(b: Uint8Array): void {
  checkMessage(b, 0, b.length, REQUEST_SCHEMA, 'SubscribeRequest');
}
