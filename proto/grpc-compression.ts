import zlib from 'node:zlib';

// gRPC message compression (gRPC over HTTP/2: a message whose 5-byte prefix has the compressed flag 1 holds its
// body in the stream's `grpc-encoding`) for messages made of a part shared by many streams and a small part of each
// stream's own that must come after it: the shared part is compressed once, and each stream's message is that
// compressed part spliced with its own bytes, stored (not compressed), into ONE gzip member or ONE zstd frame.
// One member / one frame, because common decoders read only the first (Rust's flate2 `GzDecoder`, which tonic
// uses; gRPC C-core's inflate loop fails on input left after the end of the stream).
//
// gzip (RFC 1952 member around an RFC 1951 deflate stream):
//
//   +0   u8      gRPC flag 1        +1  u32 BE  length of what follows
//   +5   10 B    gzip header 1f 8b 08 00 00000000 00 ff
//   +15  N B     the shared part, raw deflate ended by a sync flush: byte-aligned, no final block (once per part)
//   ...  5 B     stored block header: 0x01 (BFINAL 1, BTYPE 00), LEN u16 LE, NLEN u16 LE
//   ...  T B     the stream's tail, stored
//   end-8 u32 LE CRC-32 of shared ‖ tail      end-4 u32 LE  ISIZE = (shared + tail) length mod 2^32
//
// zstd (RFC 8878 frame):
//
//   +5   4 B     magic 28 b5 2f fd
//   +9   u8      frame header descriptor 0xa0: Frame_Content_Size in 4 bytes, Single_Segment (window = content
//                size), no checksum, no dictionary
//   +10  u32 LE  Frame_Content_Size = shared + tail
//   +14  N B     the shared part's blocks, taken from a frame compressed once, Last_Block cleared on its last one
//   ...  3 B     block header: Last_Block 1, Raw, Block_Size = T         ... T B  the tail
//
// A raw block neither reads nor changes the entropy tables or repeat offsets the compressed blocks before it
// leave, and the shared blocks' matches reach back only into the shared bytes, so the frame decodes to
// shared ‖ tail. A tail ends in the stream's `seq` (stampSeq writes it when the transport takes the message): in
// gzip the CRC is then finished over those last bytes (frameCompressed leaves in the CRC slot the CRC of everything
// before them); in zstd nothing else depends on it.

export type MessageEncoding = 'identity' | 'gzip' | 'zstd';

/** Bytes of the seq field at the very end of a compressed message's tail: 0x09 tag, u64 LE (proto/wire-v2.ts). */
export const SEQ_FIELD_SZ = 9;
const SEQ_TAG = 0x09;

const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xff]);
const ZSTD_MAGIC = 0xfd2fb528;
/** FCS_Field_Size 4 (flag 2 in bits 7–6), Single_Segment (bit 5). */
const ZSTD_FHD = 0xa0;
const ZSTD_HEADER_SZ = 4 + 1 + 4;
const STORED_MAX = 0xffff;
/** A zstd block's content is at most 128 KiB (and the window, here the whole content). */
const ZSTD_BLOCK_MAX = 128 << 10;

// ---- what this runtime has ------------------------------------------------------------------------------------

type SyncCompress = (b: Buffer, o: object) => Buffer;
/** A node:zlib engine as OneShot holds it (its native handle is read at run time). */
type Engine = { on(event: 'error', listener: () => void): unknown };
interface ZstdApi {
  compressSync: SyncCompress;
  createCompress(o: object): Engine;
  endFlush: number;
  levelParam: number;
  contentSizeParam: number;
  checksumParam: number;
}

/** node:zlib's zstd (Node ≥ 22.15 and ≥ 23.8), or null. Read at run time: the typings are Node 20's. */
function zstdApi(): ZstdApi | null {
  const z = zlib as unknown as Record<string, unknown>;
  const c = zlib.constants as unknown as Record<string, number | undefined>;
  const compressSync = z.zstdCompressSync;
  const createCompress = z.createZstdCompress;
  const endFlush = c.ZSTD_e_end;
  const levelParam = c.ZSTD_c_compressionLevel;
  const contentSizeParam = c.ZSTD_c_contentSizeFlag;
  const checksumParam = c.ZSTD_c_checksumFlag;
  if (typeof compressSync !== 'function' || typeof createCompress !== 'function') return null;
  if (endFlush === undefined || levelParam === undefined || contentSizeParam === undefined || checksumParam === undefined) return null;
  return { compressSync: compressSync as SyncCompress, createCompress: createCompress as (o: object) => Engine, endFlush, levelParam, contentSizeParam, checksumParam };
}

