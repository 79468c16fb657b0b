import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type http from 'node:http';
import { EmbeddedBus } from '../../bus/embedded';
import { projectRentals, type RentalProjection } from '../../bus/rental-registry';
import { TOPIC, defaultTopicSpecs } from '../../bus/topics';
import { Registry, serveMetrics } from '../../infra/base/metrics';
import { isLoopback, startAdmin, type AdminServer } from '../../infra/ops/admin/server';
import { quietLog } from '../support/log-capture';

// The two HTTP surfaces that are not hot (koa apps): the metrics/health server and the loopback-only rentals admin
// endpoint. Every route's status, content-type and body as a client sees them, over a raw socket so nothing
// between the test and the server normalises what is sent.

interface Raw {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** One request on its own connection; `body` is sent with a JSON content-type. */
function request(port: number, method: string, path: string, body?: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', reject);
    s.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines) {
        const i = l.indexOf(':');
        headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
      }
      let rest = text.slice(split + 4);
      if (headers['transfer-encoding'] === 'chunked') {
        let out = '';
        for (;;) {
          const nl = rest.indexOf('\r\n');
          const n = parseInt(rest.slice(0, nl), 16);
          if (n === 0) break;
          out += rest.slice(nl + 2, nl + 2 + n);
          rest = rest.slice(nl + 2 + n + 2);
        }
        rest = out;
      }
      resolve({ status: Number(statusLine!.split(' ')[1]), headers, body: rest });
    });
    const head = body === undefined ? '' : `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n`;
    s.write(`${method} ${path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n${head}\r\n`);
    if (body !== undefined) s.write(body);
  });
}

