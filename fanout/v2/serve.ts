import type { RentalRegistry } from '../../bus/rental-registry';
import type { MessageEncoding } from '../../proto/grpc-compression';
import { authenticate, peerAddress } from '../auth';
import type { FanoutConfig } from '../config';
import { isStreamError, streamError, type StreamError } from '../errors';
import type { Sink } from '../subscriber-queue';
import type { V2Hub } from './hub';
import { decodeV2Request, type V2Request } from './request';
import type { V2Session } from './session';

// One v2 Subscribe call as the v2 hub sees it, whichever server carries it: identity, a sink for framed updates,
// an end with a registry status, and request messages as bytes.

// The path is the client's (proto/service-v2.ts): one name for both sides.
export { V2_SUBSCRIBE_PATH } from '../../proto/service-v2';

export interface V2Call {
  readonly peer: string;
  readonly token: string | undefined;
  /**
   * The response encoding the transport chose from the client's grpc-accept-encoding (proto/grpc-compression.ts
   * chooseEncoding) and announces in sendHeaders()'s grpc-encoding; absent = identity.
   */
  readonly encoding?: MessageEncoding;
  sendHeaders(): void;
  sink(): Sink;
  end(e?: StreamError): void;
  /** Request messages (bytes); `gone` when the client cancels or its connection goes. */
  listen(onMessage: (m: Buffer) => void, gone: () => void): void;
}

export type OpenV2Calls = Map<V2Session, V2Call>;

export function serveV2(call: V2Call, cfg: FanoutConfig, hub: V2Hub, rentals: RentalRegistry, open: OpenV2Calls): void {
  call.sendHeaders();
  const auth = authenticate(cfg.auth, rentals, call.peer, call.token);
  if (!auth.ok) return call.end(auth.error);
  const sink = call.sink();
  let opened: V2Session | undefined;
  const session = hub.open(
    {
      write: (b) => sink.write(b),
      once: (event, listener) => sink.once(event, listener),
      end: (e) => {
        if (opened !== undefined) open.delete(opened);
        call.end(e);
      },
    },
    auth.rental,
    { connection: call.peer, ip: peerAddress(call.peer) },
    call.encoding ?? 'identity',
  );
  if (isStreamError(session)) return call.end(session);
  opened = session;
  if (session.isEnded) return;
  open.set(session, call);
  call.listen(
    (bytes) => {
      let req: V2Request;
      try {
        req = decodeV2Request(bytes);
      } catch (err) {
        return session.fail(streamError('invalidRequest', { why: `does not decode as meridian.stream.v2.SubscribeRequest (${err instanceof Error ? err.message : String(err)})` }));
      }
      session.handle(req);
    },
    () => {
      open.delete(session);
      session.clientGone();
    },
  );
}

/** A rental deleted or downgraded takes its open v2 streams with it. */
export function recheckV2Callers(cfg: FanoutConfig, rentals: RentalRegistry, open: OpenV2Calls): void {
  for (const [session, call] of open) {
    const r = authenticate(cfg.auth, rentals, call.peer, call.token);
    if (!r.ok) session.fail(r.error);
  }
}
