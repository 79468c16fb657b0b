import assert from 'node:assert/strict';
import http from 'node:http';
import WebSocket from 'ws';
import { refuse, startProxy, UpstreamPool, SLOW_CONSUMER_CLOSE, type ErrorTable, type HealthProbe, type Meter, type RpcCall, type RunningProxy } from '../../../gateways/core';
import { Registry } from '../../../infra/base/metrics';
import { quietLog } from '../../support/log-capture';
import { waitFor } from '../../support/wait';
import { deadPort, post, startFakeNode, type FakeNode } from '../fake-node';

// The proxy core against controllable fault upstreams (test/gateways/fake-node.ts): byte-for-byte forwarding,
// node errors unchanged, batch checks, failover for reads and never for unsafe methods, health and 503, limits,
// keep-alive, and the WebSocket pass-through (order, close both ways, slow client, refused upgrades).

type Kind = 'forbidden' | 'unauthorized' | 'limited';
const ERRORS: ErrorTable<Kind> = {
  invalidBody: { status: 400, code: -32600, message: 'Invalid request body' },
  bodyTooLarge: { status: 413, code: -32600, message: 'Invalid request body' },
  notPost: { status: 405, code: -32600, message: 'Invalid request body' },
  batchFailed: { status: 502, code: -32000, message: 'Unable to process Batch Request' },
  upstreamFailed: { status: 503, code: -32099, message: 'Server is not available at the moment' },
  unavailable: { status: 503, code: -32099, message: 'Server is not available at the moment' },
  overloaded: { status: 503, code: -32099, message: 'Server is not available at the moment' },
  forbidden: { status: 403, code: -32003, message: 'You have no access to this service' },
  unauthorized: { status: 401, code: -32002, message: 'Unauthorized' },
  limited: { status: 429, code: -32001, message: 'RPS limit exceeded' },
};

const probe: HealthProbe = async (call) => {
  const r = (await call('{"jsonrpc":"2.0","id":1,"method":"getSlot"}')) as { result?: number };
  return typeof r.result === 'number' ? { ok: true, height: r.result } : { ok: false, why: 'no slot' };
};

interface Usage {
  methods: string[];
  units: number[];
  outcome: string;
}

const meter: Meter<string, Kind> = {
  admit: (_c, calls: readonly RpcCall[]) => {
    if (calls.some((c) => c.method === 'limited')) return refuse<Kind>('limited', 'test limit');
    const units = calls.map((c) => (c.method === 'heavy' ? 10 : 1));
    if (calls.some((c) => c.method === 'waitFirst')) return new Promise((r) => setTimeout(() => r({ ok: true, units }), 100));
    return { ok: true, units };
  },
};

async function gateway(upstreams: Array<FakeNode | { http: string; ws?: string }>, limits = {}, poolOpts = {}): Promise<{ proxy: RunningProxy; pool: UpstreamPool; usage: Usage[]; lines: string[]; close(): Promise<void> }> {
  const { log, lines } = quietLog('debug');
  const registry = new Registry();
  const eps = upstreams.map((u) => ('url' in u ? { http: u.url, ws: u.wsUrl } : u));
  const pool = new UpstreamPool({ surface: 'test', upstreams: eps, probe, intervalMs: 100, probeTimeoutMs: 500, timeoutMs: 500, log, registry, ...poolOpts });
  await pool.start();
  const usage: Usage[] = [];
  const proxy = await startProxy<string, Kind>({
    surface: 'test',
    http: { host: '127.0.0.1', port: 0 },
    ws: { host: '127.0.0.1', port: 0 },
    errors: ERRORS,
    pool,
    auth: (c) => (c.path === '/closed' ? refuse<Kind>('unauthorized') : c.ip === '127.0.0.1' ? { ok: true, caller: 'r1' } : refuse<Kind>('forbidden')),
    meter,
    usage: (_c, calls, units, outcome) => usage.push({ methods: calls.map((c) => c.method), units: [...units], outcome }),
    neverRetry: ['sendTransaction'],
    trustedProxies: ['127.0.0.1'],
    limits,
    log,
    registry,
  });
  return { proxy, pool, usage, lines, close: async () => { await proxy.close(); await pool.close(); } };
}

const rpc = (method: string, id: number | string = 1): string => JSON.stringify({ jsonrpc: '2.0', id, method, params: [] });

