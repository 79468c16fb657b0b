// A minimal JSON-RPC 2.0 client over fetch's keep-alive pool: one POST per call, each with its own timeout. The one
// client for a chain node (the local one in single-machine runs, the leader schedule's source in ingest). Errors
// carry the method and the kind of failure or the node's code/message, never the URL (it may hold a key).

export class JsonRpcError extends Error {
  constructor(
    readonly method: string,
    /** The node's JSON-RPC error code; undefined when the call failed before an answer (network, timeout, HTTP status). */
    readonly code: number | undefined,
    message: string,
  ) {
    super(`${method}: ${message}`);
    this.name = 'JsonRpcError';
  }
}

export type JsonRpcCall = <T = unknown>(method: string, params?: unknown[]) => Promise<T>;

const JSON_RPC_TIMEOUT_MS = 10_000;

export function jsonRpc(url: string, timeoutMs = JSON_RPC_TIMEOUT_MS): JsonRpcCall {
  let id = 0;
  return async <T>(method: string, params: unknown[] = []): Promise<T> => {
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (e) {
      throw new JsonRpcError(method, undefined, `request failed (${e instanceof Error ? e.name : 'error'})`);
    }
    if (!res.ok) throw new JsonRpcError(method, undefined, `HTTP ${res.status}`);
    const body = (await res.json()) as { result?: T; error?: { code?: number; message?: string } };
    if (body.error !== undefined) throw new JsonRpcError(method, body.error.code, `RPC error ${String(body.error.code)} ${body.error.message ?? ''}`.trim());
    return body.result as T;
  };
}
