import assert from 'node:assert/strict';
import http from 'node:http';
import WebSocket from 'ws';
import { rentalsFromList, type RentalRegistry } from '../../../bus/rental-registry';
import { RPC_ERRORS } from '../../../gateways/rpc/errors';
import type { LocalChain } from '../../../infra/local/chain';
import { waitFor } from '../../support/wait';
import { deadPort, post, startFakeNode, type FakeNode } from '../fake-node';
import { chainUpstream, localChain, rental, testGateway, type TestGateway } from './support';

// The chain gateway's error contract and metering rules (issue 8; service.md Errors and Limits), each row with a
// real HTTP client against the gateway in front of the real local chain node. The rows that need a node to
// misbehave (slow scans, short batch replies, no healthy node) use the controllable fake node. After every error
// the same gateway answers a good request.

const call = (method: string, params: unknown[] = [], id: number | string = 1): Record<string, unknown> => ({ jsonrpc: '2.0', id, method, params });
const body = (x: unknown): string => JSON.stringify(x);
const SIG = '1111111111111111111111111111111111111111111111111111111111111111';

function assertRow(r: { status: number; json: any }, row: { status: number; code: number; message: string }): void {
  assert.equal(r.status, row.status, JSON.stringify(r.json));
  assert.equal(r.json?.jsonrpc, '2.0');
  assert.equal(r.json.error.code, row.code);
  assert.ok(String(r.json.error.message).startsWith(row.message), r.json.error.message);
}

function upgrade(url: string, localAddress?: string): Promise<{ status: number; json: any } | 'open'> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { localAddress });
    ws.once('open', () => {
      ws.close();
      resolve('open');
    });
    ws.once('unexpected-response', (_q: http.ClientRequest, res: http.IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
    });
    ws.once('error', () => undefined);
  });
}

describe('chain gateway: the error table', () => {
  it('has exactly the contract rows and never -32100', () => {
    const rows = Object.values(RPC_ERRORS).map((r) => `${r.status} ${r.code} ${r.message}`);
    for (const want of [
      '400 -32600 Invalid request body',
      '401 -32002 Unauthorized',
      '403 -32003 You have no access to this service',
      '403 -32004 You have no access to this service',
      '429 -32001 RPS limit exceeded',
      '429 -32005 Transaction rate limit exceeded',
      '429 -32005 Scan request timed out waiting for concurrency slot',
      '502 -32000 Unable to process Batch Request',
      '503 -32099 Server is not available at the moment',
    ]) assert.ok(rows.includes(want), want);
    assert.equal(Object.values(RPC_ERRORS).filter((r) => r.code === -32100).length, 0);
  });
});

