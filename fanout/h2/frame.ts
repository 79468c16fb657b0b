// HTTP/2 frames (RFC 9113 §4, §6): the pure codec of the fanout's own HTTP/2 server. Every frame starts with
// the same 9-byte header:
//
//   +-----------------------------------------------+
//   |                 Length (24)                   |  0x00  payload length, ≤ the receiver's MAX_FRAME_SIZE
//   +---------------+---------------+---------------+
//   |   Type (8)    |   Flags (8)   |                  0x03, 0x04
//   +-+-------------+---------------+-------------------------------+
//   |R|                 Stream Identifier (31)                      |  0x05  (R: reserved, ignored)
//   +=+=============================================================+
//   |                   Frame Payload (0...)                      ...  0x09
//   +---------------------------------------------------------------+
//
// Builders write complete frames; the reader (connection.ts) reads headers in place with readFrameHeader.

export const FRAME_HEADER_SZ = 9;
const LENGTH_OFF = 0;
const TYPE_OFF = 3;
const FLAGS_OFF = 4;
const STREAM_OFF = 5;
const STREAM_ID_MASK = 0x7fff_ffff;

/** The client connection preface (RFC 9113 §3.4), before its first SETTINGS frame. */
export const CLIENT_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

export const Flag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

/** SETTINGS parameters (RFC 9113 §6.5.2): 16-bit id, 32-bit value. */
export const Setting = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;
export const SETTING_SZ = 6;

/** Error codes (RFC 9113 §7). */
export const H2Error = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  ENHANCE_YOUR_CALM: 0xb,
} as const;

export const DEFAULT_WINDOW = 65_535;
export const MAX_WINDOW = 0x7fff_ffff;
export const MIN_MAX_FRAME_SIZE = 16_384;
export const MAX_MAX_FRAME_SIZE = 16_777_215;
export const PING_PAYLOAD_SZ = 8;
export const WINDOW_UPDATE_SZ = 4;
export const RST_STREAM_SZ = 4;
export const PRIORITY_SZ = 5;
const GOAWAY_FIXED_SZ = 8;

export interface FrameHeader {
  length: number;
  type: number;
  flags: number;
  streamId: number;
}

export function readFrameHeader(b: Buffer, off: number, into: FrameHeader): FrameHeader {
  into.length = (b[off + LENGTH_OFF]! << 16) | (b[off + LENGTH_OFF + 1]! << 8) | b[off + LENGTH_OFF + 2]!;
  into.type = b[off + TYPE_OFF]!;
  into.flags = b[off + FLAGS_OFF]!;
  into.streamId = b.readUInt32BE(off + STREAM_OFF) & STREAM_ID_MASK;
  return into;
}

export function writeFrameHeader(b: Buffer, off: number, length: number, type: number, flags: number, streamId: number): number {
  b[off + LENGTH_OFF] = length >>> 16;
  b[off + LENGTH_OFF + 1] = (length >>> 8) & 0xff;
  b[off + LENGTH_OFF + 2] = length & 0xff;
  b[off + TYPE_OFF] = type;
  b[off + FLAGS_OFF] = flags;
  b.writeUInt32BE(streamId & STREAM_ID_MASK, off + STREAM_OFF);
  return off + FRAME_HEADER_SZ;
}

function frame(type: number, flags: number, streamId: number, payload: Buffer | null): Buffer {
  const len = payload === null ? 0 : payload.length;
  const out = Buffer.allocUnsafe(FRAME_HEADER_SZ + len);
  writeFrameHeader(out, 0, len, type, flags, streamId);
  if (payload !== null) payload.copy(out, FRAME_HEADER_SZ);
  return out;
}

export function settingsFrame(params: ReadonlyArray<readonly [id: number, value: number]>): Buffer {
  const p = Buffer.allocUnsafe(params.length * SETTING_SZ);
  params.forEach(([id, value], i) => {
    p.writeUInt16BE(id, i * SETTING_SZ);
    p.writeUInt32BE(value >>> 0, i * SETTING_SZ + 2);
  });
  return frame(FrameType.SETTINGS, 0, 0, p);
}

export const SETTINGS_ACK = frame(FrameType.SETTINGS, Flag.ACK, 0, null);

export function pingFrame(payload: Buffer, ack: boolean): Buffer {
  return frame(FrameType.PING, ack ? Flag.ACK : 0, 0, payload);
}

export function windowUpdateFrame(streamId: number, increment: number): Buffer {
  const p = Buffer.allocUnsafe(WINDOW_UPDATE_SZ);
  p.writeUInt32BE(increment & STREAM_ID_MASK, 0);
  return frame(FrameType.WINDOW_UPDATE, 0, streamId, p);
}

export function rstStreamFrame(streamId: number, code: number): Buffer {
  const p = Buffer.allocUnsafe(RST_STREAM_SZ);
  p.writeUInt32BE(code, 0);
  return frame(FrameType.RST_STREAM, 0, streamId, p);
}

export function goawayFrame(lastStreamId: number, code: number, debug = ''): Buffer {
  const d = Buffer.from(debug, 'latin1');
  const p = Buffer.allocUnsafe(GOAWAY_FIXED_SZ + d.length);
  p.writeUInt32BE(lastStreamId & STREAM_ID_MASK, 0);
  p.writeUInt32BE(code, 4);
  d.copy(p, GOAWAY_FIXED_SZ);
  return frame(FrameType.GOAWAY, 0, 0, p);
}

/** A header block as HEADERS plus as many CONTINUATION frames as the peer's MAX_FRAME_SIZE needs. */
export function headerFrames(streamId: number, block: Buffer, endStream: boolean, maxFrameSize: number): Buffer {
  const frames = Math.max(1, Math.ceil(block.length / maxFrameSize));
  const out = Buffer.allocUnsafe(block.length + frames * FRAME_HEADER_SZ);
  let off = 0;
  for (let i = 0, at = 0; i < frames; i++) {
    const len = Math.min(maxFrameSize, block.length - at);
    const type = i === 0 ? FrameType.HEADERS : FrameType.CONTINUATION;
    const flags = (i === frames - 1 ? Flag.END_HEADERS : 0) | (i === 0 && endStream ? Flag.END_STREAM : 0);
    off = writeFrameHeader(out, off, len, type, flags, streamId);
    off += block.copy(out, off, at, at + len);
    at += len;
  }
  return out;
}

/**
 * The payload of a HEADERS or DATA frame without padding and (HEADERS) priority fields, as [start, end) within
 * `b`; null when the padding does not fit (PROTOCOL_ERROR).
 */
export function unpaddedRange(b: Buffer, start: number, length: number, flags: number, type: number): [number, number] | null {
  let s = start;
  let e = start + length;
  if ((flags & Flag.PADDED) !== 0) {
    if (length < 1) return null;
    const pad = b[s]!;
    s += 1;
    if (pad > e - s) return null;
    e -= pad;
  }
  if (type === FrameType.HEADERS && (flags & Flag.PRIORITY) !== 0) {
    if (e - s < PRIORITY_SZ) return null;
    s += PRIORITY_SZ;
  }
  return [s, e];
}