describe('gateway core: HTTP forwarding', () => {
  let node: FakeNode;
  let g: Awaited<ReturnType<typeof gateway>>;
  before(async () => {
    node = await startFakeNode();
    g = await gateway([node]);
  });
  after(async () => {
    await g.close();
    await node.stop();
  });
  beforeEach(() => (node.mode = 'ok'));

  it('forwards the body byte for byte and returns the reply unchanged', async () => {
    const body = '{ "jsonrpc":"2.0", "id":"a b", "method":"getFoo", "params":[{"x":1.50}] }';
    const r = await post(g.proxy.http.url, body);
    assert.equal(r.status, 200);
    assert.equal(node.lastBody, body);
    assert.equal(r.json.id, 'a b');
    assert.equal(r.json.result.method, 'getFoo');
    assert.deepEqual(g.usage.at(-1), { methods: ['getFoo'], units: [1], outcome: 'ok' });
  });

  it("passes the node's errors (error.data included) and its HTTP status through unchanged", async () => {
    const r = await post(g.proxy.http.url, rpc('nodeError'));
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.error, { code: -32009, message: 'Slot 5 was skipped', data: { why: 'skipped', slot: 5 } });
    node.mode = 'error-status';
    const r2 = await post(g.proxy.http.url, rpc('anything'));
    assert.equal(r2.status, 429);
    assert.equal(r2.body, '{"jsonrpc":"2.0","error":{"code":-32429,"message":"node says slow down","data":{"retryAfter":3}},"id":1}');
  });

  it('forwards a batch and meters every item', async () => {
    const body = JSON.stringify([JSON.parse(rpc('a', 1)), JSON.parse(rpc('heavy', 2)), JSON.parse(rpc('b', 3))]);
    const r = await post(g.proxy.http.url, body);
    assert.equal(r.status, 200);
    assert.equal(r.json.length, 3);
    assert.deepEqual(r.json.map((x: { id: number }) => x.id), [1, 2, 3]);
    assert.deepEqual(g.usage.at(-1), { methods: ['a', 'heavy', 'b'], units: [1, 10, 1], outcome: 'ok' });
  });

  it('a batch reply of the wrong length → 502 -32000 for the whole batch; the next batch is served', async () => {
    node.mode = 'short-batch';
    const body = JSON.stringify([JSON.parse(rpc('a', 1)), JSON.parse(rpc('b', 2))]);
    const r = await post(g.proxy.http.url, body);
    assert.equal(r.status, 502);
    assert.equal(Array.isArray(r.json), false);
    assert.equal(r.json.error.code, -32000);
    assert.match(r.json.error.message, /^Unable to process Batch Request/);
    assert.equal(g.usage.at(-1)!.outcome, 'error');
    node.mode = 'ok';
    assert.equal((await post(g.proxy.http.url, body)).status, 200);
  });

  it('garbage from the node: batch → 502, single → upstreamFailed row', async () => {
    node.mode = 'garbage';
    const b = await post(g.proxy.http.url, `[${rpc('a')}]`);
    assert.equal(b.status, 502);
    assert.equal(b.json.error.code, -32000);
    const s = await post(g.proxy.http.url, rpc('a', 7));
    assert.equal(s.status, 503);
    assert.equal(s.json.error.code, -32099);
    assert.equal(s.json.id, 7);
  });

  it('connection dropped mid-reply → 502 for a batch', async () => {
    node.mode = 'drop';
    const b = await post(g.proxy.http.url, `[${rpc('a')},${rpc('b', 2)}]`);
    assert.equal(b.status, 502);
    assert.match(b.json.error.message, /^Unable to process Batch Request/);
    node.mode = 'ok';
    await waitFor(() => g.pool.healthyCount() === 1, 5_000, 'upstream back after probe');
    assert.equal((await post(g.proxy.http.url, rpc('a'))).status, 200);
  });

  it('a slow node (over the timeout) → 502 for a batch', async () => {
    node.mode = 'slow';
    node.slowMs = 1_500;
    const b = await post(g.proxy.http.url, `[${rpc('a')}]`);
    assert.equal(b.status, 502);
    assert.match(b.json.error.message, /timed out/);
  });

  it('refusals come from the table, nothing is forwarded, the gateway keeps serving', async () => {
    const before = node.count('limited');
    const r = await post(g.proxy.http.url, `[${rpc('a')},${rpc('limited', 2)}]`);
    assert.equal(r.status, 429);
    assert.equal(r.json.error.code, -32001);
    assert.equal(r.json.error.message, 'RPS limit exceeded: test limit');
    assert.equal(node.count('limited'), before);
    assert.deepEqual(g.usage.at(-1), { methods: ['a', 'limited'], units: [0, 0], outcome: 'rate_limited' });
    assert.equal((await post(g.proxy.http.url, rpc('a'))).status, 200);
  });

  it('bad bodies: 400 for unparsable, scalar, empty batch, wrong content-type; 405 for GET; 413 over the limit', async () => {
    const cases: Array<[string, string | undefined]> = [['{not json', undefined], ['42', undefined], ['[]', undefined], [rpc('a'), 'text/plain']];
    for (const [body, ct] of cases) {
      const r = await post(g.proxy.http.url, body, { contentType: ct });
      assert.equal(r.status, 400, body);
      assert.equal(r.json.error.code, -32600);
      assert.match(r.json.error.message, /^Invalid request body/);
    }
    const get = await post(g.proxy.http.url, '', { method: 'GET' });
    assert.equal(get.status, 405);
    const big = await post(g.proxy.http.url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'a', params: ['x'.repeat(1_100_000)] }));
    assert.equal(big.status, 413);
    assert.equal(big.json.error.code, -32600);
    assert.equal((await post(g.proxy.http.url, rpc('a'))).status, 200);
  });

  it('auth by socket address and by path; forwarded-for believed only from a trusted proxy', async () => {
    const other = await post(g.proxy.http.url, rpc('a'), { localAddress: '127.0.0.2' });
    assert.equal(other.status, 403);
    assert.equal(other.json.error.code, -32003);
    const closed = await post(`${g.proxy.http.url}/closed?x=1`, rpc('a'));
    assert.equal(closed.status, 401);
    // 127.0.0.1 is a trusted proxy here: its X-Forwarded-For names the caller.
    const viaProxy = await post(g.proxy.http.url, rpc('a'), { headers: { 'x-forwarded-for': '127.0.0.9' } });
    assert.equal(viaProxy.status, 403);
    // 127.0.0.2 is not trusted: its header is ignored, the socket address decides.
    const spoof = await post(g.proxy.http.url, rpc('a'), { localAddress: '127.0.0.2', headers: { 'x-forwarded-for': '127.0.0.1' } });
    assert.equal(spoof.status, 403);
  });

  it('an async admission (waiting) still forwards', async () => {
    const r = await post(g.proxy.http.url, rpc('waitFirst'));
    assert.equal(r.status, 200);
    assert.equal(r.json.result.method, 'waitFirst');
  });

  it('keeps upstream connections alive: 200 requests over a handful of connections', async () => {
    const before = node.connections;
    for (let i = 0; i < 20; i++) await Promise.all(Array.from({ length: 10 }, (_v, j) => post(g.proxy.http.url, rpc('a', j))));
    const opened = node.connections - before;
    assert.ok(opened <= 12, `opened ${opened} upstream connections for 200 requests`);
  });

  it('never logs the upstream URL', () => {
    assert.ok(g.lines.length > 0);
    const port = new URL(node.url).port;
    for (const l of g.lines) assert.ok(!l.includes(`127.0.0.1:${port}`), l);
  });
});

