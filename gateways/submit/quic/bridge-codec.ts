// Frames between the QUIC terminator (Rust, `terminator/src/bridge.rs`) and this process, over one Unix
// socket. Every frame: u32 LE body length, then the body, whose first byte is the type. Pure: no I/O here.
//
// terminator → node
//   0x00 READY    addr utf8 ("host:port")                          the UDP port is bound
//   0x01 OPEN     conn u32, ipLen u8, ip utf8, client cert DER      a handshake completed: answer VERDICT
//   0x02 TX       conn u32, req u32, kind u8, bytes                  kind 1 stream (answer STATUS), 2 uni, 3 datagram
//   0x03 CLOSED   conn u32, reason u8                                see CLOSE_REASONS
//   0x04 EVENT    code u8                                            see TERMINATOR_EVENTS
// node → terminator
//   0x81 VERDICT  conn u32, code u32 (0 = admitted), reason utf8     otherwise: close with that application code
//   0x82 STATUS   req u32, status u8                                 the stream's answer becomes [0x01, status]

export const TX_KINDS = { 1: 'stream', 2: 'uni', 3: 'datagram' } as const;
export type TxKind = (typeof TX_KINDS)[keyof typeof TX_KINDS];
export const CLOSE_REASONS = ['peer', 'idle_timeout', 'local', 'error'] as const;
export type CloseReason = (typeof CLOSE_REASONS)[number];
export const TERMINATOR_EVENTS = { 1: 'handshake_rate_limited', 2: 'connection_cap_reached', 3: 'stream_limit_reached', 4: 'handshake_failed' } as const;
export type TerminatorEvent = (typeof TERMINATOR_EVENTS)[keyof typeof TERMINATOR_EVENTS];

export type InFrame =
  | { type: 'ready'; addr: string }
  | { type: 'open'; conn: number; ip: string; cert: Buffer }
  | { type: 'tx'; conn: number; req: number; kind: TxKind; bytes: Buffer }
  | { type: 'closed'; conn: number; reason: CloseReason }
  | { type: 'event'; event: TerminatorEvent }
  | { type: 'bad'; why: string };

/** Decodes one frame body (without its length prefix). Buffers in the result are views into `body`. */
export function decodeFrame(body: Buffer): InFrame {
  if (body.length === 0) return { type: 'bad', why: 'empty frame' };
  switch (body[0]) {
    case 0x00:
      return { type: 'ready', addr: body.toString('utf8', 1) };
    case 0x01: {
      if (body.length < 6) return { type: 'bad', why: 'short OPEN' };
      const ipLen = body[5]!;
      if (body.length < 6 + ipLen) return { type: 'bad', why: 'short OPEN' };
      return { type: 'open', conn: body.readUInt32LE(1), ip: body.toString('utf8', 6, 6 + ipLen), cert: body.subarray(6 + ipLen) };
    }
    case 0x02: {
      if (body.length < 10) return { type: 'bad', why: 'short TX' };
      const kind = TX_KINDS[body[9] as keyof typeof TX_KINDS];
      if (kind === undefined) return { type: 'bad', why: `unknown TX kind ${body[9]}` };
      return { type: 'tx', conn: body.readUInt32LE(1), req: body.readUInt32LE(5), kind, bytes: body.subarray(10) };
    }
    case 0x03: {
      if (body.length !== 6) return { type: 'bad', why: 'bad CLOSED' };
      return { type: 'closed', conn: body.readUInt32LE(1), reason: CLOSE_REASONS[body[5]!] ?? 'error' };
    }
    case 0x04: {
      const event = TERMINATOR_EVENTS[body[1] as keyof typeof TERMINATOR_EVENTS];
      return event === undefined ? { type: 'bad', why: `unknown EVENT ${body[1]}` } : { type: 'event', event };
    }
    default:
      return { type: 'bad', why: `unknown frame type ${body[0]}` };
  }
}

export function encodeVerdict(conn: number, code: number, reason: string): Buffer {
  const r = Buffer.from(reason, 'utf8');
  const f = Buffer.allocUnsafe(4 + 9 + r.length);
  f.writeUInt32LE(9 + r.length, 0);
  f[4] = 0x81;
  f.writeUInt32LE(conn, 5);
  f.writeUInt32LE(code, 9);
  r.copy(f, 13);
  return f;
}

/** Writes a STATUS frame into `out` at `at` (10 bytes), so a burst of answers shares one buffer and one write. */
export function writeStatus(out: Buffer, at: number, req: number, status: number): number {
  out.writeUInt32LE(6, at);
  out[at + 4] = 0x82;
  out.writeUInt32LE(req, at + 5);
  out[at + 9] = status;
  return at + 10;
}
export const STATUS_FRAME_BYTES = 10;

/**
 * Splits a byte stream into frame bodies. Feed it each chunk; it calls `onFrame` per complete body (a view
 * valid only during the call) and keeps at most one partial frame. A length above `maxFrame` is a broken peer.
 */
export class FrameReader {
  private pending: Buffer | null = null;
  constructor(private readonly maxFrame: number, private readonly onFrame: (body: Buffer) => void) {}

  push(chunk: Buffer): void {
    const buf = this.pending === null ? chunk : Buffer.concat([this.pending, chunk]);
    this.pending = null;
    let at = 0;
    while (buf.length - at >= 4) {
      const n = buf.readUInt32LE(at);
      if (n === 0 || n > this.maxFrame) throw new Error(`bridge frame of ${n} bytes (max ${this.maxFrame})`);
      if (buf.length - at - 4 < n) break;
      this.onFrame(buf.subarray(at + 4, at + 4 + n));
      at += 4 + n;
    }
    if (at < buf.length) this.pending = Buffer.from(buf.subarray(at)); // copy: the chunk's memory is reused
  }
}
