import type { Outcome } from '../../bus/topics/usage-events';
import type { Refusal } from './errors';
import type { RpcCall } from './jsonrpc';

// The seams a surface plugs into the proxy core. Each is called per request (never cached), so rentals added
// or removed take effect on the next request.
//
//   auth(client)               → who is calling (a caller value of the surface's choosing), or a refusal row
//   meter.admit(caller, calls) → how many units each call costs, or a refusal row (nothing charged then);
//                                may be async (waiting for a concurrency slot), sync on the fast path
//   usage(caller, calls, …)    → one report per metered request, after the outcome is known
//
// The order for HTTP: auth → content-type → body → parse → admit → upstream → usage.
// For WebSocket: auth on the upgrade; then admit → forward → usage per client message.

export type Transport = 'http' | 'ws';

export interface ClientInfo {
  /** The caller's address: the socket peer, or from X-Forwarded-For when the peer is a trusted proxy. */
  readonly ip: string;
  /** The request path without query string ("/" for standard endpoints; a dedicated endpoint's credential otherwise). */
  readonly path: string;
  readonly transport: Transport;
}

export type AuthResult<C, K extends string> = { readonly ok: true; readonly caller: C } | Refusal<K>;

export interface Admission {
  readonly ok: true;
  /** Units charged per call, same order as the calls. */
  readonly units: readonly number[];
  /** Gives back what the request holds while in flight (scan slots); called once the reply is sent. */
  readonly release?: () => void;
}

export type AdmitResult<K extends string> = Admission | Refusal<K>;

export interface Meter<C, K extends string> {
  admit(caller: C, calls: readonly RpcCall[], transport: Transport): AdmitResult<K> | Promise<AdmitResult<K>>;
}

/**
 * A metered request ended. `units` is what admit charged (all zero when it refused). Outcome: ok (the upstream
 * answered, node errors included), rate_limited (the meter refused), error (no upstream answered usably).
 */
export type UsageHook<C> = (caller: C, calls: readonly RpcCall[], units: readonly number[], outcome: Outcome, transport: Transport) => void;

/** A meter that admits everything at one unit per call. */
export function unmetered<C>(): Meter<C, never> {
  return { admit: (_c, calls) => ({ ok: true, units: calls.map(() => 1) }) };
}
