import { crc32 } from 'node:zlib';
import { setOwn } from '../infra/base/set-own';

// The topic recording file (`meridian topics record` writes it, `meridian topics replay` and
// test/support/recorded-broker.ts read it): the records of one or more topics, exactly as the bus held them.
// Pure codec, no I/O: the encoder makes byte strings, the decoder takes chunks as they arrive and hands back
// whole frames, so a reader holds one frame at a time however long the file is. All integers little-endian.
//
//   file    = header frame* end
//
//   header
//   +0    8   magic "MRDNREC\n"
//   +8    u16 format version (1)
//   +10   u16 flags (0; a reader refuses bits it does not know)
//   +12   u32 meta length M (≤ MAX_META_SZ)
//   +16   M   meta: UTF-8 JSON, RecordingMeta (topics in index order with their partition counts, source, range)
//   +16+M u32 CRC-32 (ISO-HDLC, zlib's) of bytes [0, 16+M)
//
//   frame (one record)
//   +0    u8  type 1
//   +1    u32 body length L (≤ MAX_FRAME_BODY_SZ)
//   +5    L   body:
//               +0   u16 topic index (into meta.topics)
//               +2   u32 partition
//               +6   u64 offset in the source log
//               +14  i64 timestamp, ms since epoch (the source log's append time)
//               +22  i32 key length K, -1 = null key; then K bytes
//               ..   i32 value length V, -1 = null value (a tombstone); then V bytes (stream values are protobuf)
//               ..   u16 header count H; then H × (u16 name length, name UTF-8, u32 value length, value)
//   +5+L  u32 CRC-32 of bytes [0, 5+L) of the frame
//
//   end
//   +0    u8  type 0xFF
//   +1    u32 body length 16
//   +5    u64 record count (must equal the frames read)
//   +13   u64 sum of the record bodies' lengths
//   +21   u32 CRC-32 of bytes [0, 21)
//
// A file without its end frame was cut short (a crash, a full disk) and is refused as truncated: a replay must
// not pass off part of a recording as all of it. Every length is checked against its bound before anything is
// allocated for it.

export const MAGIC = Buffer.from('MRDNREC\n', 'latin1');
export const FORMAT_VERSION = 1;
const MAGIC_SZ = 8;
const VERSION_OFF = 8;
const FLAGS_OFF = 10;
const META_LEN_OFF = 12;
const HEADER_FIXED_SZ = 16;
const CRC_SZ = 4;
/** Meta is a topic list and a few fields; 1 MiB bounds a hostile length without limiting any real recording. */
export const MAX_META_SZ = 1 << 20;

const FRAME_RECORD = 1;
const FRAME_END = 0xff;
const FRAME_TYPE_OFF = 0;
const FRAME_LEN_OFF = 1;
const FRAME_BODY_OFF = 5;
/** Kafka's default message.max.bytes is ~1 MiB; 64 MiB leaves room for any broker setting and bounds a bad length. */
export const MAX_FRAME_BODY_SZ = 64 << 20;
const END_BODY_SZ = 16;

const TOPIC_OFF = 0;
const PARTITION_OFF = 2;
const OFFSET_OFF = 6;
const TIMESTAMP_OFF = 14;
const KEY_LEN_OFF = 22;
const RECORD_FIXED_SZ = 26; // through the key length
const NULL_LEN = -1;

export interface RecordingTopic {
  name: string;
  partitions: number;
}

/** What the header's JSON holds. Offsets in the file belong to `source`'s logs (STYLE 12): a replay gets new ones. */
export interface RecordingMeta {
  topics: RecordingTopic[];
  /** Where the records were read: 'kafka' or 'embedded', and when the recording started (ISO-8601). */
  source: { bus: 'kafka' | 'embedded'; recordedAt: string };
  /** The range asked for, as given (e.g. {"from": "offset:0", "to": "time:1764079200000"}); informational. */
  range?: { from?: string; to?: string };
  /** Free text: how the recording was made. */
  note?: string;
}

export interface RecordedRecord {
  topic: string;
  partition: number;
  /** Decimal string, as in BusMessage. */
  offset: string;
  timestamp: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer>;
}

export interface RecordingTotals {
  records: number;
  bodyBytes: number;
}

/** A file or stream that is not a whole, intact recording. The message is one line and says where. */
export class RecordingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RecordingError';
  }
}

