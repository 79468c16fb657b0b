import { Pool } from 'undici';
import type { Route, RouteOutcome } from './route';

// The route through one chain RPC node: `sendTransaction` with skipPreflight and maxRetries 0, over a keep-alive
// undici pool. No retries here (undici's Pool does not retry a request): re-driving is the client's choice.

export interface RpcRouteOptions {
  name: string;
  /** Never logged or shown: it may hold a credential. */
  url: string;
  connections: number;
  /** Requests in flight at most; past it send() gives null. */
  maxInFlight: number;
  timeoutMs: number;
}

export class RpcRoute implements Route {
  readonly name: string;
  private readonly pool: Pool;
  private readonly path: string;
  private inFlight = 0;

  constructor(private readonly opts: RpcRouteOptions) {
    this.name = opts.name;
    const u = new URL(opts.url);
    this.path = `${u.pathname}${u.search}`;
    this.pool = new Pool(u.origin, { connections: opts.connections, keepAliveTimeout: 30_000, headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs });
  }

  send(tx: Buffer): Promise<RouteOutcome> | null {
    if (this.inFlight >= this.opts.maxInFlight) return null;
    this.inFlight++;
    return this.post(`{"jsonrpc":"2.0","id":1,"method":"sendTransaction","params":["${tx.toString('base64')}",{"encoding":"base64","skipPreflight":true,"maxRetries":0}]}`);
  }

  private async post(body: string): Promise<RouteOutcome> {
    const start = performance.now();
    try {
      const res = await this.pool.request({ path: this.path, method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const text = await res.body.text();
      const ms = performance.now() - start;
      if (res.statusCode !== 200) return { ok: false, error: `http ${res.statusCode}`, ms };
      if (text.includes('"error"')) {
        // The node's code only: its message may echo transaction data, and traces are customer-visible.
        const code = /"code"\s*:\s*(-?\d{1,6})/.exec(text);
        return { ok: false, error: code === null ? 'rpc error' : `rpc error ${code[1]}`, ms };
      }
      return { ok: true, ms };
    } catch (e) {
      // The error's code (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT, …) says what happened; its message may name the host.
      const { name, code } = e as Error & { code?: unknown };
      const what = typeof code === 'string' && /^[A-Z_]{2,40}$/.test(code) ? code : name;
      return { ok: false, error: /TIMEOUT/i.test(what) ? 'timeout' : what, ms: performance.now() - start };
    } finally {
      this.inFlight--;
    }
  }

  async close(): Promise<void> {
    await this.pool.close().catch(() => undefined);
  }
}
