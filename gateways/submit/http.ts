import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Log } from '../../infra/base/log';
import { readBody } from './http-body';
import { TEXT, type HttpAnswer } from './http-answer';
import { bodyLimits, findRoute, METHOD_NOT_ALLOWED, NOT_FOUND, POST_ROUTES, type LaterAnswer, type RouteContext } from './http-routes';
import { serveFast } from './http1-fast';
import type { FastRoute } from './http1-head';
import type { SubmitPipeline } from './pipeline';
import type { TraceReaders } from './trace-endpoint';

// The HTTP transport on the region root: the routes of the table in http-routes.ts (the key is the `api-key`
// query parameter on every one). This file frames requests and answers; which route, which body limit and
// which answer is the table's, every decision the pipeline's, every answer from the rejection table. No
// request line, URL or key is ever logged. With `fastPath` on, each connection starts on the pipelined fast
// path (http1-fast.ts: plain POSTs to the table's POST routes) and moves to node:http at its first request of
// any other kind or that asks for a preflight.

export interface HttpOptions {
  host: string;
  port: number;
  /** getVersion's `solana-core`. */
  version: string;
  maxConnections: number;
  /** Open connections per client address at most (one client cannot take every slot). */
  maxConnectionsPerIp: number;
  keepAliveTimeoutMs: number;
  requestTimeoutMs: number;
  /** Serve plain POSTs to the table's POST routes on the pipelined fast path (http1-fast.ts). */
  fastPath: boolean;
  log: Log;
  /** Traces on: GET /trace is served. */
  traces?: TraceReaders;
}

export interface SubmitHttp {
  address: { host: string; port: number };
  close(): Promise<void>;
}

/** The value of one query parameter, without building a URL object per request. */
function queryParam(url: string, name: string): string | null {
  const q = url.indexOf('?');
  if (q < 0) return null;
  for (const part of url.slice(q + 1).split('&')) {
    const eq = part.indexOf('=');
    const k = eq < 0 ? part : part.slice(0, eq);
    if (k !== name) continue;
    const v = eq < 0 ? '' : part.slice(eq + 1);
    if (!v.includes('%') && !v.includes('+')) return v;
    try {
      return decodeURIComponent(v.replace(/\+/g, ' '));
    } catch {
      return null;
    }
  }
  return null;
}

/**
 * With a Content-Length (not chunked): one write, and clients read a known length. Each answer is its own write
 * syscall even for pipelined requests: Node's ServerResponse.end() fully uncorks the socket, so answers cannot
 * be coalesced from here (measured: that write is about a fifth of /binary's CPU on loopback).
 */
function send(res: http.ServerResponse, a: HttpAnswer): void {
  if (a.noStore === true) res.setHeader('cache-control', 'no-store');
  res.writeHead(a.status, { 'content-type': a.type, 'content-length': Buffer.byteLength(a.body) }).end(a.body);
}

function isLater(a: HttpAnswer | LaterAnswer): a is LaterAnswer {
  return 'later' in a;
}

export async function startSubmitHttp(pipeline: SubmitPipeline, opts: HttpOptions): Promise<SubmitHttp> {
  const ctx: RouteContext = { pipeline, version: { 'solana-core': opts.version, 'feature-set': null }, traces: opts.traces };
  const maxBody = bodyLimits(pipeline.limits);

  /** A bug, not a client error: answer 500 and keep serving. The error carries no request data. */
  const failed = (res: http.ServerResponse, err: unknown): void => {
    opts.log.error({ err }, 'submission request failed');
    if (!res.headersSent) send(res, { status: 500, type: TEXT, body: 'internal error' });
  };

  const reply = (res: http.ServerResponse, a: HttpAnswer | LaterAnswer): void => {
    if (!isLater(a)) return send(res, a);
    a.later().then(
      (r) => send(res, r),
      (err: unknown) => failed(res, err),
    );
  };

  const server = http.createServer({ keepAliveTimeout: opts.keepAliveTimeoutMs, requestTimeout: opts.requestTimeoutMs }, (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const route = findRoute(ctx, path);
    if (route === undefined) return send(res, NOT_FOUND);
    if (route.method === 'GET') {
      if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, METHOD_NOT_ALLOWED);
      return send(res, route.answer(ctx, path.slice(route.path.length), queryParam(url, 'api-key')));
    }
    if (req.method !== 'POST') return send(res, METHOD_NOT_ALLOWED);
    const apiKey = queryParam(url, 'api-key');
    readBody(req, maxBody[route.transport], (body) => {
      if (body === null) {
        res.shouldKeepAlive = false; // the rest of the body was not read
        return send(res, route.tooLarge);
      }
      try {
        reply(res, route.answer(ctx, apiKey, body));
      } catch (err) {
        failed(res, err);
      }
    });
  });
  server.maxConnections = opts.maxConnections;
  // node:http's own connection listener is taken off the server and called for each connection node:http
  // serves: from the start, or from a fast-path handoff. One connection, one owner at a time.
  const nodeConnection = server.listeners('connection') as ((this: http.Server, socket: Socket) => void)[];
  if (nodeConnection.length !== 1) throw new Error(`node:http registered ${nodeConnection.length} connection listeners, expected 1`);
  const toNode = (socket: Socket): void => nodeConnection[0]!.call(server, socket);
  server.removeAllListeners('connection');
  const sockets = new Set<Socket>();
  const fastOpts = {
    keepAliveTimeoutMs: opts.keepAliveTimeoutMs,
    requestTimeoutMs: opts.requestTimeoutMs,
    maxBody,
    answer: (route: FastRoute, apiKey: string | null, body: Buffer): HttpAnswer | null => {
      const a = POST_ROUTES[route].answer(ctx, apiKey, body);
      return isLater(a) ? null : a; // must wait (a preflight): node:http answers it, from the start
    },
    apiKey: (target: string) => queryParam(target, 'api-key'),
    handoff: toNode,
  };
  const perIp = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const ip = socket.remoteAddress ?? '';
    const n = (perIp.get(ip) ?? 0) + 1;
    if (n > opts.maxConnectionsPerIp) {
      socket.destroy();
      return;
    }
    perIp.set(ip, n);
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      const left = (perIp.get(ip) ?? 1) - 1;
      if (left <= 0) perIp.delete(ip);
      else perIp.set(ip, left);
    });
    if (opts.fastPath) serveFast(socket, fastOpts);
    else toNode(socket);
  });
  server.headersTimeout = Math.min(opts.requestTimeoutMs, 60_000);
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const a = server.address() as AddressInfo;
  return {
    address: { host: opts.host, port: a.port },
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
    }),
  };
}
