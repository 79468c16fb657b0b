import net from 'node:net';
import { encodeHeaderBlock, HpackDecoder, type HeaderField } from '../../../fanout/h2/hpack';
import { frame, PREFACE, settingsFrame } from './raw-peer';

// The client end of an HTTP/2 connection written by hand, for protocol tests of the fanout's own server: it
// writes exactly the bytes a test asks for (valid or not), records every frame the server sends, joins and
// decodes header blocks per stream, and, unless told otherwise, acks SETTINGS and gives back every DATA byte
// as window at once. Frame layout (RFC 9113 §4.1): length u24 | type u8 | flags u8 | R + stream id u31.

const FRAME_HEADER_SZ = 9;
const STREAM_MASK = 0x7fffffff;
const GRPC_PREFIX_SZ = 5;

export const T = { DATA: 0, HEADERS: 1, PRIORITY: 2, RST_STREAM: 3, SETTINGS: 4, PUSH_PROMISE: 5, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
export const F = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 } as const;
export const S = { HEADER_TABLE_SIZE: 1, ENABLE_PUSH: 2, MAX_CONCURRENT_STREAMS: 3, INITIAL_WINDOW_SIZE: 4, MAX_FRAME_SIZE: 5, MAX_HEADER_LIST_SIZE: 6 } as const;
export const E = { NO_ERROR: 0, PROTOCOL_ERROR: 1, FLOW_CONTROL_ERROR: 3, FRAME_SIZE_ERROR: 6, REFUSED_STREAM: 7, CANCEL: 8, COMPRESSION_ERROR: 9, ENHANCE_YOUR_CALM: 0xb } as const;

export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

export interface Goaway {
  lastStreamId: number;
  code: number;
  debug: string;
}

/** What the server sent on one stream. */
export interface StreamLog {
  /** Decoded header blocks in order (response headers, trailers). */
  blocks: HeaderField[][];
  data: Buffer[];
  dataFrames: number[];
  ended: boolean;
  rstCode: number | undefined;
}

export function windowUpdate(streamId: number, increment: number): Buffer {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(increment >>> 0, 0);
  return frame(T.WINDOW_UPDATE, 0, streamId, p);
}

export function rstStream(streamId: number, code: number): Buffer {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(code, 0);
  return frame(T.RST_STREAM, 0, streamId, p);
}

export function ping(payload: Buffer, ack = false): Buffer {
  return frame(T.PING, ack ? F.ACK : 0, 0, payload);
}

/** A gRPC message: flag ‖ u32 length ‖ body. */
export function grpcMessage(body: Buffer, flag = 0, announced = body.length): Buffer {
  const out = Buffer.alloc(GRPC_PREFIX_SZ + body.length);
  out[0] = flag;
  out.writeUInt32BE(announced >>> 0, 1);
  body.copy(out, GRPC_PREFIX_SZ);
  return out;
}

/** A gRPC request's header list for `path`. */
export function grpcRequestFields(path: string, extra: ReadonlyArray<readonly [string, string]> = []): Array<readonly [string, string]> {
  return [
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', path],
    [':authority', 'localhost'],
    ['content-type', 'application/grpc'],
    ['te', 'trailers'],
    ...extra,
  ];
}

export function headersFrame(streamId: number, fields: ReadonlyArray<readonly [string, string]>, flags: number = F.END_HEADERS): Buffer {
  return frame(T.HEADERS, flags, streamId, encodeHeaderBlock(fields));
}

/** Cuts a stream's DATA at gRPC prefixes; the bodies, and what is left over. */
export function grpcMessages(data: Buffer): { bodies: Buffer[]; rest: number } {
  const bodies: Buffer[] = [];
  let off = 0;
  while (data.length - off >= GRPC_PREFIX_SZ) {
    const len = data.readUInt32BE(off + 1);
    if (data.length - off - GRPC_PREFIX_SZ < len) break;
    bodies.push(data.subarray(off + GRPC_PREFIX_SZ, off + GRPC_PREFIX_SZ + len));
    off += GRPC_PREFIX_SZ + len;
  }
  return { bodies, rest: data.length - off };
}

