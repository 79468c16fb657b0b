import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer, type RawData } from 'ws';
import type { Log } from '../../infra/base/log';
import { errorJson, type CoreErrorKind, type ErrorTable } from './errors';
import { parseRequest, type RpcCall } from './jsonrpc';
import { clientIp, pathOf, type TrustedProxies } from './client-ip';
import type { AdmitResult, AuthResult, ClientInfo, Meter, UsageHook } from './policy';
import type { UpstreamPool } from './upstream-pool';
import type { ProxyMetrics } from './proxy-metrics';

// WebSocket pass-through. An upgrade is authenticated like an HTTP request; a refusal is an HTTP response on
// the upgrade (the row's status, the JSON-RPC error as body). An accepted client gets its own upstream
// WebSocket, opened before the client's upgrade completes (so "no upstream" is a 503 on the upgrade, not a
// socket that opens and dies). Then:
//   - client → upstream: each message is metered (every call in it, like HTTP) and forwarded as received; a
//     refused message is answered on the socket with the row's JSON-RPC error and not forwarded. Messages keep
//     their order even when an admission waits (later ones queue behind it, bounded);
//   - upstream → client: forwarded as received (no parse, no re-encode), in order;
//   - either side closing closes the other (same code where it may be sent);
//   - a client that does not read: when its unsent bytes exceed `maxBufferedBytes`, it is closed with
//     1013 "slow consumer" (Try Again Later) instead of buffering without bound.

export const SLOW_CONSUMER_CLOSE = 1013;
export const UPSTREAM_GONE_CLOSE = 1011;

export interface WsProxyOptions<C, K extends string> {
  errors: ErrorTable<K>;
  pool: UpstreamPool;
  auth: (client: ClientInfo) => AuthResult<C, K>;
  meter: Meter<C, K>;
  usage?: UsageHook<C>;
  trusted: TrustedProxies;
  /** Largest message either way. */
  maxPayload: number;
  maxBatch: number;
  /** Unsent bytes to one client at most before it is closed as a slow consumer. */
  maxBufferedBytes: number;
  /** Client messages waiting behind a pending admission at most. */
  maxQueuedMessages: number;
  /** Proxied connections at most (all clients); beyond, the upgrade gets `overloaded`. */
  maxConnections: number;
  handshakeTimeoutMs: number;
  metrics: ProxyMetrics;
  log: Log;
}

export interface WsProxy {
  onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Closes every proxied connection (1001 going away). */
  closeAll(): void;
}

/** Codes a peer may send in a close frame; others (1005, 1006, 1015, out of range) become `fallback`. */
function sendable(code: number, fallback: number): number {
  if ((code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999)) return code;
  return fallback;
}

