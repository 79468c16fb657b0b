import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Log } from '../../infra/base/log';
import { errorJson, type CoreErrorKind, type ErrorTable } from './errors';
import { batchReplyLength, isJsonContentType, looksLikeJsonObject, parseRequest, type RpcCall } from './jsonrpc';
import { clientIp, pathOf, type TrustedProxies } from './client-ip';
import type { AdmitResult, AuthResult, ClientInfo, Meter, UsageHook } from './policy';
import type { SendResult, UpstreamPool } from './upstream-pool';
import type { ProxyMetrics } from './proxy-metrics';

// The HTTP side of the proxy: POST JSON-RPC (single or batch) → auth → meter → one upstream → the reply as the
// node sent it (status and bytes unchanged). Written on node:http directly: the hot path needs the raw body
// bytes (forwarded without re-encoding) and a single write of the upstream's bytes; koa's context, body
// parsing and middleware chain add allocation per request and nothing this path uses.

export interface HttpProxyOptions<C, K extends string> {
  errors: ErrorTable<K>;
  pool: UpstreamPool;
  auth: (client: ClientInfo) => AuthResult<C, K>;
  meter: Meter<C, K>;
  usage?: UsageHook<C>;
  neverRetry: ReadonlySet<string>;
  trusted: TrustedProxies;
  maxBodyBytes: number;
  maxBatch: number;
  /** Requests being handled at once at most (all clients together); beyond it, `overloaded`. */
  maxInflight: number;
  metrics: ProxyMetrics;
  log: Log;
}

const JSON_CT = 'application/json';

export function httpProxy<C, K extends string>(o: HttpProxyOptions<C, K>): (req: IncomingMessage, res: ServerResponse) => void {
  let inflight = 0;

  const fail = (res: ServerResponse, kind: K | CoreErrorKind, detail?: string, id?: unknown, close = false): void => {
    const row = o.errors[kind];
    const body = errorJson(row, detail, id);
    o.metrics.errors.inc();
    if (res.headersSent || res.destroyed) return;
    const headers = ['content-type', JSON_CT, 'content-length', String(Buffer.byteLength(body))];
    if (close) headers.push('connection', 'close');
    res.writeHead(row.status, headers);
    res.end(body);
  };

  const reply = (res: ServerResponse, status: number, body: Buffer): void => {
    if (res.destroyed) return;
    res.writeHead(status, ['content-type', JSON_CT, 'content-length', String(body.length)]);
    res.end(body);
  };

  const finish = (caller: C, calls: readonly RpcCall[], batch: boolean, res: ServerResponse, units: readonly number[], r: SendResult): void => {
    if (r.ok) {
      reply(res, r.status, r.body);
      o.usage?.(caller, calls, units, 'ok', 'http');
      return;
    }
    o.metrics.upstreamFailures.inc();
    if (r.why === 'unavailable') fail(res, 'unavailable', undefined, batch ? null : calls[0]!.id);
    else if (batch) fail(res, 'batchFailed', describe(r.why));
    else fail(res, 'upstreamFailed', describe(r.why), calls[0]!.id);
    o.usage?.(caller, calls, units, 'error', 'http');
  };

  const forward = async (caller: C, calls: readonly RpcCall[], batch: boolean, body: Buffer, res: ServerResponse, admitted: AdmitResult<K>): Promise<void> => {
    if (!admitted.ok) {
      fail(res, admitted.error, admitted.detail, batch ? null : calls[0]!.id);
      o.usage?.(caller, calls, calls.map(() => 0), 'rate_limited', 'http');
      return;
    }
    try {
      if (res.destroyed) {
        // The client left while the request waited for admission (a scan slot): nobody would read the reply.
        o.usage?.(caller, calls, admitted.units, 'error', 'http');
        return;
      }
      let retry = true;
      for (const c of calls) if (o.neverRetry.has(c.method)) retry = false;
      const accept = batch ? (_s: number, b: Buffer) => batchReplyLength(b) === calls.length : (_s: number, b: Buffer) => looksLikeJsonObject(b);
      const r = await o.pool.send(body, { retry, accept });
      finish(caller, calls, batch, res, admitted.units, r);
    } finally {
      admitted.release?.();
    }
  };

  const onBody = (caller: C, body: Buffer, res: ServerResponse): void => {
    const parsed = parseRequest(body, o.maxBatch);
    if (!parsed.ok) return fail(res, 'invalidBody', parsed.why);
    const { calls, batch } = parsed;
    const admitted = o.meter.admit(caller, calls, 'http');
    if (admitted instanceof Promise) {
      admitted.then((a) => forward(caller, calls, batch, body, res, a)).catch((e: unknown) => internal(res, e));
    } else {
      forward(caller, calls, batch, body, res, admitted).catch((e: unknown) => internal(res, e));
    }
  };

  const internal = (res: ServerResponse, e: unknown): void => {
    o.log.error({ err: e }, 'request handling failed');
    fail(res, 'upstreamFailed', 'internal error');
  };

  return (req, res) => {
    o.metrics.requests.inc();
    if (inflight >= o.maxInflight) {
      fail(res, 'overloaded', 'too many requests in flight', undefined, true);
      return;
    }
    inflight++;
    res.once('close', () => inflight--);
    if (req.method !== 'POST') return fail(res, 'notPost', 'use POST with a JSON-RPC 2.0 body');
    const a = o.auth({ ip: clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], o.trusted), path: pathOf(req.url), transport: 'http' });
    if (!a.ok) return fail(res, a.error, a.detail);
    if (!isJsonContentType(req.headers['content-type'])) return fail(res, 'invalidBody', 'content-type must be application/json');
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > o.maxBodyBytes) return fail(res, 'bodyTooLarge', `larger than ${o.maxBodyBytes} bytes`, undefined, true);
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > o.maxBodyBytes) {
        over = true;
        chunks.length = 0;
        fail(res, 'bodyTooLarge', `larger than ${o.maxBodyBytes} bytes`, undefined, true);
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (over) return;
      onBody(a.caller, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), res);
    });
    req.on('error', () => undefined); // client went away mid-body; 'close' on res accounts for it
  };
}

function describe(why: string): string {
  switch (why) {
    case 'connect':
      return 'upstream connection failed';
    case 'timeout':
      return 'upstream timed out';
    case 'dropped':
      return 'upstream connection dropped';
    case 'too_large':
      return 'upstream reply too large';
    case 'invalid':
      return 'upstream reply unreadable';
    default:
      return why;
  }
}