describe('chain gateway: auth and errors against the local chain node', () => {
  let chain: LocalChain;
  let gw: TestGateway;
  const alive = async (): Promise<void> => {
    const r = await post(gw.http.url, body(call('getSlot')));
    assert.equal(r.status, 200);
    assert.equal(typeof r.json.result, 'number');
  };
  before(async () => {
    chain = await localChain();
    gw = await testGateway({
      upstreams: [chainUpstream(chain)],
      rentals: [
        rental({ id: 'std', ips: ['127.0.0.1'], rps: 1000, tps: 100 }),
        rental({ id: 'ded', dedicatedPaths: ['d3d1cated-path-0001'], rps: 1000 }),
        rental({ id: 'tyo', ips: ['127.0.0.3'], region: 'tyo' }),
        rental({ id: 'norpc', ips: ['127.0.0.4'], rps: 0, tps: 0 }),
      ],
    });
  });
  after(async () => {
    await gw.close();
    await chain.close();
  });

  it('serves a registered egress IP and a dedicated path', async () => {
    await alive();
    const d = await post(`${gw.http.url}/d3d1cated-path-0001`, body(call('getSlot')), { localAddress: '127.0.0.9' });
    assert.equal(d.status, 200);
    assert.equal(typeof d.json.result, 'number');
  });

  it('400 -32600 for unparsable JSON, a scalar, an empty batch, a wrong content-type', async () => {
    for (const [b, ct] of [['{"jsonrpc":', undefined], ['"hello"', undefined], ['[]', undefined], [body(call('getSlot')), 'text/plain']] as const) {
      assertRow(await post(gw.http.url, b, { contentType: ct }), RPC_ERRORS.invalidBody);
      await alive();
    }
  });

  it('401 -32002 for a dedicated path that is not a credential', async () => {
    assertRow(await post(`${gw.http.url}/not-a-credential`, body(call('getSlot'))), RPC_ERRORS.unauthorized);
    await alive();
  });

  it('403 -32003 for an egress IP no rental registers', async () => {
    assertRow(await post(gw.http.url, body(call('getSlot')), { localAddress: '127.0.0.2' }), RPC_ERRORS.noAccessIp);
    await alive();
  });

  it('403 -32004 for a rental of another region, and for one without chain RPC', async () => {
    assertRow(await post(gw.http.url, body(call('getSlot')), { localAddress: '127.0.0.3' }), RPC_ERRORS.noAccessScope);
    assertRow(await post(gw.http.url, body(call('getSlot')), { localAddress: '127.0.0.4' }), RPC_ERRORS.noAccessScope);
    await alive();
  });

  it('the WebSocket upgrade is refused with the same rows', async () => {
    const cases: Array<[string, string | undefined, (typeof RPC_ERRORS)[keyof typeof RPC_ERRORS]]> = [
      [gw.ws.url, '127.0.0.2', RPC_ERRORS.noAccessIp],
      [`${gw.ws.url}/not-a-credential`, undefined, RPC_ERRORS.unauthorized],
      [gw.ws.url, '127.0.0.3', RPC_ERRORS.noAccessScope],
    ];
    for (const [url, from, row] of cases) {
      const r = await upgrade(url, from);
      assert.notEqual(r, 'open');
      if (r !== 'open') assertRow(r, row);
    }
    assert.equal(await upgrade(gw.ws.url), 'open');
    assert.equal(await upgrade(`${gw.ws.url}/d3d1cated-path-0001`, '127.0.0.9'), 'open');
  });

  it("the node's own errors pass through unchanged, error.data included", async () => {
    const r = await post(gw.http.url, body(call('getBalance', ['not-a-key'])));
    const direct = await post(chain.httpUrl, body(call('getBalance', ['not-a-key'])));
    assert.equal(r.status, direct.status);
    assert.deepEqual(r.json.error, direct.json.error);
    const unknown = await post(gw.http.url, body(call('noSuchMethodAnywhere')));
    assert.equal(unknown.json.error.code, -32601);
  });

  it('rentals removed or added take effect on the next request (no cached decision)', async () => {
    let current: RentalRegistry = rentalsFromList([]);
    const dyn: RentalRegistry = {
      byIp: (ip) => current.byIp(ip),
      byEvmIp: (ip) => current.byEvmIp(ip),
      byToken: (t) => current.byToken(t),
      byApiKey: (k) => current.byApiKey(k),
      byDedicatedPath: (p) => current.byDedicatedPath(p),
      all: () => current.all(),
    };
    const g2 = await testGateway({ upstreams: [chainUpstream(chain)], rentals: dyn });
    try {
      assertRow(await post(g2.http.url, body(call('getSlot')), { localAddress: '127.0.0.5' }), RPC_ERRORS.noAccessIp);
      current = rentalsFromList([rental({ id: 'live', ips: ['127.0.0.5'] })]);
      assert.equal((await post(g2.http.url, body(call('getSlot')), { localAddress: '127.0.0.5' })).status, 200);
    } finally {
      await g2.close();
    }
  });
});

