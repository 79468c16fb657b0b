import http2 from 'node:http2';
import { http2StreamOf } from './grpc-stream';

// A status cannot overtake data: once a subscriber stops reading, its HTTP/2 send window is full and the
// trailers carrying our status wait behind the data forever. After a grace period the stream is reset
// (RST_STREAM CANCEL), which frees it and its buffers without waiting for the peer.
//
// grpc-js has no public per-call abort, so this reaches its internals through grpc-stream.ts http2StreamOf;
// when a grpc-js upgrade moves them, this returns false and the stream simply lingers until the connection
// goes (memory stays bounded either way: the subscriber's queue is already freed).

export function resetCall(call: object): boolean {
  const stream = http2StreamOf(call);
  if (stream === null) return false;
  if (!stream.closed && !stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
  return true;
}