describe('infra: metrics server', () => {
  let server: http.Server;
  let port: number;
  let ready = true;
  const registry = new Registry();
  registry.counter('t_total', 'a counter').inc(2);

  before(async () => {
    server = await serveMetrics(registry, '127.0.0.1', 0, [
      { name: 'bus', check: () => ready },
      { name: 'chain', check: () => ready },
    ]);
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('/metrics: the exposition text, any method', async () => {
    for (const method of ['GET', 'POST']) {
      const r = await request(port, method, '/metrics');
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-type'], 'text/plain; version=0.0.4');
      assert.equal(r.body, '# HELP t_total a counter\n# TYPE t_total counter\nt_total 2\n');
    }
  });

  it('/healthz and /readyz: plain text; /readyz names the failing checks with 503', async () => {
    const h = await request(port, 'GET', '/healthz');
    assert.deepEqual([h.status, h.headers['content-type'], h.body], [200, 'text/plain', 'ok\n']);
    const r = await request(port, 'GET', '/readyz');
    assert.deepEqual([r.status, r.headers['content-type'], r.body], [200, 'text/plain', 'ready\n']);
    ready = false;
    try {
      const nr = await request(port, 'GET', '/readyz');
      assert.deepEqual([nr.status, nr.headers['content-type'], nr.body], [503, 'text/plain', 'not ready: bus, chain\n']);
    } finally {
      ready = true;
    }
  });

  it('anything else is 404 with an empty body and no content-type (a query string is another route)', async () => {
    for (const path of ['/', '/nope', '/metrics?x=1', '/healthz/']) {
      const r = await request(port, 'GET', path);
      assert.deepEqual([r.status, r.headers['content-type'], r.body], [404, undefined, ''], path);
    }
  });

  it('a remote source that fails makes the scrape 500 with an empty body', async () => {
    const reg = new Registry();
    reg.addRemote(() => Promise.reject(new Error('worker gone')));
    const s = await serveMetrics(reg, '127.0.0.1', 0, []);
    try {
      const r = await request((s.address() as AddressInfo).port, 'GET', '/metrics');
      assert.deepEqual([r.status, r.headers['content-type'], r.body], [500, undefined, '']);
    } finally {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });
});

describe('infra: rentals admin endpoint', () => {
  const bus = new EmbeddedBus();
  const { log, lines } = quietLog();
  let projection: RentalProjection;
  let admin: AdminServer;
  let port: number;
  const json = (r: Raw): unknown => {
    assert.equal(r.headers['content-type'], 'application/json');
    assert.equal(Number(r.headers['content-length']), Buffer.byteLength(r.body));
    return JSON.parse(r.body);
  };

  before(async () => {
    await bus.createTopics(defaultTopicSpecs().filter((s) => s.name === TOPIC.rentals));
    projection = await projectRentals(bus, log);
    admin = await startAdmin(bus, projection, { host: '127.0.0.1', port: 0, regions: ['fra', 'ams'], region: 'fra', log });
    port = Number(admin.address.split(':')[1]);
  });
  after(async () => {
    await admin.close();
    await projection.close();
    await bus.close();
  });

  it('binds loopback only; isLoopback knows v4, v6 and v4-mapped addresses', async () => {
    await assert.rejects(startAdmin(bus, projection, { host: '0.0.0.0', port: 0, regions: [], log }), /binds loopback only, not 0\.0\.0\.0/);
    for (const a of ['127.0.0.1', '127.9.9.9', '::1', '::ffff:127.0.0.1']) assert.ok(isLoopback(a), a);
    for (const a of [undefined, '', '10.0.0.1', '::ffff:10.0.0.1', '::2']) assert.ok(!isLoopback(a), String(a));
  });

  it('PUT, GET one, GET all, DELETE, as JSON', async () => {
    const put = await request(port, 'PUT', '/rentals/r1', JSON.stringify({ region: 'fra', rps: 5, ips: ['203.0.113.9'] }));
    assert.equal(put.status, 200);
    const want = { id: 'r1', rps: 5, tps: 0, region: 'fra', ips: ['203.0.113.9'], apiKeys: [], tokens: [], dedicatedPaths: [], pps: 0, evmIps: [], status: 'active' };
    assert.deepEqual(json(put), want);
    assert.deepEqual(projection.byIp('203.0.113.9')?.id, 'r1', 'live when the PUT answers');
    assert.deepEqual(json(await request(port, 'GET', '/rentals/r1')), want);
    assert.deepEqual(json(await request(port, 'GET', '/rentals')), [want]);
    assert.deepEqual(json(await request(port, 'GET', '/rentals/?x=1')), [want]);
    const del = await request(port, 'DELETE', '/rentals/r1');
    assert.deepEqual([del.status, json(del)], [200, { deleted: 'r1' }]);
    assert.equal(projection.byIp('203.0.113.9'), undefined, 'gone when the DELETE answers');
    for (const m of ['GET', 'DELETE']) {
      const r = await request(port, m, '/rentals/r1');
      assert.deepEqual([r.status, json(r)], [404, { error: 'no rental r1' }], m);
    }
  });

  it('refuses invalid bodies with 400 and the problem, and bodies over 1 MiB with 413', async () => {
    const cases: Array<[string, string]> = [
      ['[1]', 'rental must be a JSON object'],
      ['null', 'rental must be a JSON object'],
      ['', 'Unexpected end of JSON input'],
      [JSON.stringify({ rps: -1 }), 'rps must be a non-negative number'],
      [JSON.stringify({ region: 'mars' }), 'region: "mars" is not a known region (fra, ams)'],
    ];
    for (const [body, problem] of cases) {
      const r = await request(port, 'PUT', '/rentals/r2', body);
      assert.deepEqual([r.status, json(r)], [400, { error: `invalid rental: ${problem}`, problems: [problem] }], body);
    }
    const big = await request(port, 'PUT', '/rentals/r2', JSON.stringify({ region: 'fra', pad: 'x'.repeat(1 << 20) }));
    assert.deepEqual([big.status, json(big)], [413, { error: 'body over 1048576 bytes' }]);
    assert.equal(projection.all().length, 0);
  });

  it('GET /regions: the regions rentals may name and the one this service serves (what `rentals put` defaults to)', async () => {
    const r = await request(port, 'GET', '/regions');
    assert.equal(r.status, 200);
    const o = json(r) as { regions: string[]; region: string };
    assert.deepEqual(o.regions, ['fra', 'ams']);
    assert.equal(o.region, 'fra');
  });

  it('other routes 404, other methods 405 with allow; a malformed escape is a logged 500', async () => {
    for (const path of ['/', '/foo', '/rentals/a/b']) {
      const r = await request(port, 'GET', path);
      assert.deepEqual([r.status, json(r)], [404, { error: 'no such route; try /rentals, /regions or /topics/records' }], path);
    }
    const cases: Array<[string, string, string]> = [
      ['POST', '/rentals', 'GET'],
      ['PUT', '/rentals', 'GET'],
      ['DELETE', '/rentals', 'GET'],
      ['POST', '/rentals/r1', 'GET, PUT, DELETE'],
      ['PUT', '/regions', 'GET'],
    ];
    for (const [method, path, allow] of cases) {
      const r = await request(port, method, path);
      assert.deepEqual([r.status, r.headers.allow, json(r)], [405, allow, { error: `${method} is not allowed here` }], `${method} ${path}`);
    }
    const bad = await request(port, 'GET', '/rentals/%E0');
    assert.deepEqual([bad.status, json(bad)], [500, { error: 'internal error' }]);
    assert.ok(lines.some((l) => /admin request failed/.test(l) && /URI malformed/.test(l)));
  });
});
