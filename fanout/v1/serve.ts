import type { RentalRegistry } from '../../bus/rental-registry';
import { authenticate, peerAddress } from '../auth';
import type { FanoutConfig } from '../config';
import { isStreamError, type StreamError } from '../errors';
import type { Fanout } from './hub';
import type { SubscribeUpdate } from './request';
import type { Session, SessionPort } from './session';
import type { Sink } from '../subscriber-queue';

// One Subscribe call as the stream handler sees it, whichever server carries it (the own HTTP/2 server,
// transport/h2.ts, or grpc-js, transport/grpc-js.ts): the caller's identity, a sink for framed responses, an
// end with a registry status, and the requests as they come.

export interface SubscribeCall {
  /** `address:port`, as grpc-js's getPeer() reports it. */
  readonly peer: string;
  /** The x-token header, if any. */
  readonly token: string | undefined;
  /** Response headers now: some clients wait for them before their first write (compat.md). */
  sendHeaders(): void;
  /** Where responses go once headers are sent: the transport's own stream when it can take them directly. */
  sink(): Sink;
  /**
   * Ends the call: OK without an error, else the error's status and trailers; an error that closes the connection
   * (errors.ts closesConnection: the PPS refusal) is followed by GOAWAY and the close of the call's connection.
   */
  end(e?: StreamError): void;
  /** Decoded requests; `gone` when the client cancels or its connection goes (not after our own end). */
  listen(onRequest: (u: SubscribeUpdate) => void, gone: () => void): void;
}

/** Open calls, kept for re-checking their callers when rentals change. */
export type OpenCalls = Map<Session, SubscribeCall>;

export function serveSubscribe(call: SubscribeCall, cfg: FanoutConfig, hub: Fanout, rentals: RentalRegistry, open: OpenCalls): void {
  call.sendHeaders();
  const auth = authenticate(cfg.auth, rentals, call.peer, call.token);
  if (!auth.ok) {
    hub.refused(auth.error);
    call.end(auth.error);
    return;
  }
  let opened: Session | undefined;
  const sink = call.sink();
  const port: SessionPort = {
    write: (b) => sink.write(b),
    once: (event, listener) => sink.once(event, listener),
    end: (e) => {
      if (opened !== undefined) open.delete(opened);
      call.end(e);
    },
  };
  const session = hub.open(port, auth.rental, { connection: call.peer, ip: peerAddress(call.peer) });
  if (isStreamError(session)) {
    call.end(session);
    return;
  }
  opened = session;
  if (session.isEnded) return; // the hub is closing: already ended with UNAVAILABLE
  open.set(session, call);
  // A half-close (the client ends its side) keeps the stream: filters stay and data keeps flowing until the
  // client cancels or the server ends it. Published clients half-close only when they are done anyway.
  call.listen(
    (req) => session.handle(req),
    () => {
      open.delete(session);
      session.clientGone();
    },
  );
}

/**
 * A rental deleted or downgraded takes its open streams with it, with the status a new stream would get (and, for
 * a PPS refusal, the connection with it, as at open: the transports' end()).
 */
export function recheckCallers(cfg: FanoutConfig, rentals: RentalRegistry, open: OpenCalls): void {
  // Every way a session ends takes it out of `open` (its port's end, or the client going).
  for (const [session, call] of open) {
    const r = authenticate(cfg.auth, rentals, call.peer, call.token);
    if (!r.ok) session.fail(r.error);
  }
}

/** The error's trailers as HTTP/2 header fields (`-bin` values base64). */
export function errorTrailers(e: StreamError): Array<readonly [string, string]> {
  const out: Array<readonly [string, string]> = [];
  for (const [k, v] of Object.entries(e.metadata.getMap())) out.push([k, typeof v === 'string' ? v : Buffer.from(v).toString('base64')]);
  return out;
}