function withCrc(bytes: Buffer): Buffer {
  const out = Buffer.allocUnsafe(bytes.length + CRC_SZ);
  bytes.copy(out, 0);
  out.writeUInt32LE(crc32(bytes), bytes.length);
  return out;
}

function checkMeta(meta: RecordingMeta): void {
  if (meta.topics.length === 0 || meta.topics.length > 0xffff) throw new RangeError(`a recording holds 1..65535 topics, not ${meta.topics.length}`);
  for (const t of meta.topics) {
    if (t.name.length === 0) throw new RangeError('a topic name is empty');
    if (!Number.isInteger(t.partitions) || t.partitions < 1) throw new RangeError(`topic ${t.name}: partitions must be a positive integer`);
  }
  if (new Set(meta.topics.map((t) => t.name)).size !== meta.topics.length) throw new RangeError('a topic is listed twice');
}

export function encodeHeader(meta: RecordingMeta): Buffer {
  checkMeta(meta);
  const json = Buffer.from(JSON.stringify(meta), 'utf8');
  if (json.length > MAX_META_SZ) throw new RangeError(`recording meta is ${json.length} bytes, over ${MAX_META_SZ}`);
  const head = Buffer.alloc(HEADER_FIXED_SZ + json.length);
  MAGIC.copy(head, 0);
  head.writeUInt16LE(FORMAT_VERSION, VERSION_OFF);
  head.writeUInt16LE(0, FLAGS_OFF);
  head.writeUInt32LE(json.length, META_LEN_OFF);
  json.copy(head, HEADER_FIXED_SZ);
  return withCrc(head);
}

/** One record frame. `topicIndex` is the record's topic's position in the header's meta.topics. */
export function encodeRecord(topicIndex: number, r: Omit<RecordedRecord, 'topic'>): Buffer {
  const headerNames = Object.keys(r.headers);
  const names = headerNames.map((h) => Buffer.from(h, 'utf8'));
  let size = RECORD_FIXED_SZ + (r.key?.length ?? 0) + 4 + (r.value?.length ?? 0) + 2;
  for (let i = 0; i < names.length; i++) size += 2 + names[i]!.length + 4 + r.headers[headerNames[i]!]!.length;
  if (size > MAX_FRAME_BODY_SZ) throw new RangeError(`record of ${size} bytes is over the frame limit ${MAX_FRAME_BODY_SZ}`);
  if (names.length > 0xffff) throw new RangeError(`${names.length} headers do not fit the u16 count`);
  const out = Buffer.allocUnsafe(FRAME_BODY_OFF + size + CRC_SZ);
  out[FRAME_TYPE_OFF] = FRAME_RECORD;
  out.writeUInt32LE(size, FRAME_LEN_OFF);
  const b = FRAME_BODY_OFF;
  out.writeUInt16LE(topicIndex, b + TOPIC_OFF);
  out.writeUInt32LE(r.partition, b + PARTITION_OFF);
  out.writeBigUInt64LE(BigInt(r.offset), b + OFFSET_OFF);
  out.writeBigInt64LE(BigInt(Math.trunc(r.timestamp)), b + TIMESTAMP_OFF);
  let at = b + KEY_LEN_OFF;
  const bytesField = (v: Buffer | null): void => {
    out.writeInt32LE(v === null ? NULL_LEN : v.length, at);
    at += 4;
    if (v !== null) at += v.copy(out, at);
  };
  bytesField(r.key);
  bytesField(r.value);
  out.writeUInt16LE(names.length, at);
  at += 2;
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    const value = r.headers[headerNames[i]!]!;
    if (name.length > 0xffff) throw new RangeError(`header name of ${name.length} bytes does not fit the u16 length`);
    out.writeUInt16LE(name.length, at);
    at += 2;
    at += name.copy(out, at);
    out.writeUInt32LE(value.length, at);
    at += 4;
    at += value.copy(out, at);
  }
  out.writeUInt32LE(crc32(out.subarray(0, at)), at);
  return out;
}

export function encodeEnd(totals: RecordingTotals): Buffer {
  const out = Buffer.alloc(FRAME_BODY_OFF + END_BODY_SZ);
  out[FRAME_TYPE_OFF] = FRAME_END;
  out.writeUInt32LE(END_BODY_SZ, FRAME_LEN_OFF);
  out.writeBigUInt64LE(BigInt(totals.records), FRAME_BODY_OFF);
  out.writeBigUInt64LE(BigInt(totals.bodyBytes), FRAME_BODY_OFF + 8);
  return withCrc(out);
}

