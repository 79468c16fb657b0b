// HPACK header block codec (RFC 7541): a stateful decoder for the peer's blocks, a stateless encoder for ours.
//
// A header block is a run of representations, told apart by the high bits of their first octet (section 6):
//
//   1xxxxxxx  indexed field                      index in a 7-bit prefix integer
//   01xxxxxx  literal with incremental indexing  name index in a 6-bit prefix (0: a name string follows)
//   001xxxxx  dynamic table size update          new size in a 5-bit prefix
//   0001xxxx  literal never indexed              name index in a 4-bit prefix (0: a name string follows)
//   0000xxxx  literal without indexing           name index in a 4-bit prefix (0: a name string follows)
//
// A literal then carries its value string (and its name string first when the name index is 0):
//
//   H xxxxxxx   Huffman flag, length in a 7-bit prefix integer
//   octets      length octets, raw or Huffman-coded
//
// A prefix integer (section 5.1) fills its prefix; if all prefix bits are ones, continuation octets follow,
// 7 bits each, least significant group first, high bit set on all but the last.
//
// Index space (section 2.3.3): 1..61 the static table, 62.. the dynamic table, newest entry first.

import { huffmanDecode } from './hpack-huffman';

export type HeaderField = readonly [name: string, value: string];
export interface HpackError {
  readonly error: string;
  /**
   * Set when the block decoded cleanly but its list is larger than allowed: the table is in step with the
   * peer's encoder, so the connection may go on and only the stream is refused (RFC 9113 §10.5.1).
   */
  readonly listTooLarge?: true;
}

/** RFC 7541 Appendix A, transcribed; index i is STATIC_TABLE[i - 1]. */
export const STATIC_TABLE: ReadonlyArray<HeaderField> = [
  [':authority', ''], [':method', 'GET'], [':method', 'POST'], [':path', '/'], [':path', '/index.html'],
  [':scheme', 'http'], [':scheme', 'https'], [':status', '200'], [':status', '204'], [':status', '206'],
  [':status', '304'], [':status', '400'], [':status', '404'], [':status', '500'], ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'], ['accept-language', ''], ['accept-ranges', ''], ['accept', ''],
  ['access-control-allow-origin', ''], ['age', ''], ['allow', ''], ['authorization', ''], ['cache-control', ''],
  ['content-disposition', ''], ['content-encoding', ''], ['content-language', ''], ['content-length', ''],
  ['content-location', ''], ['content-range', ''], ['content-type', ''], ['cookie', ''], ['date', ''], ['etag', ''],
  ['expect', ''], ['expires', ''], ['from', ''], ['host', ''], ['if-match', ''], ['if-modified-since', ''],
  ['if-none-match', ''], ['if-range', ''], ['if-unmodified-since', ''], ['last-modified', ''], ['link', ''],
  ['location', ''], ['max-forwards', ''], ['proxy-authenticate', ''], ['proxy-authorization', ''], ['range', ''],
  ['referer', ''], ['refresh', ''], ['retry-after', ''], ['server', ''], ['set-cookie', ''],
  ['strict-transport-security', ''], ['transfer-encoding', ''], ['user-agent', ''], ['vary', ''], ['via', ''],
  ['www-authenticate', ''],
];

/** SETTINGS_HEADER_TABLE_SIZE before any SETTINGS (RFC 9113 section 6.5.2). */
export const DEFAULT_HEADER_TABLE_SIZE = 4096;
/** Per-entry overhead in table size and header list size accounting (RFC 7541 section 4.1). */
export const HEADER_ENTRY_OVERHEAD = 32;

const INDEXED_MASK = 0x80;
const INDEXED_PREFIX = 7;
const INCREMENTAL_MASK = 0x40;
const INCREMENTAL_PREFIX = 6;
const SIZE_UPDATE_MASK = 0x20;
const SIZE_UPDATE_PREFIX = 5;
const LITERAL_PREFIX = 4;
const HUFFMAN_MASK = 0x80;
const STRING_PREFIX = 7;
const CONTINUATION_MASK = 0x80;
const CONTINUATION_BITS = 7;
const CONTINUATION_VALUE_MASK = 0x7f;
/** Integers above this are refused: no sane index, length or table size comes near, and it keeps math exact. */
const MAX_INT = 2 ** 31 - 1;
/** 5 groups of 7 bits already pass 2^31; more is either overflow or padding with zero groups, both refused. */
const MAX_CONTINUATIONS = 5;
const TRUNCATED = -1;
const OVERFLOW = -2;

const err = (error: string): HpackError => ({ error });

