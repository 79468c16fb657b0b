import http2 from 'node:http2';
import { serializeSubscribeRequest, subscribePath, type StreamServiceName, type SubscribeRequestLike } from '../../proto/service';

// A gRPC client on bare node:http2, for load: it frames requests itself and, on the receiving side, only cuts
// the byte stream at the gRPC length prefixes — no protobuf decode — so the fanout under test, not the client,
// is what a measurement sees. Also the way to hold a stream without reading it (pause()), and to put many
// streams on one connection on purpose (grpc-js decides connections by itself).

/** gRPC message prefix: compressed flag (1 byte) ‖ length (u32 BE). */
const PREFIX_SZ = 5;

/** A SubscribeRequest as the bytes of one gRPC message on the wire (uncompressed prefix ‖ body). */
export function subscribeFrame(r: SubscribeRequestLike): Buffer {
  const body = serializeSubscribeRequest(r);
  const frame = Buffer.allocUnsafe(PREFIX_SZ + body.length);
  frame[0] = 0;
  frame.writeUInt32BE(body.length, 1);
  body.copy(frame, PREFIX_SZ);
  return frame;
}

export interface RawStatus {
  code: number;
  details: string;
  /** Every trailer (and trailers-only header) the server sent. */
  trailers: http2.IncomingHttpHeaders;
}

export class RawConnection {
  private constructor(readonly session: http2.ClientHttp2Session) {}

  /** `connectionWindow`: the connection-level receive window to announce (a load client reads fast). */
  static connect(address: string, settings: http2.Settings = {}, connectionWindow?: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const session = http2.connect(`http://${address}`, { settings });
      session.once('connect', () => {
        if (connectionWindow !== undefined) session.setLocalWindowSize(connectionWindow);
        session.off('error', reject);
        session.on('error', () => undefined); // surfaces per stream as a status
        resolve(new RawConnection(session));
      });
      session.once('error', reject);
    });
  }

  /**
   * Opens a Subscribe stream; `onMessage` sees each response's bytes (a view valid only during the call). `headers`:
   * extra request headers (e.g. x-token).
   */
  open(onMessage?: (msg: Buffer) => void, service: StreamServiceName = 'arpc.StreamService', headers: http2.OutgoingHttpHeaders = {}): RawStream {
    const req = this.session.request({ ':method': 'POST', ':path': subscribePath(service), 'content-type': 'application/grpc', te: 'trailers', ...headers }, { endStream: false });
    return new RawStream(req, onMessage);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.session.closed || this.session.destroyed) return resolve();
      this.session.close(() => resolve());
      setTimeout(() => {
        this.session.destroy();
        resolve();
      }, 2000).unref();
    });
  }

  /** Drops the connection at once (what a vanished client does). */
  destroy(): void {
    this.session.destroy();
  }
}

export class RawStream {
  /** Complete responses received. */
  messages = 0;
  bytes = 0;
  status: RawStatus | undefined;
  readonly ended: Promise<RawStatus>;
  private pending: Buffer | null = null;

  constructor(
    readonly req: http2.ClientHttp2Stream,
    private readonly onMessage?: (msg: Buffer) => void,
  ) {
    let headers: http2.IncomingHttpHeaders = {};
    req.on('response', (h) => (headers = h));
    req.on('data', (chunk: Buffer) => this.onData(chunk));
    this.ended = new Promise((resolve) => {
      const finish = (t: http2.IncomingHttpHeaders): void => {
        if (this.status !== undefined) return;
        const all = { ...headers, ...t };
        const code = all['grpc-status'] === undefined ? -1 : Number(all['grpc-status']);
        this.status = { code, details: decodeURIComponent(String(all['grpc-message'] ?? '')), trailers: all };
        resolve(this.status);
      };
      req.on('trailers', finish);
      req.on('close', () => finish({}));
      req.on('error', () => undefined);
    });
  }

  send(r: SubscribeRequestLike): void {
    this.req.write(subscribeFrame(r));
  }

  /** Stops reading: the stream's HTTP/2 window fills and the server has to queue (or drop) what follows. */
  pause(): void {
    this.req.pause();
  }

  resume(): void {
    this.req.resume();
  }

  cancel(): void {
    this.req.close(http2.constants.NGHTTP2_CANCEL);
  }

  /** Cuts the byte stream at the length prefixes; only a message split across chunks is copied. */
  private onData(chunk: Buffer): void {
    let b = chunk;
    if (this.pending !== null) {
      b = Buffer.concat([this.pending, chunk]);
      this.pending = null;
    }
    let o = 0;
    while (b.length - o >= PREFIX_SZ) {
      const len = b.readUInt32BE(o + 1);
      if (b.length - o - PREFIX_SZ < len) break;
      this.messages++;
      this.bytes += len;
      this.onMessage?.(b.subarray(o + PREFIX_SZ, o + PREFIX_SZ + len));
      o += PREFIX_SZ + len;
    }
    if (o < b.length) this.pending = b.subarray(o);
  }
}