describe('chain gateway: metering', () => {
  let chain: LocalChain;
  before(async () => {
    chain = await localChain();
  });
  after(async () => {
    await chain.close();
  });

  it('ten getTransaction in one batch cost 100 units; a batch that does not fit is refused whole, nothing charged', async () => {
    // rps 10 over the 10 s window = 100 units.
    const gw = await testGateway({ upstreams: [chainUpstream(chain)], rentals: [rental({ id: 'r10', ips: ['127.0.0.1'], rps: 10 })] });
    try {
      const ten = Array.from({ length: 10 }, (_v, i) => call('getTransaction', [SIG], i));
      const eleven = [...ten, call('getSlot', [], 99)];
      // 101 units: refused whole with the RPS row, nothing forwarded, nothing charged…
      const refused = await post(gw.http.url, body(eleven));
      assertRow(refused, RPC_ERRORS.rpsLimit);
      assert.equal(Array.isArray(refused.json), false);
      // …so exactly 100 units are still there: the ten fit.
      const ok = await post(gw.http.url, body(ten));
      assert.equal(ok.status, 200);
      assert.equal(ok.json.length, 10);
      // And now the window is spent: the cheapest call is refused.
      assertRow(await post(gw.http.url, body(call('getSlot'))), RPC_ERRORS.rpsLimit);
    } finally {
      await gw.close();
    }
  });

  it('a refused batch reaches no node (counted at the upstream)', async () => {
    const fake = await startFakeNode();
    const gw = await testGateway({ upstreams: [{ http: fake.url }], rentals: [rental({ id: 'r1', ips: ['127.0.0.1'], rps: 1 })] });
    try {
      const r = await post(gw.http.url, body([call('getTransaction', [SIG], 1), call('getSlot', [], 2)]));
      assertRow(r, RPC_ERRORS.rpsLimit);
      assert.equal(fake.count('getTransaction'), 0);
      assert.equal((await post(gw.http.url, body(call('getTransaction', [SIG])))).status, 200);
      assert.equal(fake.count('getTransaction'), 1);
    } finally {
      await gw.close();
      await fake.stop();
    }
  });

  it('sendTransaction draws on TPS, not RPS', async () => {
    // rps 1 → 10 units per window; tps 2 → 2 transactions per second.
    const gw = await testGateway({ upstreams: [chainUpstream(chain)], rentals: [rental({ id: 'tx', ips: ['127.0.0.1'], rps: 1, tps: 2 })] });
    try {
      const send = (): Promise<{ status: number; json: any }> => post(gw.http.url, body(call('sendTransaction', ['notatransaction'])));
      // Transactions do not touch the RPS budget: ten reads still fit after them.
      const a = await send();
      const b = await send();
      assert.notEqual(a.status, 429);
      assert.notEqual(b.status, 429);
      assert.ok(a.json.error !== undefined && a.json.error.code !== -32005, 'the node judged the bogus transaction');
      assertRow(await send(), RPC_ERRORS.tpsLimit);
      for (let i = 0; i < 10; i++) assert.equal((await post(gw.http.url, body(call('getSlot')))).status, 200);
      // RPS spent: reads refused with -32001, which says nothing about TPS.
      assertRow(await post(gw.http.url, body(call('getSlot'))), RPC_ERRORS.rpsLimit);
      // A TPS refusal is told apart from the scan one by its prefix.
      const t = await send();
      assertRow(t, RPC_ERRORS.tpsLimit);
      assert.ok(!String(t.json.error.message).startsWith('Scan request timed out'));
    } finally {
      await gw.close();
    }
  });

  it('scan methods wait for a concurrency slot, and time out with 429 -32005 Scan…', async () => {
    const fake = await startFakeNode();
    fake.mode = 'slow';
    fake.slowMs = 600;
    const gw = await testGateway({
      upstreams: [{ http: fake.url }],
      rentals: [rental({ id: 'scan', ips: ['127.0.0.1'] })],
      config: { scan: { concurrency: 1, maxWaitMs: 2_000 } },
    });
    const gw2 = await testGateway({
      upstreams: [{ http: fake.url }],
      rentals: [rental({ id: 'scan', ips: ['127.0.0.1'] })],
      config: { scan: { concurrency: 1, maxWaitMs: 150 } },
    });
    try {
      const gpa = body(call('getProgramAccounts', ['11111111111111111111111111111111']));
      // Wait: the second scan starts after the first ends, and both succeed.
      const t0 = Date.now();
      const [x, y] = await Promise.all([post(gw.http.url, gpa), post(gw.http.url, gpa)]);
      assert.equal(x.status, 200);
      assert.equal(y.status, 200);
      assert.ok(Date.now() - t0 >= 1_100, `two 600 ms scans through one slot took ${Date.now() - t0} ms`);
      // Timeout: the wait (150 ms) runs out while the first scan (3 s) holds the slot.
      fake.slowMs = 3_000;
      const [p, q] = await Promise.all([post(gw2.http.url, gpa), post(gw2.http.url, gpa)]);
      const statuses = [p.status, q.status].sort();
      assert.deepEqual(statuses, [200, 429]);
      assertRow(p.status === 429 ? p : q, RPC_ERRORS.scanTimeout);
      // Non-scan calls never wait for scan slots.
      fake.mode = 'ok';
      assert.equal((await post(gw2.http.url, body(call('getSlot')))).status, 200);
    } finally {
      await gw.close();
      await gw2.close();
      await fake.stop();
    }
  });

  it('subscribe calls over the WebSocket cost 1 and share the RPS window', async () => {
    // rps 1 → 10 units per window.
    const gw = await testGateway({ upstreams: [chainUpstream(chain)], rentals: [rental({ id: 'ws', ips: ['127.0.0.1'], rps: 1 })] });
    try {
      for (let i = 0; i < 8; i++) assert.equal((await post(gw.http.url, body(call('getSlot')))).status, 200);
      const ws = new WebSocket(gw.ws.url);
      const got: any[] = [];
      ws.on('message', (d) => got.push(JSON.parse(d.toString())));
      await new Promise((r) => ws.once('open', r));
      ws.send(body(call('slotSubscribe', [], 1)));
      ws.send(body(call('rootSubscribe', [], 2)));
      ws.send(body(call('slotSubscribe', [], 3)));
      await waitFor(() => got.filter((m) => m.id !== undefined).length === 3, 10_000, 'three replies');
      const byId = new Map(got.filter((m) => m.id !== undefined).map((m) => [m.id, m]));
      assert.equal(typeof byId.get(1).result, 'number');
      assert.equal(typeof byId.get(2).result, 'number');
      assert.equal(byId.get(3).error.code, RPC_ERRORS.rpsLimit.code);
      assert.ok(byId.get(3).error.message.startsWith(RPC_ERRORS.rpsLimit.message));
      ws.close();
      assertRow(await post(gw.http.url, body(call('getSlot'))), RPC_ERRORS.rpsLimit);
    } finally {
      await gw.close();
    }
  });
});