/**
 * Decodes the peer's header blocks, keeping its dynamic table across blocks of one connection. Blocks must be
 * fed in the order they arrive. After an error the table may be half-updated: the caller must treat any error
 * as a connection COMPRESSION_ERROR and drop this decoder.
 */
export class HpackDecoder {
  private readonly maxTableSize: number;
  /** Oldest entry first, so dynamic index 1 (overall index 62) is the last element. */
  private readonly table: HeaderField[] = [];
  private tableBytes = 0;
  private capacity: number;
  /** Read position inside the block being decoded. */
  private pos = 0;

  /** maxTableSize is our SETTINGS_HEADER_TABLE_SIZE: the most the peer's size updates may ask for. */
  constructor(opts?: { maxTableSize?: number }) {
    this.maxTableSize = opts?.maxTableSize ?? DEFAULT_HEADER_TABLE_SIZE;
    this.capacity = this.maxTableSize;
  }

  /** Current dynamic table size by the RFC rule (sum of name + value + 32). */
  get dynamicTableSize(): number {
    return this.tableBytes;
  }

  /** The dynamic table, newest entry (index 62) first; for diagnostics and tests. */
  dynamicTable(): HeaderField[] {
    return this.table.slice().reverse();
  }

  /**
   * Decodes one complete header block (HEADERS plus any CONTINUATION payloads, joined). maxListBytes caps the
   * decoded header list size (sum of name + value + 32 per field), the SETTINGS_MAX_HEADER_LIST_SIZE rule: past
   * it the rest of the block is still decoded (its insertions keep the table in step with the peer's) but no
   * field is kept, and the answer is an error with `listTooLarge`. The fields kept are thus bounded by
   * maxListBytes whatever the block holds.
   */
  decode(block: Buffer, maxListBytes: number): HeaderField[] | HpackError {
    const fields: HeaderField[] = [];
    let listBytes = 0;
    let seen = 0;
    this.pos = 0;
    while (this.pos < block.length) {
      const first = block[this.pos];
      let field: HeaderField | HpackError;
      if (first & INDEXED_MASK) {
        const index = this.readInt(block, INDEXED_PREFIX);
        if (index < 0) return intError(index, 'index');
        if (index === 0) return err('indexed field with index 0');
        const entry = this.entry(index);
        if (entry === undefined) return err(`index ${index} is beyond the tables`);
        field = entry;
      } else if (first & INCREMENTAL_MASK) {
        field = this.literal(block, INCREMENTAL_PREFIX);
        if ('error' in field) return field;
        this.insert(field);
      } else if (first & SIZE_UPDATE_MASK) {
        // Only allowed before the first field of a block (section 4.2); several in a row are fine.
        if (seen > 0) return err('dynamic table size update after a header field');
        const size = this.readInt(block, SIZE_UPDATE_PREFIX);
        if (size < 0) return intError(size, 'table size');
        if (size > this.maxTableSize) return err(`table size update to ${size} exceeds ${this.maxTableSize}`);
        this.capacity = size;
        this.evictTo(size);
        continue;
      } else {
        // Never indexed (0001) and without indexing (0000) differ only for intermediaries re-encoding it.
        field = this.literal(block, LITERAL_PREFIX);
        if ('error' in field) return field;
      }
      seen++;
      listBytes += field[0].length + field[1].length + HEADER_ENTRY_OVERHEAD;
      if (listBytes > maxListBytes) fields.length = 0;
      else fields.push(field);
    }
    if (listBytes > maxListBytes) return { error: `header list exceeds ${maxListBytes} bytes`, listTooLarge: true };
    return fields;
  }

  private entry(index: number): HeaderField | undefined {
    if (index <= STATIC_TABLE.length) return STATIC_TABLE[index - 1];
    const back = index - STATIC_TABLE.length;
    return back <= this.table.length ? this.table[this.table.length - back] : undefined;
  }

  private literal(block: Buffer, prefixBits: number): HeaderField | HpackError {
    const index = this.readInt(block, prefixBits);
    if (index < 0) return intError(index, 'name index');
    let name: string | HpackError;
    if (index === 0) {
      name = this.readString(block);
      if (typeof name !== 'string') return name;
    } else {
      const entry = this.entry(index);
      if (entry === undefined) return err(`name index ${index} is beyond the tables`);
      name = entry[0];
    }
    const value = this.readString(block);
    if (typeof value !== 'string') return value;
    return [name, value];
  }

  private readString(block: Buffer): string | HpackError {
    if (this.pos >= block.length) return err('string literal truncated');
    const huffman = (block[this.pos] & HUFFMAN_MASK) !== 0;
    const len = this.readInt(block, STRING_PREFIX);
    if (len < 0) return intError(len, 'string length');
    const start = this.pos;
    if (len > block.length - start) return err(`string length ${len} runs past the block`);
    this.pos = start + len;
    if (!huffman) return block.toString('latin1', start, this.pos);
    return huffmanDecode(block, start, this.pos) ?? err('bad Huffman string');
  }