const ZSTD = zstdApi();

/** Whether this runtime can write zstd (node:zlib has it from Node 22.15). */
export const zstdAvailable = ZSTD !== null;

/** What this server can send, best first: zstd where the runtime has it, gzip always. */
export function sendableEncodings(): readonly MessageEncoding[] {
  return zstdAvailable ? ['zstd', 'gzip'] : ['gzip'];
}

/**
 * The encoding for a stream's responses, from the client's `grpc-accept-encoding` (comma-separated, names
 * case-insensitive) read in the client's order: the first entry that is `identity` or one of `offered` wins;
 * identity when none is (or the header is absent). The order matters because grpc-js and gRPC C-core (Python,
 * C++, Ruby) send `identity,deflate,gzip` on every call whatever the application wants — not a request for
 * compression — and grpc-js 1.14 decompresses a stream's messages concurrently (one async gunzip each), which
 * loses messages that arrive just before the status (49 of 100 before a DATA_LOSS in our close-policy test).
 * Clients that name an encoding first (Go and Java with gzip registered send `gzip`; a client that lists what it
 * enabled) get it.
 */
export function chooseEncoding(acceptEncoding: string | undefined, offered: readonly MessageEncoding[]): MessageEncoding {
  if (acceptEncoding === undefined) return 'identity';
  for (const raw of acceptEncoding.split(',')) {
    const e = raw.trim().toLowerCase();
    if (e === 'identity') return 'identity';
    const hit = offered.find((o) => o === e);
    if (hit !== undefined) return hit;
  }
  return 'identity';
}

// ---- compressing a shared part once ----------------------------------------------------------------------------

/** A shared part compressed once, ready to be spliced with any stream's tail. */
export interface CompressedShared {
  readonly encoding: 'gzip' | 'zstd';
  /** gzip: the sync-flushed raw deflate stream; zstd: the blocks, the last one's Last_Block cleared. */
  readonly body: Buffer;
  /** Uncompressed length of the shared part. */
  readonly length: number;
  /** gzip: CRC-32 of the shared part. */
  readonly crc: number;
}

/** The internals of a node:zlib engine that one-call compression with a kept handle needs (checked at run time). */
interface RawHandle {
  writeSync(flush: number, input: Buffer, inOff: number, inLen: number, out: Buffer, outOff: number, outLen: number): void;
  reset(): void;
}

/**
 * One compressor of one encoding, its native handle kept between messages. node:zlib's sync API builds a stream
 * object per call, which costs more than compressing a ~1 KiB message (measured on Node 20/24: deflate 57–105 µs
 * per call against ~50 µs with a kept handle; zstd 58–68 µs against ~21 µs): so the handle is kept and driven
 * through its `writeSync`/`reset`, the calls node:zlib's own sync path makes. Those are internals; when a Node
 * version moves them, or a call fails, it falls back to the public sync API for good.
 */
class OneShot {
  private handle: RawHandle | null = null;
  private state: Uint32Array | null = null;
  private out = Buffer.allocUnsafe(16 << 10);

  constructor(
    private readonly flush: number,
    make: () => Engine,
    private readonly fallback: (b: Buffer) => Buffer,
  ) {
    try {
      const engine = make();
      engine.on('error', () => void (this.handle = null));
      const h = (engine as unknown as Record<string, unknown>)._handle;
      const st = (engine as unknown as Record<string, unknown>)._writeState;
      if (typeof h === 'object' && h !== null && typeof (h as RawHandle).writeSync === 'function' && typeof (h as RawHandle).reset === 'function' && st instanceof Uint32Array && st.length >= 2) {
        this.handle = h as RawHandle;
        this.state = st;
      }
    } catch {
      this.handle = null;
    }
  }

