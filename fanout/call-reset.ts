import http2 from 'node:http2';

// A status cannot overtake data: once a subscriber stops reading, its HTTP/2 send window is full and the
// trailers carrying our status wait behind the data forever. After a grace period the stream is reset
// (RST_STREAM CANCEL), which frees it and its buffers without waiting for the peer.
//
// grpc-js has no public per-call abort, so this reaches its internals: ServerDuplexStreamImpl.call (the
// intercepting call) → .nextCall (the base call) → .stream (the Node Http2Stream). Every step is checked at
// run time; when a grpc-js upgrade moves them, this returns false and the stream simply lingers until the
// connection goes (memory stays bounded either way: the subscriber's queue is already freed).

interface ResettableStream {
  close(code?: number): void;
  closed: boolean;
  destroyed: boolean;
}

function field(o: unknown, name: string): unknown {
  return typeof o === 'object' && o !== null && name in o ? (o as Record<string, unknown>)[name] : undefined;
}

function isResettable(s: unknown): s is ResettableStream {
  return typeof field(s, 'close') === 'function' && typeof field(s, 'closed') === 'boolean' && typeof field(s, 'respond') === 'function';
}

export function resetCall(call: object): boolean {
  let cur: unknown = field(call, 'call');
  for (let depth = 0; depth < 4 && cur !== undefined; depth++) {
    const stream = field(cur, 'stream');
    if (isResettable(stream)) {
      if (!stream.closed && !stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
      return true;
    }
    cur = field(cur, 'nextCall');
  }
  return false;
}