/** The length of a record frame's body, for the end frame's sum (frame minus type, length and CRC). */
export function frameBodySize(frame: Buffer): number {
  return frame.length - FRAME_BODY_OFF - CRC_SZ;
}

function parseMeta(json: Buffer): RecordingMeta {
  let v: unknown;
  try {
    v = JSON.parse(json.toString('utf8'));
  } catch {
    throw new RecordingError('header meta is not JSON');
  }
  const o = v as Partial<RecordingMeta> | null;
  if (o === null || typeof o !== 'object' || !Array.isArray(o.topics)) throw new RecordingError('header meta has no topic list');
  for (const t of o.topics as unknown[]) {
    const tt = t as Partial<RecordingTopic> | null;
    if (tt === null || typeof tt !== 'object' || typeof tt.name !== 'string' || typeof tt.partitions !== 'number') throw new RecordingError('header meta: a topic needs a name and a partition count');
  }
  try {
    checkMeta(o as RecordingMeta);
  } catch (e) {
    throw new RecordingError(`header meta: ${(e as Error).message}`);
  }
  const src = o.source as Partial<RecordingMeta['source']> | undefined;
  if (src === undefined || (src.bus !== 'kafka' && src.bus !== 'embedded') || typeof src.recordedAt !== 'string') throw new RecordingError('header meta has no valid source');
  return o as RecordingMeta;
}

/** The record body at `body` (already CRC-checked); every length against the bytes left. */
function parseRecordBody(body: Buffer, meta: RecordingMeta, at: number): RecordedRecord {
  const bad = (what: string): RecordingError => new RecordingError(`record at byte ${at}: ${what}`);
  if (body.length < RECORD_FIXED_SZ) throw bad('shorter than its fixed fields');
  const ti = body.readUInt16LE(TOPIC_OFF);
  const topic = meta.topics[ti];
  if (topic === undefined) throw bad(`topic index ${ti} is not in the header's ${meta.topics.length} topics`);
  const partition = body.readUInt32LE(PARTITION_OFF);
  if (partition >= topic.partitions) throw bad(`partition ${partition} of ${topic.name}, which has ${topic.partitions}`);
  let p = KEY_LEN_OFF;
  const bytesField = (what: string): Buffer | null => {
    if (p + 4 > body.length) throw bad(`${what} length past the end`);
    const n = body.readInt32LE(p);
    p += 4;
    if (n === NULL_LEN) return null;
    if (n < 0 || p + n > body.length) throw bad(`${what} of ${n} bytes past the end`);
    const v = body.subarray(p, p + n);
    p += n;
    return v;
  };
  const key = bytesField('key');
  const value = bytesField('value');
  if (p + 2 > body.length) throw bad('header count past the end');
  const count = body.readUInt16LE(p);
  p += 2;
  const headers: Record<string, Buffer> = {};
  for (let i = 0; i < count; i++) {
    if (p + 2 > body.length) throw bad('header name length past the end');
    const nl = body.readUInt16LE(p);
    p += 2;
    if (p + nl + 4 > body.length) throw bad('header name past the end');
    const name = body.toString('utf8', p, p + nl);
    p += nl;
    const vl = body.readUInt32LE(p);
    p += 4;
    if (p + vl > body.length) throw bad('header value past the end');
    setOwn(headers, name, body.subarray(p, p + vl));
    p += vl;
  }
  if (p !== body.length) throw bad(`${body.length - p} bytes after the last header`);
  return {
    topic: topic.name,
    partition,
    offset: body.readBigUInt64LE(OFFSET_OFF).toString(),
    timestamp: Number(body.readBigInt64LE(TIMESTAMP_OFF)),
    key,
    value,
    headers,
  };
}

export type DecodedItem = { kind: 'header'; meta: RecordingMeta } | { kind: 'record'; record: RecordedRecord; frameBytes: number } | { kind: 'end'; totals: RecordingTotals };

/**
 * Incremental reader: push() chunks as they come, take() whole items out. Throws RecordingError at the first
 * bad byte; finish() throws if the input ended before the end frame. Holds at most one partial frame.
 */
export class RecordingDecoder {
  private buf: Buffer = Buffer.alloc(0);
  /** Bytes consumed before `buf`, for error positions. */
  private pos = 0;
  private meta: RecordingMeta | null = null;
  private ended = false;
  private records = 0;
  private bodyBytes = 0;

  get header(): RecordingMeta | null {
    return this.meta;
  }

