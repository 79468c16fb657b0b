import { Pool } from 'undici';
import type { Dispatcher } from 'undici';

// One upstream node over HTTP: an undici Pool (keep-alive connections, reused across requests; never a
// connection per request). `post` sends a body and collects the whole reply, bounded by `maxResponseBytes`, and
// reports failures as values: the caller decides about failover from the kind of failure.
//
// The reply is collected, not streamed, so a connection dropped mid-reply can still be answered with the
// contract's error (or failed over, for reads) instead of a truncated body the client cannot recognise.

export interface UpstreamEndpoint {
  /** HTTP(S) URL of the node's JSON-RPC endpoint. Never logged. */
  readonly http: string;
  /** WebSocket URL of the node, when it serves subscriptions. Never logged. */
  readonly ws?: string;
}

export type PostFailure = 'connect' | 'timeout' | 'dropped' | 'too_large';

export type PostResult =
  | { readonly ok: true; readonly status: number; readonly body: Buffer }
  | { readonly ok: false; readonly why: PostFailure; readonly sent: boolean };

export interface UpstreamOptions {
  /** Keep-alive connections to this upstream at most. */
  connections: number;
  /** Time to the reply's headers, and between body chunks. */
  timeoutMs: number;
  maxResponseBytes: number;
  /** Idle keep-alive sockets are closed after this; keep it below the node's own idle timeout. */
  keepAliveMs: number;
}

const JSON_HEADERS = { 'content-type': 'application/json' };

const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

class TooLarge extends Error {
  readonly code = 'TOO_LARGE';
}

export class Upstream {
  private readonly pool: Pool;
  private readonly path: string;
  inflight = 0;

  constructor(readonly index: number, readonly endpoint: UpstreamEndpoint, private readonly opts: UpstreamOptions) {
    const u = new URL(endpoint.http);
    this.path = `${u.pathname}${u.search}` || '/';
    this.pool = new Pool(u.origin, {
      connections: opts.connections,
      pipelining: 1,
      keepAliveTimeout: opts.keepAliveMs,
      keepAliveMaxTimeout: opts.keepAliveMs,
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
      connect: { timeout: Math.min(opts.timeoutMs, 5_000) },
    });
  }

  /** A name for logs and metrics: never the URL (it may carry a key). */
  get name(): string {
    return `upstream#${this.index}`;
  }

  post(body: Buffer | string, timeoutMs?: number): Promise<PostResult> {
    this.inflight++;
    return new Promise<PostResult>((resolve) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let status = 0;
      let started = false;
      const max = this.opts.maxResponseBytes;
      const settle = (r: PostResult): void => {
        this.inflight--;
        resolve(r);
      };
      // undici's legacy handler shape on purpose: the newer one (onRequestStart…) is adapted back to this one
      // inside undici, with the response headers parsed into an object per reply, which this path never reads.
      let abort: (e: Error) => void = () => undefined;
      const handler: Dispatcher.DispatchHandler = {
        onConnect(a) {
          abort = a;
        },
        onHeaders(statusCode) {
          started = true;
          status = statusCode;
          return true;
        },
        onData(chunk) {
          size += chunk.length;
          if (size > max) {
            abort(new TooLarge('reply too large'));
            return false;
          }
          chunks.push(chunk);
          return true;
        },
        onComplete() {
          settle({ ok: true, status, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
        },
        onError(err) {
          const code = (err as { code?: string }).code ?? '';
          let why: PostFailure = 'dropped';
          if (err instanceof TooLarge) why = 'too_large';
          else if (TIMEOUT_CODES.has(code)) why = 'timeout';
          else if (!started && CONNECT_CODES.has(code)) why = 'connect';
          // A refused connection never carried the request; anything else may have reached the node.
          settle({ ok: false, why, sent: why !== 'connect' });
        },
      };
      const t = timeoutMs ?? this.opts.timeoutMs;
      this.pool.dispatch({ method: 'POST', path: this.path, headers: JSON_HEADERS, body, idempotent: false, headersTimeout: t, bodyTimeout: t }, handler);
    });
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}