describe('gateway core: upstream health and failover', () => {
  it('reads fail over to a healthy upstream; sendTransaction is sent exactly once', async () => {
    const a = await startFakeNode();
    const b = await startFakeNode();
    const g = await gateway([a, b]);
    try {
      a.mode = 'drop';
      b.mode = 'drop';
      // Both drop: a read is tried on each (two attempts), sendTransaction on one only.
      const read = await post(g.proxy.http.url, rpc('getBalance'));
      assert.equal(read.status, 503);
      assert.equal(a.count('getBalance') + b.count('getBalance'), 2);
      await waitFor(() => g.pool.healthyCount() === 2, 5_000, 'both back');
      const send = await post(g.proxy.http.url, rpc('sendTransaction'));
      assert.equal(send.status, 503);
      assert.equal(a.count('sendTransaction') + b.count('sendTransaction'), 1);
      // A batch containing sendTransaction is not retried either.
      await waitFor(() => g.pool.healthyCount() === 2, 5_000, 'both back');
      const batch = await post(g.proxy.http.url, `[${rpc('getSlot2')},${rpc('sendTransaction', 2)}]`);
      assert.equal(batch.status, 502);
      assert.equal(a.count('sendTransaction') + b.count('sendTransaction'), 2);
      // One good upstream: reads succeed through failover.
      await waitFor(() => g.pool.healthyCount() === 2, 5_000, 'both back');
      a.mode = 'drop';
      b.mode = 'ok';
      for (let i = 0; i < 4; i++) assert.equal((await post(g.proxy.http.url, rpc('getBalance'))).status, 200);
    } finally {
      await g.close();
      await a.stop();
      await b.stop();
    }
  });

  it('no healthy upstream → 503 -32099; served again when it comes back, without a restart', async () => {
    const a = await startFakeNode();
    const g = await gateway([a]);
    try {
      await a.down();
      await waitFor(() => g.pool.healthyCount() === 0, 5_000, 'probe marks it down');
      const r = await post(g.proxy.http.url, rpc('getBalance'));
      assert.equal(r.status, 503);
      assert.equal(r.json.error.code, -32099);
      assert.match(r.json.error.message, /^Server is not available at the moment/);
      const b = await post(g.proxy.http.url, `[${rpc('getBalance')}]`);
      assert.equal(b.status, 503);
      await a.restart();
      await waitFor(() => g.pool.healthyCount() === 1, 5_000, 'probe marks it up');
      assert.equal((await post(g.proxy.http.url, rpc('getBalance'))).status, 200);
    } finally {
      await g.close();
      await a.stop();
    }
  });

  it('an upstream that is down from the start, or lagging, takes no traffic', async () => {
    const good = await startFakeNode();
    const behind = await startFakeNode();
    behind.height = 900;
    const dead = `http://127.0.0.1:${await deadPort()}`;
    const g = await gateway([{ http: dead }, good, behind], {}, { maxLag: 50 });
    try {
      assert.deepEqual(g.pool.health().map((h) => h.healthy), [false, true, false]);
      for (let i = 0; i < 5; i++) assert.equal((await post(g.proxy.http.url, rpc('getBalance'))).status, 200);
      assert.equal(good.count('getBalance'), 5);
      assert.equal(behind.count('getBalance'), 0);
      behind.height = 1000;
      await waitFor(() => g.pool.healthyCount() === 2, 5_000, 'lagging one catches up');
    } finally {
      await g.close();
      await good.stop();
      await behind.stop();
    }
  });

  it('an unhealthy probe (getHealth error) takes an upstream out', async () => {
    const a = await startFakeNode();
    const withHealth: HealthProbe = async (call) => {
      const h = (await call('{"jsonrpc":"2.0","id":1,"method":"getHealth"}')) as { result?: string };
      return { ok: h.result === 'ok' };
    };
    const { log } = quietLog();
    const pool = new UpstreamPool({ surface: 't', upstreams: [{ http: a.url }], probe: withHealth, intervalMs: 50, log, registry: new Registry() });
    await pool.start();
    try {
      assert.equal(pool.healthyCount(), 1);
      a.mode = 'unhealthy';
      await waitFor(() => pool.healthyCount() === 0, 5_000, 'unhealthy');
    } finally {
      await pool.close();
      await a.stop();
    }
  });
});

