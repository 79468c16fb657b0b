// One error table per surface (STYLE habit 7). A row is the whole answer: HTTP status, JSON-RPC code and the
// message prefix clients match on; a support sentence may follow the prefix (`detail`). The core answers its
// own failures (bad body, upstream trouble, overload) through the kinds below, so every surface's table must
// carry them; the surface adds its own kinds (auth, metering) and its policies return those keys.

export interface ErrorRow {
  /** HTTP status of the response (or of the WebSocket upgrade refusal). */
  readonly status: number;
  /** JSON-RPC error code. */
  readonly code: number;
  /** Message prefix; clients match status + code + this prefix together. */
  readonly message: string;
}

/**
 * Kinds the core itself answers with:
 *   invalidBody    — unparsable JSON, not an object or array, an empty batch, wrong content-type
 *   bodyTooLarge   — request body over the configured limit
 *   notPost        — any HTTP method but POST (or a plain HTTP request on the WebSocket port)
 *   batchFailed    — a batch the gateway cannot proxy (upstream failure, timeout, reply not an array of the right length)
 *   upstreamFailed — a single request whose upstream failed (connection, timeout, dropped or unreadable reply)
 *   unavailable    — no healthy upstream
 *   overloaded     — the gateway's own caps (in-flight requests, WebSocket connections) are reached
 */
export type CoreErrorKind = 'invalidBody' | 'bodyTooLarge' | 'notPost' | 'batchFailed' | 'upstreamFailed' | 'unavailable' | 'overloaded';

export type ErrorTable<K extends string> = Readonly<Record<K | CoreErrorKind, ErrorRow>>;

/** A refusal chosen by a policy (auth, meter): the table key plus an optional support sentence. */
export interface Refusal<K extends string> {
  readonly ok: false;
  readonly error: K | CoreErrorKind;
  readonly detail?: string;
}

export function refuse<K extends string>(error: K | CoreErrorKind, detail?: string): Refusal<K> {
  return detail === undefined ? { ok: false, error } : { ok: false, error, detail };
}

/** The message text: the row's prefix, then the support sentence if any. */
export function errorMessage(row: ErrorRow, detail?: string): string {
  return detail === undefined || detail === '' ? row.message : `${row.message}: ${detail}`;
}

/** A JSON-RPC 2.0 error response. `id` is the request's id when there was exactly one request, else null. */
export function errorJson(row: ErrorRow, detail?: string, id: unknown = null): string {
  const safeId = typeof id === 'string' || typeof id === 'number' ? id : null;
  return `{"jsonrpc":"2.0","error":{"code":${row.code},"message":${JSON.stringify(errorMessage(row, detail))}},"id":${JSON.stringify(safeId)}}`;
}
