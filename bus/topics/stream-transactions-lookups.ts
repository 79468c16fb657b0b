// stream.transactions record header `lookups`: a transaction's address-table lookups (v0 and v1 messages), hoisted
// out of the record's SubscribeResponseTransaction bytes, so that a reader matching loaded addresses (the fanout's
// table cache) never walks the protobuf for them. A Kafka record header rather than a change of the value: the
// value keeps its VERSION 1 layout byte for byte (stream-transactions.ts), so every reader of the value (the
// submission service's delivered feed, operators' consumers) reads new records as before, and other header keys
// can be added beside this one without touching it.
//
//   header key  "lookups"
//   value:
//   +0   u8    VERSION (1)
//   +1   u16   lookup count L (LE; 0 for a legacy transaction: the header says "no lookups", not "not known")
//   +3   L × lookup, in message order:
//        [32]  the table's account key
//        u16   writable index count W (LE)
//        u16   readonly index count R (LE)
//        W     writable indexes (u8 each)
//        R     readonly indexes (u8 each)
//
// Ingest sets the header on every record it produces. A record without it (produced before the header existed, or
// replayed from an old recording), or with a VERSION this reader does not know, has its lookups read from the
// message as before (proto/tx-message-reader.ts): the header is an addition the fanout prefers, never a need.

export const LOOKUPS_HEADER = 'lookups';
export const LOOKUPS_HEADER_VERSION = 1;
const COUNT_OFF = 1;
const HEAD_SZ = 3;
const TABLE_SZ = 32;
const LOOKUP_HEAD_SZ = TABLE_SZ + 4;
const MAX_COUNT = 0xffff;

/** One lookup as the transaction decoder produces it (proto/tx-fields.ts LookupFields has this shape). */
export interface HeaderLookup {
  accountKey: Uint8Array;
  writableIndexes: Uint8Array;
  readonlyIndexes: Uint8Array;
}

/** The header value for a transaction's lookups (an empty list makes the 3-byte "no lookups" value). */
export function encodeLookupsHeader(lookups: readonly HeaderLookup[]): Buffer {
  if (lookups.length > MAX_COUNT) throw new RangeError(`${lookups.length} lookups do not fit the u16 count`);
  let size = HEAD_SZ;
  for (const l of lookups) {
    if (l.accountKey.length !== TABLE_SZ) throw new RangeError('a lookup table key must be 32 bytes');
    if (l.writableIndexes.length > MAX_COUNT || l.readonlyIndexes.length > MAX_COUNT) throw new RangeError('lookup indexes do not fit the u16 count');
    size += LOOKUP_HEAD_SZ + l.writableIndexes.length + l.readonlyIndexes.length;
  }
  const out = Buffer.allocUnsafe(size);
  out[0] = LOOKUPS_HEADER_VERSION;
  out.writeUInt16LE(lookups.length, COUNT_OFF);
  let o = HEAD_SZ;
  for (const l of lookups) {
    out.set(l.accountKey, o);
    out.writeUInt16LE(l.writableIndexes.length, o + TABLE_SZ);
    out.writeUInt16LE(l.readonlyIndexes.length, o + TABLE_SZ + 2);
    o += LOOKUP_HEAD_SZ;
    out.set(l.writableIndexes, o);
    o += l.writableIndexes.length;
    out.set(l.readonlyIndexes, o);
    o += l.readonlyIndexes.length;
  }
  return out;
}

/** A record's header value when it carries one this reader knows (VERSION 1), else null: read the message. */
export function lookupsHeaderOf(headers: Readonly<Record<string, Buffer>> | undefined): Buffer | null {
  const h = headers?.[LOOKUPS_HEADER];
  return h !== undefined && h.length >= HEAD_SZ && h[0] === LOOKUPS_HEADER_VERSION ? h : null;
}

/** Ints per lookup in scanLookupsHeader's output: table key offset, writable offset, length, readonly offset,
 *  length — the layout of proto/tx-message-reader.ts scanLookups, so one consumer reads either. */
export const HEADER_LOOKUP_INTS = 5;

/**
 * The lookups of a header value (offsets into `b`), HEADER_LOOKUP_INTS ints each into `out`. Returns how many,
 * -1 when the bytes do not hold what they announce, or -2 when `out` is too small (grow it and ask again).
 */
export function scanLookupsHeader(b: Uint8Array, out: Int32Array): number {
  if (b.length < HEAD_SZ) return -1;
  const n = b[COUNT_OFF]! | (b[COUNT_OFF + 1]! << 8);
  if (n * HEADER_LOOKUP_INTS > out.length) return -2;
  let o = HEAD_SZ;
  for (let i = 0; i < n; i++) {
    if (o + LOOKUP_HEAD_SZ > b.length) return -1;
    const w = b[o + TABLE_SZ]! | (b[o + TABLE_SZ + 1]! << 8);
    const r = b[o + TABLE_SZ + 2]! | (b[o + TABLE_SZ + 3]! << 8);
    const wo = o + LOOKUP_HEAD_SZ;
    const end = wo + w + r;
    if (end > b.length) return -1;
    const j = i * HEADER_LOOKUP_INTS;
    out[j] = o;
    out[j + 1] = wo;
    out[j + 2] = w;
    out[j + 3] = wo + w;
    out[j + 4] = r;
    o = end;
  }
  return o === b.length ? n : -1;
}

/** decodeLookupsHeader's offsets, reused (it runs synchronously to the end). */
let scratch = new Int32Array(HEADER_LOOKUP_INTS * 8);

/** The lookups of a header value as views into it, or null when the bytes do not parse (off the hot path: the
 *  resolver's slow path and tests). */
export function decodeLookupsHeader(b: Buffer): Array<{ table: Buffer; writableIndexes: Buffer; readonlyIndexes: Buffer }> | null {
  let n = scanLookupsHeader(b, scratch);
  if (n === -2) {
    scratch = new Int32Array(HEADER_LOOKUP_INTS * (b[COUNT_OFF]! | (b[COUNT_OFF + 1]! << 8)));
    n = scanLookupsHeader(b, scratch);
  }
  const at = scratch;
  if (n < 0) return null;
  const out = new Array<{ table: Buffer; writableIndexes: Buffer; readonlyIndexes: Buffer }>(n);
  for (let i = 0; i < n; i++) {
    const j = i * HEADER_LOOKUP_INTS;
    out[i] = {
      table: b.subarray(at[j]!, at[j]! + TABLE_SZ),
      writableIndexes: b.subarray(at[j + 1]!, at[j + 1]! + at[j + 2]!),
      readonlyIndexes: b.subarray(at[j + 3]!, at[j + 3]! + at[j + 4]!),
    };
  }
  return out;
}