export interface RawClientOptions {
  /** Written first instead of the preface and an empty SETTINGS (null: nothing). */
  opening?: Buffer | null;
  /** Settings of the first SETTINGS frame (ignored when `opening` is given). */
  settings?: ReadonlyArray<readonly [number, number]>;
  /** Give every DATA byte back as stream and connection window at once (default true). */
  autoWindow?: boolean;
}

export class RawH2Client {
  readonly frames: Frame[] = [];
  readonly streams = new Map<number, StreamLog>();
  closed = false;
  readonly whenClosed: Promise<void>;
  /** Bytes received, frames or not. */
  received = 0;
  private buf: Buffer = Buffer.alloc(0);
  private readonly decoder = new HpackDecoder();
  private open: { streamId: number; flags: number; parts: Buffer[] } | null = null;
  private waiters: Array<() => void> = [];
  private fences = 0;
  autoWindow: boolean;

  private constructor(
    readonly socket: net.Socket,
    opts: RawClientOptions,
  ) {
    this.autoWindow = opts.autoWindow ?? true;
    socket.on('error', () => undefined); // 'close' follows
    this.whenClosed = new Promise((resolve) => {
      socket.on('close', () => {
        this.closed = true;
        this.wake();
        resolve();
      });
    });
    socket.on('data', (chunk: Buffer) => this.onBytes(chunk));
  }

  static async connect(port: number, opts: RawClientOptions = {}): Promise<RawH2Client> {
    const socket = net.connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    const c = new RawH2Client(socket, opts);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const opening = opts.opening === undefined ? Buffer.concat([PREFACE, settingsFrame(opts.settings ?? [])]) : opts.opening;
    if (opening !== null) socket.write(opening);
    return c;
  }

  write(b: Buffer): void {
    if (!this.socket.destroyed) this.socket.write(b);
  }

  send(type: number, flags: number, streamId: number, payload: Buffer): void {
    this.write(frame(type, flags, streamId, payload));
  }

  /** HEADERS for a gRPC request on `streamId`. */
  request(streamId: number, path: string, extra: ReadonlyArray<readonly [string, string]> = [], endStream = false): void {
    this.write(headersFrame(streamId, grpcRequestFields(path, extra), F.END_HEADERS | (endStream ? F.END_STREAM : 0)));
  }

  data(streamId: number, payload: Buffer, endStream = false): void {
    this.send(T.DATA, endStream ? F.END_STREAM : 0, streamId, payload);
  }

  stream(id: number): StreamLog {
    let s = this.streams.get(id);
    if (s === undefined) {
      s = { blocks: [], data: [], dataFrames: [], ended: false, rstCode: undefined };
      this.streams.set(id, s);
    }
    return s;
  }

  /** Bytes of DATA received on a stream. */
  dataOf(id: number): Buffer {
    return Buffer.concat(this.stream(id).data);
  }

  /** A header field of the stream's last header block. */
  lastField(id: number, name: string): string | undefined {
    const blocks = this.stream(id).blocks;
    return blocks[blocks.length - 1]?.find(([n]) => n === name)?.[1];
  }

