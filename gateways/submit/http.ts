import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Log } from '../../infra/base/log';
import { readBody } from './http-body';
import { serveFast, type FastAnswer } from './http1-fast';
import type { FastRoute } from './http1-head';
import { errorAnswer, outcomeAnswer, type Answer } from './jsonrpc';
import { jsonRpcStep, type VersionInfo } from './jsonrpc-step';
import { CONTRACT_BODY } from './limits';
import type { SubmitPipeline } from './pipeline';
import { binaryAnswer, bodyTooLarge, plaintextAnswer, type PlainAnswer } from './plain-answer';
import { HTTP_FRAMING, JSONRPC_ERRORS } from './rejections';
import { traceAnswer, type TraceReaders } from './trace-endpoint';

// The HTTP transport on the region root. Routes (the key is the `api-key` query parameter on every one):
//   POST /            JSON-RPC: sendTransaction, getVersion             body ≤ 3,072
//   POST /binary      raw transaction bytes → 200 text/plain signature  body ≤ 1,232   (no preflight)
//   POST /plaintext   base64 text, trimmed  → 200 text/plain signature  body ≤ 2,048   (no preflight)
// (the contract's body limits; gateways.submit.v1MaxBytes above 1,232 raises them for v1: limits.ts)
//   GET  /health      200 "ok" for load balancers (no key)
//   GET  /trace/<sig>  the trace of a transaction the key submitted, and the key's summary (trace-endpoint.ts;
//   GET  /trace        the summary alone); only with traces on. Served here, never on the fast path.
// This file frames requests and answers; every decision is the pipeline's, every answer comes from the
// rejection table. No request line, URL or key is ever logged. With `fastPath` on, each connection starts on
// the pipelined fast path (http1-fast.ts: plain POSTs to /, /binary and /plaintext) and moves to node:http at
// its first request of any other kind or that asks for a preflight.

/** The contract's body limits (the defaults; the pipeline's limits decide). */
export const JSONRPC_BODY_MAX = CONTRACT_BODY.jsonrpc;
export const BINARY_BODY_MAX = CONTRACT_BODY.binary;
export const PLAINTEXT_BODY_MAX = CONTRACT_BODY.plaintext;

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
  /** Serve plain /binary and /plaintext requests on the pipelined fast path (http1-fast.ts). */
  fastPath: boolean;
  log: Log;
  /** Traces on: GET /trace is served. */
  traces?: TraceReaders;
}

export interface SubmitHttp {
  address: { host: string; port: number };
  close(): Promise<void>;
}

const TEXT = 'text/plain; charset=utf-8';
const JSON_TYPE = 'application/json';

/** The value of one query parameter, without building a URL object per request. */
export function queryParam(url: string, name: string): string | null {
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
function send(res: http.ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) }).end(body);
}

function text(res: http.ServerResponse, status: number, body: string): void {
  send(res, status, TEXT, body);
}

function json(res: http.ServerResponse, a: Answer): void {
  send(res, a.status, JSON_TYPE, a.body);
}

function plain(res: http.ServerResponse, a: PlainAnswer): void {
  send(res, a.status, TEXT, a.text);
}

/** A body over its limit: the answer, and the connection is not kept (the rest of the body was not read). */
function tooLarge(res: http.ServerResponse, write: () => void): void {
  res.shouldKeepAlive = false;
  write();
}

export async function startSubmitHttp(pipeline: SubmitPipeline, opts: HttpOptions): Promise<SubmitHttp> {
  const version: VersionInfo = { 'solana-core': opts.version, 'feature-set': null };
  const bodyMax = pipeline.limits.body;

  const jsonRpc = (res: http.ServerResponse, apiKey: string | null, body: Buffer | null): void => {
    if (body === null) return tooLarge(res, () => json(res, errorAnswer(null, JSONRPC_ERRORS.bodyTooLarge)));
    const step = jsonRpcStep(pipeline, version, apiKey, body);
    if (step.kind === 'answer') return json(res, step.answer);
    pipeline.submit({ apiKey: step.apiKey, bytes: step.bytes, transport: 'jsonrpc', preflight: step.preflight }).then(
      (o) => json(res, outcomeAnswer(step.id, o)),
      (err: unknown) => failed(res, err),
    );
  };

  const binary = (res: http.ServerResponse, apiKey: string | null, body: Buffer | null): void => {
    if (body === null) return tooLarge(res, () => plain(res, bodyTooLarge()));
    plain(res, binaryAnswer(pipeline, apiKey, body));
  };

  const plaintext = (res: http.ServerResponse, apiKey: string | null, body: Buffer | null): void => {
    if (body === null) return tooLarge(res, () => plain(res, bodyTooLarge()));
    plain(res, plaintextAnswer(pipeline, apiKey, body));
  };

  /** A bug, not a client error: answer 500 and keep serving. The error carries no request data. */
  const failed = (res: http.ServerResponse, err: unknown): void => {
    opts.log.error({ err }, 'submission request failed');
    if (!res.headersSent) text(res, 500, 'internal error');
  };

  const server = http.createServer({ keepAliveTimeout: opts.keepAliveTimeoutMs, requestTimeout: opts.requestTimeoutMs }, (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (path === '/health') {
      if (req.method !== 'GET' && req.method !== 'HEAD') return text(res, HTTP_FRAMING.methodNotAllowed.status, HTTP_FRAMING.methodNotAllowed.text);
      return text(res, 200, 'ok');
    }
    if (opts.traces !== undefined && (path === '/trace' || path.startsWith('/trace/'))) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return text(res, HTTP_FRAMING.methodNotAllowed.status, HTTP_FRAMING.methodNotAllowed.text);
      const a = traceAnswer(opts.traces, path.slice('/trace'.length), queryParam(url, 'api-key'));
      res.setHeader('cache-control', 'no-store');
      return a.status === 200 ? send(res, 200, JSON_TYPE, a.body) : text(res, a.status, a.body);
    }
    const route = path === '/' ? jsonRpc : path === '/binary' ? binary : path === '/plaintext' ? plaintext : null;
    if (route === null) return text(res, HTTP_FRAMING.notFound.status, HTTP_FRAMING.notFound.text);
    if (req.method !== 'POST') return text(res, HTTP_FRAMING.methodNotAllowed.status, HTTP_FRAMING.methodNotAllowed.text);
    const limit = route === jsonRpc ? bodyMax.jsonrpc : route === binary ? bodyMax.binary : bodyMax.plaintext;
    const apiKey = queryParam(url, 'api-key');
    readBody(req, limit, (body) => {
      try {
        route(res, apiKey, body);
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
    maxBody: bodyMax,
    answer: (route: FastRoute, apiKey: string | null, body: Buffer): FastAnswer | null => {
      if (route === 'jsonrpc') {
        const step = jsonRpcStep(pipeline, version, apiKey, body);
        return step.kind === 'answer' ? { status: step.answer.status, type: JSON_TYPE, body: step.answer.body } : null; // preflight: node:http
      }
      const a: PlainAnswer = route === 'binary' ? binaryAnswer(pipeline, apiKey, body) : plaintextAnswer(pipeline, apiKey, body);
      return { status: a.status, type: TEXT, body: a.text };
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