  /** Reads a prefix integer at this.pos (section 5.1); TRUNCATED or OVERFLOW on failure. */
  private readInt(block: Buffer, prefixBits: number): number {
    const max = (1 << prefixBits) - 1;
    let value = block[this.pos++] & max;
    if (value < max) return value;
    for (let i = 0; i < MAX_CONTINUATIONS; i++) {
      if (this.pos >= block.length) return TRUNCATED;
      const b = block[this.pos++];
      value += (b & CONTINUATION_VALUE_MASK) * 2 ** (CONTINUATION_BITS * i);
      if (value > MAX_INT) return OVERFLOW;
      if ((b & CONTINUATION_MASK) === 0) return value;
    }
    return OVERFLOW;
  }

  /** Adds an entry as section 4.4 says: evict until it fits; an entry larger than the table empties it. */
  private insert(field: HeaderField): void {
    const size = field[0].length + field[1].length + HEADER_ENTRY_OVERHEAD;
    this.evictTo(this.capacity - size);
    if (size <= this.capacity) {
      this.table.push(field);
      this.tableBytes += size;
    }
  }

  private evictTo(limit: number): void {
    while (this.tableBytes > limit && this.table.length > 0) {
      const old = this.table.shift() as HeaderField;
      this.tableBytes -= old[0].length + old[1].length + HEADER_ENTRY_OVERHEAD;
    }
  }
}

function intError(code: number, what: string): HpackError {
  return err(code === TRUNCATED ? `${what} truncated` : `${what} overflows 2^31-1`);
}

const STATUS_200_INDEX = 8;
const LITERAL_WITHOUT_INDEXING = 0x00;
/** First static index of each name, for "literal with indexed name". */
const STATIC_NAME_INDEX = new Map<string, number>();
STATIC_TABLE.forEach(([name], i) => {
  if (!STATIC_NAME_INDEX.has(name)) STATIC_NAME_INDEX.set(name, i + 1);
});

function intLength(value: number, prefixBits: number): number {
  const max = (1 << prefixBits) - 1;
  let n = 1;
  if (value < max) return n;
  for (value -= max; value >= 0x80; value = Math.floor(value / 0x80)) n++;
  return n + 1;
}

function writeInt(out: Buffer, pos: number, value: number, prefixBits: number, flags: number): number {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out[pos] = flags | value;
    return pos + 1;
  }
  out[pos++] = flags | max;
  for (value -= max; value >= 0x80; value = Math.floor(value / 0x80)) out[pos++] = (value & CONTINUATION_VALUE_MASK) | CONTINUATION_MASK;
  out[pos] = value;
  return pos + 1;
}

/**
 * Encodes our header block without touching the peer's dynamic table, so it needs no state and no ordering
 * with other streams. `:status: 200` is static index 8; everything else is a literal without indexing, with
 * the static name index when there is one, strings raw. Names must be lower-case and strings latin1
 * (one octet per char); a char above 0xff is a bug in the caller.
 */
export function encodeHeaderBlock(fields: ReadonlyArray<readonly [string, string]>): Buffer {
  let size = 0;
  for (const [name, value] of fields) {
    if (name === ':status' && value === '200') {
      size += 1;
      continue;
    }
    const nameIndex = STATIC_NAME_INDEX.get(name) ?? 0;
    size += intLength(nameIndex, LITERAL_PREFIX);
    if (nameIndex === 0) size += intLength(name.length, STRING_PREFIX) + name.length;
    size += intLength(value.length, STRING_PREFIX) + value.length;
  }
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  for (const [name, value] of fields) {
    if (name === ':status' && value === '200') {
      out[pos++] = INDEXED_MASK | STATUS_200_INDEX;
      continue;
    }
    const nameIndex = STATIC_NAME_INDEX.get(name) ?? 0;
    pos = writeInt(out, pos, nameIndex, LITERAL_PREFIX, LITERAL_WITHOUT_INDEXING);
    if (nameIndex === 0) {
      pos = writeInt(out, pos, name.length, STRING_PREFIX, 0);
      pos += out.write(name, pos, 'latin1');
    }
    pos = writeInt(out, pos, value.length, STRING_PREFIX, 0);
    pos += out.write(value, pos, 'latin1');
  }
  if (pos !== size) throw new Error(`encodeHeaderBlock: wrote ${pos} of ${size} bytes`);
  return out;
}
