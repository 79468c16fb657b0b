import http2 from 'node:http2';
import { http2StreamOf } from './grpc-stream';

// Closing the connection of a grpc-js call after its status (a refusal the contract says ends the connection:
// errors.ts closesConnection). grpc-js has no per-connection API on the server, so this reaches the call's
// Node Http2Stream through grpc-stream.ts http2StreamOf, as call-reset.ts does; when a grpc-js upgrade moves its
// internals this returns false and the connection stays open (the status itself still went out).
//
// Order on the wire: the status, then GOAWAY (NO_ERROR), then the close. grpc-js sends the status from the
// stream's 'wantTrailers' event once everything written before it has left; our listener, added after grpc-js's,
// runs after the trailers are handed to nghttp2, and the GOAWAY of session.close() follows them. A status that
// cannot get through (the peer's window is shut) is not waited for beyond STATUS_WAIT_MS. session.close() alone
// would wait for every other stream of the connection to finish; those are ended CLOSE_GRACE_MS later by
// session.destroy(), which ends the socket after what is queued.

/** Longest wait for the status to be handed to nghttp2 before the connection goes anyway. */
const STATUS_WAIT_MS = 250;
/** Between GOAWAY and the forced close: lets GOAWAY and the trailers be written before the socket ends. */
const CLOSE_GRACE_MS = 50;

/** Call right after the status was given (call.emit('error', …)). */
export function closeConnectionAfterStatus(call: object): boolean {
  const stream = http2StreamOf(call);
  const session = stream?.session;
  if (stream === null || session === undefined) return false;
  let done = false;
  const go = (): void => {
    if (done) return;
    done = true;
    clearTimeout(cap);
    if (session.destroyed) return;
    if (!session.closed) session.close();
    setTimeout(() => {
      if (!session.destroyed) session.destroy(undefined, http2.constants.NGHTTP2_NO_ERROR);
    }, CLOSE_GRACE_MS).unref();
  };
  const cap = setTimeout(go, STATUS_WAIT_MS);
  cap.unref();
  // After grpc-js's own 'wantTrailers' listener has sent the trailers; setImmediate lets nghttp2 write them.
  stream.once('wantTrailers', () => setImmediate(go));
  stream.once('close', go);
  return true;
}