export function wsProxy<C, K extends string>(o: WsProxyOptions<C, K>): WsProxy {
  const wss = new WebSocketServer({ noServer: true, maxPayload: o.maxPayload, perMessageDeflate: false, clientTracking: false });
  const open = new Set<WebSocket>();

  const refuseUpgrade = (socket: Duplex, kind: K | CoreErrorKind, detail?: string): void => {
    const row = o.errors[kind];
    o.metrics.errors.inc();
    const body = errorJson(row, detail);
    if (socket.destroyed) return;
    socket.end(
      `HTTP/1.1 ${row.status} ${STATUS_CODES[row.status] ?? 'Error'}\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  };

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => undefined);
    if (open.size >= o.maxConnections) return refuseUpgrade(socket, 'overloaded', 'too many WebSocket connections');
    const a = o.auth({ ip: clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], o.trusted), path: pathOf(req.url), transport: 'ws' });
    if (!a.ok) return refuseUpgrade(socket, a.error, a.detail);
    const caller = a.caller;
    const target = o.pool.pickWs();
    if (target === undefined) return refuseUpgrade(socket, 'unavailable');
    const upstream = new WebSocket(target.url, { perMessageDeflate: false, maxPayload: o.maxPayload, handshakeTimeout: o.handshakeTimeoutMs });
    let settled = false;
    const clientGone = (): void => {
      if (!settled) {
        settled = true;
        upstream.terminate();
      }
    };
    socket.once('close', clientGone);
    upstream.once('error', (e) => {
      if (settled) return;
      settled = true;
      socket.off('close', clientGone);
      o.pool.markDown(target.index, 'websocket connect failed');
      o.log.warn({ err: e.message }, 'upstream websocket connect failed');
      refuseUpgrade(socket, 'unavailable', 'upstream WebSocket not reachable');
    });
    upstream.once('open', () => {
      if (settled) return;
      settled = true;
      socket.off('close', clientGone);
      wss.handleUpgrade(req, socket, head, (client) => pipe(caller, client, upstream));
    });
  };

  const pipe = (caller: C, client: WebSocket, upstream: WebSocket): void => {
    open.add(client);
    o.metrics.wsConnections.inc();
    let closed = false;
    const closeBoth = (clientCode: number, upstreamCode: number, reason: string): void => {
      if (closed) return;
      closed = true;
      open.delete(client);
      o.metrics.wsConnections.dec();
      queue.length = 0;
      if (client.readyState === WebSocket.OPEN) client.close(clientCode, reason);
      else client.terminate();
      if (upstream.readyState === WebSocket.OPEN) upstream.close(upstreamCode, reason);
      else upstream.terminate();
    };

    // Everything the client is sent goes through here: node messages and the gateway's own refusals alike, so a
    // client that sends without reading cannot pile up refusals either.
    const toClient = (data: Buffer | string, isBinary: boolean): void => {
      if (closed) return;
      const len = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
      if (client.bufferedAmount + len > o.maxBufferedBytes) {
        o.metrics.wsSlowClosed.inc();
        closeBoth(SLOW_CONSUMER_CLOSE, 1000, 'slow consumer');
        // The close frame queues behind what the client has not read yet; a client that reads nothing more must not
        // hold the socket (and those bytes) for ws's own 30 s close timeout.
        setTimeout(() => client.terminate(), 5_000).unref();
        return;
      }
      client.send(data, { binary: isBinary });
    };
    const toUpstream = (data: Buffer, isBinary: boolean): void => {
      // The node stopped reading: do not buffer this client's messages for it without bound.
      if (upstream.bufferedAmount + data.length > o.maxBufferedBytes) return closeBoth(UPSTREAM_GONE_CLOSE, 1000, 'upstream not reading');
      upstream.send(data, { binary: isBinary });
    };

    // Upstream → client, verbatim.
    upstream.on('message', (data: RawData, isBinary: boolean) => toClient(data as Buffer, isBinary));

    // Client → upstream, metered, in order.
    const queue: Array<{ data: Buffer; isBinary: boolean }> = [];
    let waiting = false;
    const deliver = (data: Buffer, isBinary: boolean, calls: readonly RpcCall[], admitted: AdmitResult<K>): void => {
      if (!admitted.ok) {
        if (closed) return;
        const row = o.errors[admitted.error];
        o.metrics.errors.inc();
        toClient(errorJson(row, admitted.detail, calls.length === 1 ? calls[0]!.id : null), false);
        o.usage?.(caller, calls, calls.map(() => 0), 'rate_limited', 'ws');
        return;
      }
      // Slots are held only while the message is handed over (the reply is not correlated on a socket).
      admitted.release?.();
      if (closed) return;
      toUpstream(data, isBinary);
      o.usage?.(caller, calls, admitted.units, 'ok', 'ws');
    };
    // Binary frames are parsed and metered like text ones: a node may well accept JSON in either, and an
    // unmetered path would be a way around the limits.
    const handle = (data: Buffer, isBinary: boolean): void => {
      const parsed = parseRequest(data, o.maxBatch);
      if (!parsed.ok) {
        o.metrics.errors.inc();
        toClient(errorJson(o.errors.invalidBody, parsed.why), false);
        return;
      }
      const admitted = o.meter.admit(caller, parsed.calls, 'ws');
      if (!(admitted instanceof Promise)) return deliver(data, isBinary, parsed.calls, admitted);
      waiting = true;
      admitted
        .then((a) => deliver(data, isBinary, parsed.calls, a))
        .catch((e: unknown) => o.log.error({ err: e }, 'websocket admission failed'))
        .finally(() => {
          waiting = false;
          while (!waiting && queue.length > 0) {
            const next = queue.shift()!;
            handle(next.data, next.isBinary);
          }
        });
    };
    client.on('message', (data: RawData, isBinary: boolean) => {
      if (closed) return;
      o.metrics.wsMessages.inc();
      const buf = data as Buffer;
      if (waiting) {
        if (queue.length >= o.maxQueuedMessages) return closeBoth(1008, 1000, 'too many messages waiting');
        queue.push({ data: buf, isBinary });
        return;
      }
      handle(buf, isBinary);
    });

    client.on('close', (code, reason) => closeBoth(1000, sendable(code, 1000), reason.toString()));
    upstream.on('close', (code, reason) => closeBoth(sendable(code, UPSTREAM_GONE_CLOSE), 1000, reason.toString() || 'upstream closed'));
    client.on('error', () => closeBoth(1011, 1000, 'client error'));
    upstream.on('error', () => closeBoth(UPSTREAM_GONE_CLOSE, 1000, 'upstream error'));
  };

  return {
    onUpgrade,
    closeAll: () => {
      for (const c of [...open]) c.close(1001, 'server shutting down');
    },
  };
}