  /** Resolves once pred holds (checked after every frame and on close); rejects after timeoutMs. */
  until(pred: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
    if (pred()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (pred()) {
          clearTimeout(timer);
          resolve();
        } else this.waiters.push(check);
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== check);
        reject(new Error(`raw client: no ${what} within ${timeoutMs} ms; frames ${this.describe()}`));
      }, timeoutMs);
      this.waiters.push(check);
    });
  }

  /** The first frame (from index `from`) for which pred holds. */
  async frame(pred: (f: Frame) => boolean, timeoutMs = 5000, from = 0): Promise<Frame> {
    let found: Frame | undefined;
    await this.until(() => (found = this.frames.slice(from).find(pred)) !== undefined, timeoutMs, 'matching frame');
    return found!;
  }

  async goaway(timeoutMs = 5000): Promise<Goaway> {
    const f = await this.frame((x) => x.type === T.GOAWAY, timeoutMs);
    return { lastStreamId: f.payload.readUInt32BE(0) & STREAM_MASK, code: f.payload.readUInt32BE(4), debug: f.payload.subarray(8).toString('latin1') };
  }

  /**
   * A fence: resolves once every frame the server had queued for this connection when it read the fence has
   * arrived, answers to everything written before it included (the server reads in order). It is a PING and
   * its ACK, twice: the server writes control frames ahead of DATA within one flush, so DATA queued together
   * with the first ACK may arrive just after it; the second ACK goes out in a later write, behind all of that.
   */
  async fence(timeoutMs = 5000): Promise<void> {
    for (let round = 0; round < 2; round++) {
      const payload = Buffer.from(`fence${String(this.fences++ % 1000).padStart(3, '0')}`, 'latin1');
      const from = this.frames.length;
      this.write(ping(payload));
      await this.frame((x) => x.type === T.PING && (x.flags & F.ACK) !== 0 && x.payload.equals(payload), timeoutMs, from);
    }
  }

  async waitClosed(timeoutMs = 5000): Promise<void> {
    await this.until(() => this.closed, timeoutMs, 'close');
  }

  /** Streams ended (END_STREAM or RST_STREAM) by the server. */
  async streamEnded(id: number, timeoutMs = 5000): Promise<StreamLog> {
    const s = this.stream(id);
    await this.until(() => s.ended || s.rstCode !== undefined, timeoutMs, `end of stream ${id}`);
    return s;
  }

  destroy(): void {
    this.socket.destroy();
  }

  describe(): string {
    return this.frames.map((f) => `${f.type}/${f.flags}/${f.streamId}/${f.payload.length}`).join(' ') + (this.closed ? ' closed' : '');
  }

  private wake(): void {
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w();
  }

  private onBytes(chunk: Buffer): void {
    this.received += chunk.length;
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    while (this.buf.length >= FRAME_HEADER_SZ) {
      const len = this.buf.readUIntBE(0, 3);
      if (this.buf.length < FRAME_HEADER_SZ + len) break;
      const f: Frame = {
        type: this.buf[3]!,
        flags: this.buf[4]!,
        streamId: this.buf.readUInt32BE(5) & STREAM_MASK,
        payload: Buffer.from(this.buf.subarray(FRAME_HEADER_SZ, FRAME_HEADER_SZ + len)),
      };
      this.buf = this.buf.subarray(FRAME_HEADER_SZ + len);
      this.frames.push(f);
      this.onFrame(f);
    }
    this.wake();
  }

  private onFrame(f: Frame): void {
    switch (f.type) {
      case T.SETTINGS:
        if ((f.flags & F.ACK) === 0) this.write(frame(T.SETTINGS, F.ACK, 0, Buffer.alloc(0)));
        return;
      case T.DATA: {
        const s = this.stream(f.streamId);
        s.data.push(f.payload);
        s.dataFrames.push(f.payload.length);
        if ((f.flags & F.END_STREAM) !== 0) s.ended = true;
        if (this.autoWindow && f.payload.length > 0) this.write(Buffer.concat([windowUpdate(f.streamId, f.payload.length), windowUpdate(0, f.payload.length)]));
        return;
      }
      case T.HEADERS:
        this.open = { streamId: f.streamId, flags: f.flags, parts: [f.payload] };
        break;
      case T.CONTINUATION:
        if (this.open === null) throw new Error('raw client: CONTINUATION without HEADERS');
        this.open.parts.push(f.payload);
        break;
      case T.RST_STREAM:
        this.stream(f.streamId).rstCode = f.payload.readUInt32BE(0);
        return;
      default:
        return;
    }
    if ((f.flags & F.END_HEADERS) === 0 || this.open === null) return;
    const { streamId, flags, parts } = this.open;
    this.open = null;
    const fields = this.decoder.decode(Buffer.concat(parts), 1 << 20);
    if (!Array.isArray(fields)) throw new Error(`raw client: server header block does not decode: ${fields.error}`);
    const s = this.stream(streamId);
    s.blocks.push(fields);
    if ((flags & F.END_STREAM) !== 0) s.ended = true;
  }
}