  compress(src: Buffer): Buffer {
    const h = this.handle;
    if (h === null) return this.fallback(src);
    const need = src.length + (src.length >> 3) + 256;
    if (this.out.length < need) this.out = Buffer.allocUnsafe(need);
    try {
      h.writeSync(this.flush, src, 0, src.length, this.out, 0, this.out.length);
      const availOut = this.state![0]!;
      const availIn = this.state![1]!;
      h.reset();
      // Everything taken, and room left (so nothing is still pending inside): one call was the whole message.
      if (availIn === 0 && availOut > 0) return Buffer.from(this.out.subarray(0, this.out.length - availOut));
    } catch {
      this.handle = null;
    }
    return this.fallback(src);
  }
}

/** Compresses shared parts, once each, into CompressedShared (or null where compression does not make it smaller). */
export class SharedCompressor {
  private gzip: OneShot | null = null;
  private zstd: OneShot | null = null;

  /** null: not smaller compressed (send it as identity), or zstd asked of a runtime without it. */
  compress(shared: Buffer, encoding: 'gzip' | 'zstd'): CompressedShared | null {
    if (encoding === 'gzip') {
      this.gzip ??= new OneShot(zlib.constants.Z_SYNC_FLUSH, () => zlib.createDeflateRaw({ level: 6 }), (b) => zlib.deflateRawSync(b, { level: 6, finishFlush: zlib.constants.Z_SYNC_FLUSH }));
      const body = this.gzip.compress(shared);
      if (body.length + GZIP_HEADER.length + 8 + 5 >= shared.length) return null;
      return { encoding, body, length: shared.length, crc: zlib.crc32(shared) };
    }
    if (ZSTD === null) return null;
    const params = { [ZSTD.levelParam]: 3, [ZSTD.contentSizeParam]: 0, [ZSTD.checksumParam]: 0 };
    this.zstd ??= new OneShot(ZSTD.endFlush, () => ZSTD.createCompress({ params }), (b) => ZSTD.compressSync(b, { params }));
    const body = zstdBlocks(this.zstd.compress(shared));
    if (body === null || body.length + ZSTD_HEADER_SZ + 3 >= shared.length) return null;
    return { encoding, body, length: shared.length, crc: 0 };
  }
}

/**
 * The blocks of one zstd frame with the last one's Last_Block bit cleared (a copy), or null when the bytes are not
 * one whole frame with at most a checksum after its last block (RFC 8878 §3.1.1).
 */
export function zstdBlocks(frame: Buffer): Buffer | null {
  if (frame.length < 6 || frame.readUInt32LE(0) !== ZSTD_MAGIC) return null;
  const fhd = frame[4]!;
  const fcsFlag = fhd >> 6;
  const single = (fhd >> 5) & 1;
  const checksum = (fhd >> 2) & 1;
  const dictSz = [0, 1, 2, 4][fhd & 3]!;
  const fcsSz = fcsFlag === 0 ? single : [0, 2, 4, 8][fcsFlag]!;
  let o = 5 + (single === 1 ? 0 : 1) + dictSz + fcsSz;
  const start = o;
  for (;;) {
    if (o + 3 > frame.length) return null;
    const hdr = frame[o]! | (frame[o + 1]! << 8) | (frame[o + 2]! << 16);
    const type = (hdr >> 1) & 3;
    if (type === 3) return null;
    const content = type === 1 ? 1 : hdr >>> 3;
    const next = o + 3 + content;
    if (next > frame.length) return null;
    if ((hdr & 1) === 1) {
      if (next + (checksum === 1 ? 4 : 0) !== frame.length) return null;
      const blocks = Buffer.from(frame.subarray(start, next));
      blocks[o - start] = frame[o]! & 0xfe;
      return blocks;
    }
    o = next;
  }
}

// ---- one stream's message ------------------------------------------------------------------------------------

/** CRC-32 (ISO-HDLC, reflected 0xEDB88320, as gzip and zlib.crc32) lookup table. */
const CRC_TABLE = (() => {
  const t = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  return t;
})();

/**
 * Continues a CRC-32 over b[start, end): for the few bytes of a stream's tail, where a call into zlib.crc32 costs
 * more than the bytes (measured at the hub: two native calls per message were most of gzip's per-stream cost).
 */