function wsOpen(url: string, o: WebSocket.ClientOptions = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, o);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

function upgradeStatus(url: string, localAddress?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { localAddress });
    ws.once('open', () => reject(new Error('upgrade unexpectedly accepted')));
    ws.once('unexpected-response', (_req: http.ClientRequest, res: http.IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    ws.once('error', () => undefined);
  });
}

describe('gateway core: WebSocket pass-through', () => {
  let node: FakeNode;
  let g: Awaited<ReturnType<typeof gateway>>;
  before(async () => {
    node = await startFakeNode();
    g = await gateway([node], { wsMaxBufferedBytes: 256 * 1024 });
  });
  after(async () => {
    await g.close();
    await node.stop();
  });

  it('forwards calls, meters them, and delivers notifications in order', async () => {
    const ws = await wsOpen(g.proxy.ws!.url);
    const got: string[] = [];
    ws.on('message', (d) => got.push(d.toString()));
    ws.send(rpc('slotSubscribe', 5));
    await waitFor(() => got.length === 1, 5_000, 'subscribe reply');
    assert.deepEqual(JSON.parse(got[0]!), { jsonrpc: '2.0', result: 1, id: 5 });
    assert.deepEqual(g.usage.at(-1), { methods: ['slotSubscribe'], units: [1], outcome: 'ok' });
    node.push(500);
    await waitFor(() => got.length === 501, 5_000, 'notifications');
    const seqs = got.slice(1).map((m) => (JSON.parse(m) as { params: { result: { seq: number } } }).params.result.seq);
    assert.equal(seqs.length, 500);
    assert.deepEqual(seqs, Array.from({ length: 500 }, (_v, i) => i));
    // A refused message is answered on the socket and not forwarded.
    const before = node.count('limited');
    ws.send(rpc('limited', 9));
    await waitFor(() => got.length === 502, 5_000, 'refusal');
    assert.equal(JSON.parse(got[501]!).error.code, -32001);
    assert.equal(JSON.parse(got[501]!).id, 9);
    assert.equal(node.count('limited'), before);
    // A binary frame is metered like a text one (no way around the limits).
    ws.send(Buffer.from(rpc('limited', 12)), { binary: true });
    await waitFor(() => got.length === 503, 5_000, 'binary refusal');
    assert.equal(JSON.parse(got[502]!).id, 12);
    assert.equal(node.count('limited'), before);
    got.splice(502, 1);
    // Order holds across a waiting admission: waitFirst's answer comes before the later call's.
    ws.send(rpc('waitFirst', 10));
    ws.send(rpc('after', 11));
    await waitFor(() => got.length === 504, 5_000, 'two replies');
    assert.deepEqual(got.slice(502).map((m) => JSON.parse(m).id), [10, 11]);
    ws.close();
  });

  it('client close closes the upstream socket; upstream close closes the client with its code', async () => {
    const ws = await wsOpen(g.proxy.ws!.url);
    await waitFor(() => node.sockets.size === 1, 5_000, 'upstream socket');
    ws.close(1000);
    await waitFor(() => node.sockets.size === 0, 5_000, 'upstream closed');
    const ws2 = await wsOpen(g.proxy.ws!.url);
    const closed = new Promise<number>((r) => ws2.once('close', (code) => r(code)));
    ws2.send(rpc('closeMe'));
    assert.equal(await closed, 4321);
  });

  it('a client that does not read is closed with 1013, and others keep being served', async () => {
    const slow = await wsOpen(g.proxy.ws!.url);
    await waitFor(() => node.sockets.size === 1, 5_000, 'upstream socket');
    const closed = new Promise<number>((r) => slow.once('close', (code) => r(code)));
    (slow as unknown as { _socket: { pause(): void } })._socket.pause();
    for (let i = 0; i < 40; i++) node.push(100, 4096);
    // The proxy gives up on the client (and closes its upstream socket) while the client still reads nothing.
    await waitFor(() => node.sockets.size === 0, 10_000, 'upstream side closed');
    (slow as unknown as { _socket: { resume(): void } })._socket.resume();
    assert.equal(await closed, SLOW_CONSUMER_CLOSE);
    const fine = await wsOpen(g.proxy.ws!.url);
    const got: string[] = [];
    fine.on('message', (d) => got.push(d.toString()));
    fine.send(rpc('slotSubscribe'));
    await waitFor(() => got.length === 1, 5_000, 'served');
    fine.close();
  });

  it('refused upgrades carry the row status and JSON-RPC body', async () => {
    const forbidden = await upgradeStatus(g.proxy.ws!.url, '127.0.0.2');
    assert.equal(forbidden.status, 403);
    assert.equal(JSON.parse(forbidden.body).error.code, -32003);
    const unauth = await upgradeStatus(`${g.proxy.ws!.url}/closed`);
    assert.equal(unauth.status, 401);
    assert.equal(JSON.parse(unauth.body).error.code, -32002);
  });

  it('no upstream WebSocket → 503 on the upgrade', async () => {
    const dead = `http://127.0.0.1:${await deadPort()}`;
    const g2 = await gateway([{ http: node.url, ws: dead.replace('http', 'ws') }]);
    try {
      const r = await upgradeStatus(g2.proxy.ws!.url);
      assert.equal(r.status, 503);
      assert.equal(JSON.parse(r.body).error.code, -32099);
    } finally {
      await g2.close();
    }
  });
});
