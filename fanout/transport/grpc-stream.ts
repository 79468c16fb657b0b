import type { Http2Stream } from 'node:http2';
import type { Sink } from '../subscriber-queue';

// grpc-js keeps the HTTP/2 stream of a call to itself, and its per-message write path (an object-mode
// Writable of 16 messages, one http2 write with its own callback per message) is both the bulk of the
// per-message CPU and, under load with many streams that stop reading, a stall: we observed every stream of
// the process stop completing writes at once (peers' windows open, pings still answered) until the streams
// that had stopped reading were gone — readers included. So response messages bypass it: after grpc-js has
// sent the response headers (handler: sendMetadata first), messages are framed here and written straight to
// the Node Http2Stream; grpc-js still reads requests and sends the status (its trailers follow our data on
// the same stream, in order).
//
// The stream is reached through grpc-js internals: ServerDuplexStreamImpl.call (the intercepting call) →
// .nextCall (the base call) → .stream (the Node Http2Stream). Every step is checked at run time; when a
// grpc-js upgrade moves them, http2StreamOf returns null and callers fall back to call.write().

function field(o: unknown, name: string): unknown {
  return typeof o === 'object' && o !== null && name in o ? (o as Record<string, unknown>)[name] : undefined;
}

function isHttp2Stream(s: unknown): s is Http2Stream {
  return typeof field(s, 'close') === 'function' && typeof field(s, 'closed') === 'boolean' && typeof field(s, 'respond') === 'function' && typeof field(s, 'cork') === 'function';
}

const noDelaySet = new WeakSet<object>();

/**
 * Turns Nagle off on the stream's connection (once per connection). Responses leave in few, larger writes;
 * with Nagle a small tail write waits for the peer's delayed ACK (~40 ms) — measured as a 20 ms p50 at 4,000
 * tx/s and a flow-control stall at 20 connections. grpc-js does not set it.
 */
export function setNoDelay(stream: Http2Stream): void {
  const session = stream.session;
  if (session === undefined || noDelaySet.has(session)) return;
  noDelaySet.add(session);
  // session.socket is a proxy that refuses socket manipulation; Node keeps the socket itself under a symbol.
  const sym = Object.getOwnPropertySymbols(session).find((k) => k.description === 'socket');
  const socket: unknown = sym === undefined ? undefined : (session as unknown as Record<symbol, unknown>)[sym];
  const set = field(socket, 'setNoDelay');
  if (typeof set === 'function') (set as (on: boolean) => unknown).call(socket, true);
}

/** The Node Http2Stream under a grpc-js server call, or null. */
export function http2StreamOf(call: object): Http2Stream | null {
  let cur: unknown = field(call, 'call');
  for (let depth = 0; depth < 4 && cur !== undefined; depth++) {
    const stream = field(cur, 'stream');
    if (isHttp2Stream(stream)) return stream;
    cur = field(cur, 'nextCall');
  }
  return null;
}

/**
 * Writes gRPC messages that already carry their length prefix (encoder.ts framedEncoder) to an Http2Stream.
 * Everything written in one turn of the event loop is corked and leaves in one writev (several messages per
 * DATA frame, one native write instead of one per message). write() returns false once the stream buffers
 * more than its high-water mark; 'drain' follows.
 */
export class FramedSink implements Sink {
  private corked = false;

  constructor(private readonly stream: Http2Stream) {}

  write(framed: Buffer): boolean {
    const s = this.stream;
    // The call is over (reset, cancelled, or our status is on its way): the session hears of it from grpc-js.
    if (s.destroyed || s.writableEnded) return true;
    if (!this.corked) {
      this.corked = true;
      s.cork();
      process.nextTick(this.uncork);
    }
    return s.write(framed);
  }

  once(event: 'drain', listener: () => void): unknown {
    return this.stream.once(event, listener);
  }

  private readonly uncork = (): void => {
    this.corked = false;
    this.stream.uncork();
  };
}