  get done(): boolean {
    return this.ended;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    if (this.ended) throw new RecordingError(`bytes after the end frame at byte ${this.pos}`);
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
  }

  /** The next whole item, or null until more bytes are pushed. */
  take(): DecodedItem | null {
    if (this.meta === null) return this.takeHeader();
    if (this.ended) {
      if (this.buf.length > 0) throw new RecordingError(`bytes after the end frame at byte ${this.pos}`);
      return null;
    }
    if (this.buf.length < FRAME_BODY_OFF) return null;
    const type = this.buf[FRAME_TYPE_OFF]!;
    const at = this.pos;
    if (type !== FRAME_RECORD && type !== FRAME_END) throw new RecordingError(`unknown frame type ${type} at byte ${at}`);
    const len = this.buf.readUInt32LE(FRAME_LEN_OFF);
    if (type === FRAME_END && len !== END_BODY_SZ) throw new RecordingError(`end frame at byte ${at} has length ${len}, not ${END_BODY_SZ}`);
    if (len > MAX_FRAME_BODY_SZ) throw new RecordingError(`frame at byte ${at} claims ${len} bytes, over the limit ${MAX_FRAME_BODY_SZ}`);
    const total = FRAME_BODY_OFF + len + CRC_SZ;
    if (this.buf.length < total) return null;
    const frame = this.buf.subarray(0, total);
    if (crc32(frame.subarray(0, total - CRC_SZ)) !== frame.readUInt32LE(total - CRC_SZ)) throw new RecordingError(`checksum mismatch in the frame at byte ${at} (the file is corrupt)`);
    this.consume(total);
    const body = frame.subarray(FRAME_BODY_OFF, FRAME_BODY_OFF + len);
    if (type === FRAME_END) {
      const records = Number(body.readBigUInt64LE(0));
      const bodyBytes = Number(body.readBigUInt64LE(8));
      if (records !== this.records || bodyBytes !== this.bodyBytes) {
        throw new RecordingError(`end frame says ${records} records (${bodyBytes} bytes), the file holds ${this.records} (${this.bodyBytes} bytes)`);
      }
      this.ended = true;
      return { kind: 'end', totals: { records, bodyBytes } };
    }
    const record = parseRecordBody(body, this.meta, at);
    this.records++;
    this.bodyBytes += len;
    return { kind: 'record', record, frameBytes: total };
  }

  /** Call when the input has ended: throws unless the end frame was read. */
  finish(): void {
    if (this.meta === null) throw new RecordingError(this.pos + this.buf.length === 0 ? 'empty file, not a recording' : 'truncated: the header is incomplete');
    if (!this.ended) throw new RecordingError(`truncated after ${this.records} records: no end frame (the recording was cut short)`);
  }

  private consume(n: number): void {
    this.buf = this.buf.subarray(n);
    this.pos += n;
  }

  private takeHeader(): DecodedItem | null {
    const b = this.buf;
    // Check the magic as soon as its bytes are here, so a wrong file fails on its first chunk.
    const m = Math.min(b.length, MAGIC_SZ);
    if (!b.subarray(0, m).equals(MAGIC.subarray(0, m))) throw new RecordingError('not a meridian topic recording (bad magic)');
    if (b.length < HEADER_FIXED_SZ) return null;
    const version = b.readUInt16LE(VERSION_OFF);
    if (version !== FORMAT_VERSION) throw new RecordingError(`recording format version ${version}; this build reads version ${FORMAT_VERSION}`);
    const flags = b.readUInt16LE(FLAGS_OFF);
    if (flags !== 0) throw new RecordingError(`unknown header flags 0x${flags.toString(16)}`);
    const metaLen = b.readUInt32LE(META_LEN_OFF);
    if (metaLen > MAX_META_SZ) throw new RecordingError(`header meta claims ${metaLen} bytes, over the limit ${MAX_META_SZ}`);
    const total = HEADER_FIXED_SZ + metaLen + CRC_SZ;
    if (b.length < total) return null;
    if (crc32(b.subarray(0, total - CRC_SZ)) !== b.readUInt32LE(total - CRC_SZ)) throw new RecordingError('checksum mismatch in the header (the file is corrupt)');
    const meta = parseMeta(b.subarray(HEADER_FIXED_SZ, HEADER_FIXED_SZ + metaLen));
    this.meta = meta;
    this.consume(total);
    return { kind: 'header', meta };
  }
}