describe('chain gateway: upstream faults', () => {
  let fake: FakeNode;
  before(async () => {
    fake = await startFakeNode();
  });
  after(async () => {
    await fake.stop();
  });

  it('502 -32000 for a batch the node answers with the wrong length, garbage, or a dropped connection', async () => {
    const gw = await testGateway({ upstreams: [{ http: fake.url }], rentals: [rental({ id: 'b', ips: ['127.0.0.1'] })] });
    try {
      // (not getSlot/getHealth: the fake node answers its health probes normally whatever its mode)
      const batch = body([call('getBlockHeight', [], 1), call('getBalance', [], 2)]);
      for (const mode of ['short-batch', 'garbage', 'drop'] as const) {
        fake.mode = mode;
        assertRow(await post(gw.http.url, batch), RPC_ERRORS.batchFailed);
        fake.mode = 'ok';
        await waitFor(() => gw.pool.healthyCount() === 1, 5_000, 'healthy again');
        const ok = await post(gw.http.url, batch);
        assert.equal(ok.status, 200);
        assert.equal(ok.json.length, 2);
      }
    } finally {
      await gw.close();
    }
  });

  it('503 -32099 when no upstream is healthy (HTTP, batch, WebSocket upgrade), served again when one is', async () => {
    const dead = await deadPort();
    const chain = await localChain();
    const gw = await testGateway({ upstreams: [{ http: `http://127.0.0.1:${dead}`, ws: `ws://127.0.0.1:${dead}` }], rentals: [rental({ id: 'u', ips: ['127.0.0.1'] })] });
    const gw2 = await testGateway({ upstreams: [{ http: fake.url, ws: fake.wsUrl }], rentals: [rental({ id: 'u', ips: ['127.0.0.1'] })] });
    try {
      assertRow(await post(gw.http.url, body(call('getSlot'))), RPC_ERRORS.unavailable);
      assertRow(await post(gw.http.url, body([call('getSlot')])), RPC_ERRORS.unavailable);
      const up = await upgrade(gw.ws.url);
      assert.notEqual(up, 'open');
      if (up !== 'open') assertRow(up, RPC_ERRORS.unavailable);
      // A node reporting itself unhealthy (getHealth error) is out too, and comes back without a restart.
      fake.mode = 'unhealthy';
      await waitFor(() => gw2.pool.healthyCount() === 0, 5_000, 'unhealthy');
      assertRow(await post(gw2.http.url, body(call('getSlot'))), RPC_ERRORS.unavailable);
      fake.mode = 'ok';
      await waitFor(() => gw2.pool.healthyCount() === 1, 5_000, 'healthy');
      assert.equal((await post(gw2.http.url, body(call('getSlot')))).status, 200);
    } finally {
      await gw.close();
      await gw2.close();
      await chain.close();
    }
  });

  it('sendTransaction and requestAirdrop are never sent twice, even with a second healthy upstream', async () => {
    const other = await startFakeNode();
    const gw = await testGateway({ upstreams: [{ http: fake.url }, { http: other.url }], rentals: [rental({ id: 's', ips: ['127.0.0.1'] })] });
    try {
      fake.mode = 'drop';
      other.mode = 'drop';
      for (const m of ['sendTransaction', 'requestAirdrop']) {
        await waitFor(() => gw.pool.healthyCount() === 2, 5_000, 'both healthy');
        const before = fake.count(m) + other.count(m);
        const r = await post(gw.http.url, body(call(m, ['x'])));
        assertRow(r, RPC_ERRORS.upstreamFailed);
        assert.equal(fake.count(m) + other.count(m) - before, 1, m);
      }
      await waitFor(() => gw.pool.healthyCount() === 2, 5_000, 'both healthy');
      const before = fake.count('getBalance') + other.count('getBalance');
      const read = await post(gw.http.url, body(call('getBalance', ['x'])));
      assertRow(read, RPC_ERRORS.upstreamFailed);
      assert.equal(fake.count('getBalance') + other.count('getBalance') - before, 2, 'a read is tried on each upstream');
    } finally {
      fake.mode = 'ok';
      await gw.close();
      await other.stop();
    }
  });
});
