import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Log } from '../../infra/base/log';
import { metrics as defaultRegistry, type Registry } from '../../infra/base/metrics';
import { asListenError } from '../../infra/base/listen-error';
import { errorJson, type ErrorTable } from './errors';
import { trustedProxies } from './client-ip';
import { httpProxy } from './http-proxy';
import { wsProxy } from './ws-proxy';
import type { AuthResult, ClientInfo, Meter, UsageHook } from './policy';
import { proxyMetrics } from './proxy-metrics';
import type { UpstreamPool } from './upstream-pool';

// One JSON-RPC proxy surface: an HTTP listener (POST JSON-RPC) and, optionally, a WebSocket listener (its own
// port, as the chain's 8899/8900 and the EVM's 8545/8546), both in front of one UpstreamPool, with the
// surface's auth, meter, usage hook and error table. The pool is the caller's (made and started before, so
// health is known when the first request arrives); close() stops the listeners, not the pool.

export interface Listen {
  host: string;
  /** 0 = any free port. */
  port: number;
}

export interface ProxyLimits {
  /** Request body bytes at most (HTTP) — over it: bodyTooLarge. Default 1 MiB. */
  maxBodyBytes?: number;
  /** Items in one batch at most — over it: invalidBody. Default 1,000. */
  maxBatch?: number;
  /** HTTP requests handled at once, all clients together. Default 10,000. */
  maxInflight?: number;
  /** Open client connections per listener. Default 10,000. */
  maxSockets?: number;
  /** WebSocket: largest message either way. Default 16 MiB. */
  wsMaxPayload?: number;
  /** WebSocket: unsent bytes to one client before it is closed as slow. Default 8 MiB. */
  wsMaxBufferedBytes?: number;
  /** WebSocket: client messages queued behind a waiting admission. Default 64. */
  wsMaxQueuedMessages?: number;
  /** WebSocket: proxied connections at most. Default 5,000. */
  wsMaxConnections?: number;
  /** WebSocket: time to open the upstream socket. Default 5 s. */
  wsHandshakeTimeoutMs?: number;
}

export interface ProxyOptions<C, K extends string> {
  /** Surface label for metrics and logs ("rpc", "evm-56"). */
  surface: string;
  http: Listen;
  ws?: Listen;
  /** The config keys of the two listen addresses, named when a port is taken ('gateways.evm.chains.56.http'). */
  listenKeys?: { http?: string; ws?: string };
  errors: ErrorTable<K>;
  pool: UpstreamPool;
  auth: (client: ClientInfo) => AuthResult<C, K>;
  meter: Meter<C, K>;
  usage?: UsageHook<C>;
  /** Methods never retried, hedged or sent twice (sendTransaction, eth_sendRawTransaction…). */
  neverRetry: Iterable<string>;
  /** Peers whose X-Forwarded-For is believed (load balancers). Default none. */
  trustedProxies?: readonly string[];
  limits?: ProxyLimits;
  log: Log;
  registry?: Registry;
}

export interface RunningProxy {
  http: { host: string; port: number; url: string };
  ws?: { host: string; port: number; url: string };
  close(): Promise<void>;
}

function listen(server: http.Server, l: Listen): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(l.port, l.host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

function urlHost(host: string): string {
  const h = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return h.includes(':') ? `[${h}]` : h;
}

function stop(server: http.Server, sockets: Set<Socket>): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    for (const s of sockets) s.destroy();
  });
}

function track(server: http.Server, max: number): Set<Socket> {
  const sockets = new Set<Socket>();
  server.maxConnections = max;
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  return sockets;
}

export async function startProxy<C, K extends string>(o: ProxyOptions<C, K>): Promise<RunningProxy> {
  const l = o.limits ?? {};
  const m = proxyMetrics(o.registry ?? defaultRegistry, o.surface);
  const trusted = trustedProxies(o.trustedProxies ?? []);
  const maxBatch = l.maxBatch ?? 1_000;
  const onRequest = httpProxy<C, K>({
    errors: o.errors,
    pool: o.pool,
    auth: o.auth,
    meter: o.meter,
    usage: o.usage,
    neverRetry: new Set(o.neverRetry),
    trusted,
    maxBodyBytes: l.maxBodyBytes ?? 1024 * 1024,
    maxBatch,
    maxInflight: l.maxInflight ?? 10_000,
    metrics: m,
    log: o.log,
  });
  const server = http.createServer({ keepAliveTimeout: 65_000, requestTimeout: 120_000 }, onRequest);
  const httpSockets = track(server, l.maxSockets ?? 10_000);
  server.on('clientError', (_e, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });
  const ha = await listen(server, o.http).catch((e: unknown) => {
    throw asListenError(e, o.listenKeys?.http);
  });
  const out: RunningProxy = {
    http: { host: o.http.host, port: ha.port, url: `http://${urlHost(o.http.host)}:${ha.port}` },
    close: async () => {
      await stop(server, httpSockets);
    },
  };
  if (o.ws === undefined) return out;

  const ws = wsProxy<C, K>({
    errors: o.errors,
    pool: o.pool,
    auth: o.auth,
    meter: o.meter,
    usage: o.usage,
    trusted,
    maxPayload: l.wsMaxPayload ?? 16 * 1024 * 1024,
    maxBatch,
    maxBufferedBytes: l.wsMaxBufferedBytes ?? 8 * 1024 * 1024,
    maxQueuedMessages: l.wsMaxQueuedMessages ?? 64,
    maxConnections: l.wsMaxConnections ?? 5_000,
    handshakeTimeoutMs: l.wsHandshakeTimeoutMs ?? 5_000,
    metrics: m,
    log: o.log,
  });
  // The WebSocket port answers plain HTTP requests with the notPost row: only upgrades are served there.
  const wsServer = http.createServer((_req, res) => {
    const row = o.errors.notPost;
    const body = errorJson(row, 'this port serves WebSocket upgrades only');
    res.writeHead(row.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  const wsSockets = track(wsServer, l.maxSockets ?? 10_000);
  wsServer.on('upgrade', ws.onUpgrade);
  let wa: AddressInfo;
  try {
    wa = await listen(wsServer, o.ws);
  } catch (e) {
    await out.close();
    throw asListenError(e, o.listenKeys?.ws);
  }
  out.ws = { host: o.ws.host, port: wa.port, url: `ws://${urlHost(o.ws.host)}:${wa.port}` };
  out.close = async () => {
    ws.closeAll();
    await Promise.all([stop(server, httpSockets), stop(wsServer, wsSockets)]);
  };
  return out;
}
