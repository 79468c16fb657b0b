// A minimal JSON-RPC 2.0 client for a chain node (the local one in single-machine runs): one POST per call over
// fetch's keep-alive pool. Errors carry the method and the node's code/message, never the URL (it may hold a key).

export class ChainRpcError extends Error {
  constructor(
    readonly method: string,
    readonly code: number | undefined,
    message: string,
  ) {
    super(`${method}: ${message}`);
    this.name = 'ChainRpcError';
  }
}

export type ChainCall = <T = unknown>(method: string, params?: unknown[]) => Promise<T>;

export function chainRpc(url: string, timeoutMs = 10_000): ChainCall {
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
      throw new ChainRpcError(method, undefined, `request failed (${e instanceof Error ? e.name : 'error'})`);
    }
    if (!res.ok) throw new ChainRpcError(method, undefined, `HTTP ${res.status}`);
    const body = (await res.json()) as { result?: T; error?: { code?: number; message?: string } };
    if (body.error !== undefined) throw new ChainRpcError(method, body.error.code, `RPC error ${String(body.error.code)} ${body.error.message ?? ''}`.trim());
    return body.result as T;
  };
}
