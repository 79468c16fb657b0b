import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Log } from '../../../base/log';
import type { Methods } from '../methods/common';
import type { PubSub } from '../pubsub';
import { RPC, RpcError } from './errors';
import { stringify } from './json';
import { paramList } from './params';

// JSON-RPC 2.0 over HTTP (POST, single or batch) and the PubSub WebSocket on the same port (upgrade).
// Bounded: request body bytes (413 beyond), batch length, open sockets (HTTP and WebSocket together), WebSocket
// message size; the PubSub bounds subscriptions and unsent bytes. A bad request gets its JSON-RPC error and the
// server keeps serving; a handler that throws something unexpected answers -32603 and is logged.

export interface RpcServerOptions {
  host: string;
  port: number;
  maxBodyBytes: number;
  maxBatch: number;
  maxConnections: number;
  maxWsMessageBytes: number;
  log?: Log;
}

export interface RpcServer {
  port: number;
  close(): Promise<void>;
}

interface Req {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: unknown;
}

type Id = string | number | null;

function errorBody(id: Id, e: { code: number; message: string; data?: unknown }): Record<string, unknown> {
  const error: Record<string, unknown> = { code: e.code, message: e.message };
  if (e.data !== undefined) error.data = e.data;
  return { jsonrpc: '2.0', error, id };
}

function validId(v: unknown): v is Id {
  return v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

/** One request object → its response, or null for a notification (no id). */
export function callOne(req: unknown, run: (method: string, params: unknown[]) => unknown, log?: Log): Record<string, unknown> | null {
  if (typeof req !== 'object' || req === null || Array.isArray(req)) return errorBody(null, RPC.invalidRequest);
  const r = req as Req;
  const hasId = 'id' in r;
  const id: Id = hasId && validId(r.id) ? r.id : null;
  if (r.jsonrpc !== '2.0' || typeof r.method !== 'string' || (hasId && !validId(r.id))) return errorBody(id, RPC.invalidRequest);
  let body: Record<string, unknown>;
  try {
    body = { jsonrpc: '2.0', result: run(r.method, paramList(r.params)), id };
  } catch (e) {
    if (e instanceof RpcError) body = errorBody(id, e);
    else {
      log?.warn({ err: e, method: r.method }, 'local chain: handler failed');
      body = errorBody(id, RPC.internal);
    }
  }
  return hasId ? body : null;
}

export async function startRpcServer(methods: Methods, pubsub: PubSub, o: RpcServerOptions): Promise<RpcServer> {
  const run = (method: string, params: unknown[]): unknown => {
    const h = Object.prototype.hasOwnProperty.call(methods, method) ? methods[method] : undefined;
    if (h === undefined) throw new RpcError(RPC.methodNotFound.code, RPC.methodNotFound.message);
    return h(params);
  };

  const handleBody = (text: string): string => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return stringify(errorBody(null, RPC.parse));
    }
    if (!Array.isArray(parsed)) {
      const r = callOne(parsed, run, o.log);
      return r === null ? '' : stringify(r);
    }
    if (parsed.length === 0) return stringify(errorBody(null, RPC.invalidRequest));
    if (parsed.length > o.maxBatch) return stringify(errorBody(null, { code: RPC.invalidRequest.code, message: `Invalid request: batch larger than ${o.maxBatch}` }));
    const out = parsed.map((r) => callOne(r, run, o.log)).filter((r) => r !== null);
    return out.length === 0 ? '' : stringify(out);
  };

  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/health') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST', 'content-type': 'text/plain' }).end('Used HTTP Method is not allowed. POST or OPTIONS is required');
      return;
    }
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > o.maxBodyBytes) {
      res.writeHead(413, { connection: 'close' }).end();
      req.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > o.maxBodyBytes) {
        res.writeHead(413, { connection: 'close' }).end();
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (size > o.maxBodyBytes) return;
      const body = handleBody(Buffer.concat(chunks).toString('utf8'));
      // A known length keeps the response out of chunked encoding: headers and body leave in one write.
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
    });
    req.on('error', () => undefined);
  });
  server.maxConnections = o.maxConnections;
  server.keepAliveTimeout = 30_000;
  server.headersTimeout = 20_000;
  server.requestTimeout = 30_000;

  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  const wss = new WebSocketServer({ noServer: true, maxPayload: o.maxWsMessageBytes });
  server.on('upgrade', (req, socket, head) => {
    wss.handleUpgrade(req, socket, head, (ws: WebSocket) => {
      const conn = pubsub.open(ws);
      ws.on('message', (data, isBinary) => {
        const text = isBinary ? '' : data.toString();
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          ws.send(stringify(errorBody(null, RPC.parse)));
          return;
        }
        const list = Array.isArray(parsed) ? parsed : [parsed];
        const afters: Array<() => void> = [];
        const out = list.map((r) => callOne(r, (method, params) => {
          const c = pubsub.call(conn, method, params);
          if (c.after !== undefined) afters.push(c.after);
          return c.result;
        }, o.log)).filter((r) => r !== null);
        if (out.length > 0) ws.send(stringify(Array.isArray(parsed) ? out : out[0]));
        for (const a of afters) a();
      });
      ws.on('close', () => pubsub.closeConn(conn));
      ws.on('error', () => pubsub.closeConn(conn));
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (e) => o.log?.warn({ err: e }, 'local chain: server error'));

  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      pubsub.close();
      wss.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
