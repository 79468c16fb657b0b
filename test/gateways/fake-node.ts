import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

// A controllable JSON-RPC node for fault tests of the proxy core (down, slow, garbage, dropped mid-reply, batch
// length mismatch, error statuses). Everything else is tested against the real local chain node; this one exists
// because a real node cannot be told to misbehave on cue. It answers every request object with
// {"result": {"method", "n"}} (n = how many requests it has seen), counts requests per method and connections,
// and serves WebSocket on the same port: subscriptions get an id, and `push(n)` sends n notifications to every
// socket in order.

export type Mode = 'ok' | 'slow' | 'garbage' | 'drop' | 'short-batch' | 'error-status' | 'unhealthy';

export interface FakeNode {
  url: string;
  wsUrl: string;
  mode: Mode;
  /** Height reported by getSlot / eth_blockNumber (for lag checks). */
  height: number;
  slowMs: number;
  /** Requests seen per method (each batch item counted). */
  calls: Map<string, number>;
  connections: number;
  sockets: Set<WebSocket>;
  /** Last raw body received. */
  lastBody: string;
  count(method: string): number;
  push(n: number, bytes?: number): void;
  stop(): Promise<void>;
  /** Stops listening and kills connections, keeping the port for restart(). */
  down(): Promise<void>;
  restart(): Promise<void>;
}

export async function startFakeNode(opts: { port?: number } = {}): Promise<FakeNode> {
  const sockets = new Set<Socket>();
  let seen = 0;
  const node: FakeNode = {
    url: '',
    wsUrl: '',
    mode: 'ok',
    height: 1000,
    slowMs: 2_000,
    calls: new Map(),
    connections: 0,
    sockets: new Set(),
    lastBody: '',
    count: (m) => node.calls.get(m) ?? 0,
    push: (n, bytes = 64) => {
      const pad = 'x'.repeat(bytes);
      for (const ws of node.sockets) for (let i = 0; i < n; i++) ws.send(`{"jsonrpc":"2.0","method":"slotNotification","params":{"result":{"seq":${i},"pad":"${pad}"},"subscription":1}}`);
    },
    stop: async () => {
      await node.down();
    },
    down: () =>
      new Promise<void>((resolve) => {
        for (const ws of node.sockets) ws.terminate();
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
    restart: () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve())),
  };
  const answer = (req: unknown): unknown => {
    const o = (req ?? {}) as { method?: string; id?: unknown };
    const method = String(o.method ?? '');
    node.calls.set(method, (node.calls.get(method) ?? 0) + 1);
    seen++;
    if (method === 'getHealth') return node.mode === 'unhealthy' ? { jsonrpc: '2.0', error: { code: -32005, message: 'Node is unhealthy' }, id: o.id } : { jsonrpc: '2.0', result: 'ok', id: o.id };
    if (method === 'getSlot' || method === 'eth_blockNumber') return { jsonrpc: '2.0', result: node.height, id: o.id };
    if (method === 'nodeError') return { jsonrpc: '2.0', error: { code: -32009, message: 'Slot 5 was skipped', data: { why: 'skipped', slot: 5 } }, id: o.id };
    return { jsonrpc: '2.0', result: { method, n: seen }, id: o.id };
  };
  const isProbe = (b: string): boolean => b.includes('"getHealth"') || b.includes('"getSlot"') || b.includes('"eth_blockNumber"');
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      node.lastBody = body;
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch {
        res.writeHead(400).end('{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}');
        return;
      }
      const reply = Array.isArray(parsed) ? parsed.map(answer) : answer(parsed);
      const probe = isProbe(body);
      const mode = probe && node.mode !== 'unhealthy' ? 'ok' : node.mode;
      let text = JSON.stringify(reply);
      switch (mode) {
        case 'slow':
          setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(text), node.slowMs);
          return;
        case 'garbage':
          res.writeHead(200, { 'content-type': 'application/json' }).end('<html>bad gateway</html>');
          return;
        case 'drop':
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(text.length + 100) });
          res.write(text.slice(0, Math.max(1, text.length >> 1)));
          setTimeout(() => res.socket?.destroy(), 5);
          return;
        case 'short-batch':
          if (Array.isArray(reply)) text = JSON.stringify(reply.slice(1));
          break;
        case 'error-status':
          res.writeHead(429, { 'content-type': 'application/json' }).end(`{"jsonrpc":"2.0","error":{"code":-32429,"message":"node says slow down","data":{"retryAfter":3}},"id":1}`);
          return;
        default:
          break;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(text);
    });
  });
  server.on('connection', (s: Socket) => {
    node.connections++;
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  const wss = new WebSocketServer({ server });
  wss.on('connection', (ws) => {
    node.sockets.add(ws);
    ws.on('close', () => node.sockets.delete(ws));
    ws.on('message', (data) => {
      let o: { method?: string; id?: unknown };
      try {
        o = JSON.parse(data.toString()) as typeof o;
      } catch {
        return;
      }
      const method = String(o.method ?? '');
      node.calls.set(method, (node.calls.get(method) ?? 0) + 1);
      if (method === 'closeMe') return ws.close(4321, 'asked to close');
      ws.send(JSON.stringify({ jsonrpc: '2.0', result: method.endsWith('Unsubscribe') ? true : 1, id: o.id }));
    });
  });
  await new Promise<void>((r) => server.listen(opts.port ?? 0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  node.url = `http://127.0.0.1:${port}`;
  node.wsUrl = `ws://127.0.0.1:${port}`;
  return node;
}

/** A port with nothing listening (bound then released). */
export async function deadPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** POST a body with real undici-free node:http (optionally from another loopback address). */
export function post(url: string, body: string, o: { contentType?: string; localAddress?: string; headers?: Record<string, string>; method?: string } = {}): Promise<{ status: number; body: string; json: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: o.method ?? 'POST', localAddress: o.localAddress, headers: { 'content-type': o.contentType ?? 'application/json', ...o.headers }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body: text, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
