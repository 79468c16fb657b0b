// A route is one way a transaction leaves the service: today each configured chain RPC node (rpc-route.ts);
// a leader's TPU over QUIC (tpu/tpu-route.ts); later a block engine, beside them. The forwarder (forwarder.ts) offers every
// accepted transaction to every route; each route reports what became of its attempt, and that outcome feeds
// the route's metrics and the transaction's trace (never the client's answer: acceptance is dispatch).

export interface RouteOk {
  ok: true;
  /** Time from dispatch to the route's answer. */
  ms: number;
  /** `tpu`: the identities (base58 public keys) of the leaders the transaction was handed to. */
  leaders?: string[];
}

export interface RouteFailed {
  ok: false;
  /** Short, URL-free: `http 503`, `rpc error`, `timeout`, or an error class name. */
  error: string;
  ms: number;
  /** `tpu`: the identities of the leaders it was meant for. */
  leaders?: string[];
}

export type RouteOutcome = RouteOk | RouteFailed;

export interface Route {
  /** Shown in metrics labels, logs and traces (so never a URL: one may hold a credential). */
  readonly name: string;
  /**
   * Dispatches the serialized transaction; null, synchronously, when the route cannot take it now (at its
   * in-flight cap), so the pipeline can answer at once when no route took it. The promise never rejects.
   */
  send(tx: Buffer): Promise<RouteOutcome> | null;
  close(): Promise<void>;
}