function crc32Tail(crc: number, b: Uint8Array, start: number, end: number): number {
  let c = ~crc;
  for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ b[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

/**
 * A framed gRPC message (flag 1) decoding to shared ‖ perStream ‖ 0x09 seq(u64 LE, 0 until stampCompressedSeq), or
 * null when the tail does not fit one stored block (64 KiB; never with the server's filter limits).
 */
export function frameCompressed(c: CompressedShared, perStream: Uint8Array): Buffer | null {
  const tail = perStream.length + SEQ_FIELD_SZ;
  if (c.encoding === 'gzip') {
    if (tail > STORED_MAX) return null;
    const len = GZIP_HEADER.length + c.body.length + 5 + tail + 8;
    const buf = Buffer.allocUnsafe(5 + len);
    buf[0] = 1;
    buf.writeUInt32BE(len, 1);
    let o = 5;
    o += GZIP_HEADER.copy(buf, o);
    o += c.body.copy(buf, o);
    buf[o] = 0x01;
    buf.writeUInt16LE(tail, o + 1);
    buf.writeUInt16LE(~tail & 0xffff, o + 3);
    o += 5;
    buf.set(perStream, o);
    o += perStream.length;
    buf[o] = SEQ_TAG;
    for (let i = o + 1; i < o + SEQ_FIELD_SZ; i++) buf[i] = 0; // (not Buffer.fill: its checks cost more than 8 stores)
    o += SEQ_FIELD_SZ;
    // Until the seq is stamped: the CRC of everything before the seq field (stampCompressedSeq finishes it).
    buf.writeUInt32LE(crc32Tail(c.crc, perStream, 0, perStream.length), o);
    buf.writeUInt32LE((c.length + tail) % 0x1_0000_0000, o + 4);
    return buf;
  }
  if (tail > ZSTD_BLOCK_MAX) return null;
  const len = ZSTD_HEADER_SZ + c.body.length + 3 + tail;
  const buf = Buffer.allocUnsafe(5 + len);
  buf[0] = 1;
  buf.writeUInt32BE(len, 1);
  buf.writeUInt32LE(ZSTD_MAGIC, 5);
  buf[9] = ZSTD_FHD;
  buf.writeUInt32LE(c.length + tail, 10);
  let o = 5 + ZSTD_HEADER_SZ;
  o += c.body.copy(buf, o);
  const hdr = 1 | (0 << 1) | (tail << 3); // Last_Block, Raw
  buf[o] = hdr & 0xff;
  buf[o + 1] = (hdr >>> 8) & 0xff;
  buf[o + 2] = (hdr >>> 16) & 0xff;
  o += 3;
  buf.set(perStream, o);
  o += perStream.length;
  buf[o] = SEQ_TAG;
  for (let i = o + 1; i < o + SEQ_FIELD_SZ; i++) buf[i] = 0; // (not Buffer.fill: its checks cost more than 8 stores)
  return buf;
}

/** Writes seq into a message of frameCompressed (once: the gzip CRC is finished from the value left in its slot). */
export function stampCompressedSeq(buf: Buffer, seq: number): void {
  const gzip = buf[5] === 0x1f && buf[6] === 0x8b;
  const end = gzip ? buf.length - 8 : buf.length;
  buf.writeUInt32LE(seq % 0x1_0000_0000, end - 8);
  buf.writeUInt32LE(Math.floor(seq / 0x1_0000_0000), end - 4);
  if (gzip) buf.writeUInt32LE(crc32Tail(buf.readUInt32LE(end), buf, end - SEQ_FIELD_SZ, end), end);
}

/** Decompresses one message body of `encoding` (tests and tools; the server never decompresses). */
export function decompressMessage(body: Buffer, encoding: MessageEncoding, maxBytes: number): Buffer {
  if (encoding === 'identity') return body;
  if (encoding === 'gzip') return zlib.gunzipSync(body, { maxOutputLength: maxBytes });
  const z = zlib as unknown as Record<string, unknown>;
  const d = z.zstdDecompressSync;
  if (typeof d !== 'function') throw new Error('this Node has no zstd (node:zlib has it from 22.15)');
  return (d as (b: Buffer, o: object) => Buffer)(body, { maxOutputLength: maxBytes });
}
