import assert from 'node:assert/strict';
import net from 'node:net';
import bs58 from 'bs58';
import { waitFor } from '../../support/wait';
import { startHarness, type Harness } from './harness';
import { legacyTx, MIN_TIP } from './support';
import { startUpstream, type Upstream } from './upstream';

// The pipelined fast path (gateways/submit/http1-fast.ts) over raw loopback sockets: pipelined requests in
// one write, requests cut at every byte, connections that move to node:http in the middle, the bounds on a
// client that never reads and on one that never finishes a request.

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Reads HTTP/1.1 responses (Content-Length framed) off a socket. */
class Replies {
  readonly got: Reply[] = [];
  closed = false;
  private buf = Buffer.alloc(0);
  constructor(readonly socket: net.Socket) {
    socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      for (;;) {
        const end = this.buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const lines = this.buf.toString('latin1', 0, end).split('\r\n');
        const headers: Record<string, string> = {};
        for (const l of lines.slice(1)) {
          const i = l.indexOf(':');
          headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
        }
        const len = Number(headers['content-length'] ?? 0);
        if (this.buf.length < end + 4 + len) return;
        this.got.push({ status: Number(lines[0]!.split(' ')[1]), headers, body: this.buf.toString('utf8', end + 4, end + 4 + len) });
        this.buf = this.buf.subarray(end + 4 + len);
      }
    });
    socket.on('close', () => (this.closed = true));
    socket.on('error', () => undefined);
  }
  async wait(n: number, what = `${n} replies`): Promise<Reply[]> {
    await waitFor(() => this.got.length >= n, 10_000, what);
    return this.got;
  }
}

async function connect(h: Harness): Promise<{ s: net.Socket; r: Replies }> {
  const s = net.connect(h.service.http.port, '127.0.0.1');
  const r = new Replies(s);
  await new Promise<void>((res, rej) => s.once('connect', () => res()).once('error', rej));
  return { s, r };
}

function req(path: string, body: Buffer | string, key: string, extra = ''): Buffer {
  const b = typeof body === 'string' ? Buffer.from(body) : body;
  return Buffer.concat([Buffer.from(`POST ${path}?api-key=${key} HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream\r\n${extra}Content-Length: ${b.length}\r\n\r\n`, 'latin1'), b]);
}

const sig58 = (tx: Buffer): string => bs58.encode(tx.subarray(1, 65));

describe('submit HTTP fast path', function () {
  let up: Upstream;
  let h: Harness;
  const open: net.Socket[] = [];
  before(async () => {
    up = await startUpstream();
    h = await startHarness({ upstreams: [up.url], config: { requestTimeoutMs: 400, keepAliveTimeoutMs: 1_500 } });
  });
  afterEach(() => {
    for (const s of open.splice(0)) s.destroy();
  });
  after(async () => {
    await h.close();
    await up.close();
  });
  const conn = async (): Promise<{ s: net.Socket; r: Replies }> => {
    const c = await connect(h);
    open.push(c.s);
    return c;
  };

  it('answers 50 pipelined /binary requests sent in one write, in order, and forwards each', async () => {
    const txs = Array.from({ length: 50 }, (_, i) => legacyTx({ amount: 5_000 + i }));
    const sends = up.sends.length;
    const { s, r } = await conn();
    s.write(Buffer.concat(txs.map((tx) => req('/binary', tx, h.key))));
    const got = await r.wait(50);
    assert.equal(got.length, 50);
    assert.deepEqual(got.map((g) => g.status), txs.map(() => 200));
    assert.deepEqual(got.map((g) => g.body), txs.map(sig58));
    assert.match(got[0]!.headers['content-type'] ?? '', /^text\/plain/);
    assert.equal(got[0]!.headers.connection, 'keep-alive');
    assert.ok(got[0]!.headers.date !== undefined && !Number.isNaN(Date.parse(got[0]!.headers.date)));
    await waitFor(() => up.sends.length >= sends + 50, 10_000, '50 forwards');
    assert.equal(r.closed, false);
  });

  it('a request cut at every byte is answered the same', async () => {
    const tx = legacyTx();
    const bytes = Buffer.concat([req('/binary', tx, h.key), req('/plaintext', `  ${tx.toString('base64')}\n`, h.key)]);
    const { s, r } = await conn();
    for (let i = 0; i < bytes.length; i++) {
      s.write(bytes.subarray(i, i + 1));
      if (i % 64 === 0) await new Promise((res) => setImmediate(res));
    }
    const got = await r.wait(2);
    assert.equal(got.length, 2);
    assert.deepEqual(got.map((g) => [g.status, g.body]), [[200, sig58(tx)], [200, sig58(tx)]]);
  });

  it('rejections on the fast path carry the table answers', async () => {
    const { s, r } = await conn();
    s.write(Buffer.concat([
      req('/binary', legacyTx({ tip: MIN_TIP - 1 }), h.key),
      req('/binary', Buffer.from('garbage'), h.key),
      req('/binary', legacyTx(), '00000000-0000-4000-8000-000000000000'),
      req('/plaintext', 'not*base64!', h.key),
      req('/plaintext', Buffer.from([0x41, 0xff, 0xfe, 0x41]), h.key),
      req('/plaintext', Buffer.alloc(1300, 7).toString('base64'), h.key),
    ]));
    const got = await r.wait(6);
    assert.equal(got.length, 6);
    assert.equal(got[0]!.status, 400);
    assert.match(got[0]!.body, /^tip below the required minimum/);
    assert.equal(got[1]!.status, 400);
    assert.match(got[1]!.body, /^failed to deserialize transaction/);
    assert.deepEqual(got.slice(2).map((g) => [g.status, g.body]), [[401, 'unauthorized'], [400, 'invalid base64'], [400, 'invalid utf8'], [413, 'decoded transaction too large']]);
  });

  it('moves to node:http at the first other request; answers stay in order and later /binary requests still work', async () => {
    const a = legacyTx();
    const b = legacyTx();
    const rpc = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'getVersion' });
    const { s, r } = await conn();
    s.write(Buffer.concat([
      req('/binary', a, h.key),
      Buffer.from(`POST /?api-key=${h.key} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: ${rpc.length}\r\n\r\n${rpc}`),
      Buffer.from('GET /health HTTP/1.1\r\nHost: t\r\n\r\n'),
      req('/binary', b, h.key),
      Buffer.from(`POST /binary?api-key=${h.key} HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n${a.length.toString(16)}\r\n`), a, Buffer.from('\r\n0\r\n\r\n'),
    ]));
    const got = await r.wait(5);
    assert.equal(got.length, 5);
    assert.deepEqual(got.map((g) => g.status), [200, 200, 200, 200, 200]);
    assert.equal(got[0]!.body, sig58(a));
    assert.equal((JSON.parse(got[1]!.body) as { id: number }).id, 7);
    assert.equal(got[2]!.body, 'ok');
    assert.equal(got[3]!.body, sig58(b));
    assert.equal(got[4]!.body, sig58(a));
  });

  it('JSON-RPC on the fast path: pipelined sendTransaction and getVersion in order; a preflight request moves the connection to node:http, which simulates it', async () => {
    const rpcReq = (body: unknown): Buffer => {
      const b = Buffer.from(JSON.stringify(body));
      return Buffer.concat([Buffer.from(`POST /?api-key=${h.key} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: ${b.length}\r\n\r\n`), b]);
    };
    const send = (tx: Buffer, id: number, options?: Record<string, unknown>): Buffer =>
      rpcReq({ jsonrpc: '2.0', id, method: 'sendTransaction', params: options === undefined ? [bs58.encode(tx)] : [bs58.encode(tx), options] });
    const txs = Array.from({ length: 5 }, (_, i) => legacyTx({ amount: 7_000 + i }));
    const sims = up.simulations.length;
    const { s, r } = await conn();
    s.write(Buffer.concat([
      send(txs[0]!, 1),
      rpcReq({ jsonrpc: '2.0', id: 2, method: 'getVersion' }),
      send(txs[1]!, 3),
      rpcReq({ jsonrpc: '2.0', id: 4, method: 'getSlot' }),
      send(txs[2]!, 5, { skipPreflight: false }),
      send(txs[3]!, 6),
    ]));
    const got = await r.wait(6);
    assert.equal(got.length, 6);
    const bodies = got.map((g) => JSON.parse(g.body) as { id: number; result?: unknown; error?: { code: number } });
    assert.deepEqual(bodies.map((b) => b.id), [1, 2, 3, 4, 5, 6]);
    assert.deepEqual(got.map((g) => g.status), [200, 200, 200, 200, 200, 200]);
    assert.match(got[0]!.headers['content-type'] ?? '', /^application\/json/);
    assert.deepEqual([bodies[0]!.result, bodies[2]!.result, bodies[4]!.result, bodies[5]!.result], [sig58(txs[0]!), sig58(txs[1]!), sig58(txs[2]!), sig58(txs[3]!)]);
    assert.equal(typeof (bodies[1]!.result as Record<string, unknown>)['solana-core'], 'string');
    assert.equal(bodies[3]!.error?.code, -32601);
    assert.equal(up.simulations.length, sims + 1, 'the preflight request was simulated (by node:http), once');
  });

  it('unusual but valid requests are answered by node:http: HTTP/1.0, Connection: close, Expect: 100-continue', async () => {
    const tx = legacyTx();
    const one = async (bytes: Buffer): Promise<{ reply: Reply; r: Replies }> => {
      const { s, r } = await conn();
      s.write(bytes);
      const got = await r.wait(1);
      return { reply: got[got.length - 1]!, r };
    };
    const h10 = await one(Buffer.concat([Buffer.from(`POST /binary?api-key=${h.key} HTTP/1.0\r\nContent-Length: ${tx.length}\r\n\r\n`), tx]));
    assert.deepEqual([h10.reply.status, h10.reply.body], [200, sig58(tx)]);
    const close = await one(req('/binary', tx, h.key, 'Connection: close\r\n'));
    assert.deepEqual([close.reply.status, close.reply.body], [200, sig58(tx)]);
    await waitFor(() => close.r.closed, 5_000, 'Connection: close to close');
    const { s, r } = await conn();
    s.write(Buffer.from(`POST /binary?api-key=${h.key} HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: ${tx.length}\r\n\r\n`));
    await waitFor(() => r.got.length >= 1, 5_000, '100 Continue');
    assert.equal(r.got[0]!.status, 100);
    s.write(tx);
    const got = await r.wait(2);
    assert.deepEqual([got[1]!.status, got[1]!.body], [200, sig58(tx)]);
  });

  it('a declared body over the limit gets 413 and the connection closes; garbage gets 400; the server keeps serving', async () => {
    const big = await conn();
    big.s.write(Buffer.from(`POST /binary?api-key=${h.key} HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n`));
    big.s.write(Buffer.alloc(5000, 1));
    const got = await big.r.wait(1);
    assert.deepEqual([got[0]!.status, got[0]!.body], [413, 'request body too large']);
    await waitFor(() => big.r.closed, 5_000, 'the 413 connection to close');
    const junk = await conn();
    junk.s.write(Buffer.from('\x00\x01 not http at all\r\n\r\n'));
    const j = await junk.r.wait(1);
    assert.equal(j[0]!.status, 400);
    const ok = await conn();
    const tx = legacyTx();
    ok.s.write(req('/binary', tx, h.key));
    assert.equal((await ok.r.wait(1))[0]!.body, sig58(tx));
  });

  it('a client that never reads stops being read (bounded), and the others are served', async function () {
    this.timeout(60_000);
    // Cheap requests (an unknown key: no signature check) so the kernel buffers both ways fill quickly.
    const served = (): number => h.service.pipeline.metrics.value('binary', 'unauthorized');
    const hog = net.connect(h.service.http.port, '127.0.0.1');
    open.push(hog);
    hog.on('error', () => undefined);
    await new Promise<void>((res) => hog.once('connect', () => res()));
    hog.pause(); // never reads its answers
    const one = req('/binary', Buffer.from('x'), '00000000-0000-4000-8000-000000000000');
    const burst = Buffer.concat(Array.from({ length: 1024 }, () => one));
    // Keep writing until the server has stopped taking requests: its counter stands still while the hog keeps
    // sending (the kernel buffers the bytes the server no longer reads).
    let last = -1;
    let still = 0;
    const deadline = Date.now() + 45_000;
    while (still < 4 && Date.now() < deadline) {
      if (hog.writableLength < burst.length * 4) hog.write(burst);
      await new Promise((r) => setTimeout(r, 150));
      const now = served();
      still = now === last ? still + 1 : 0;
      last = now;
    }
    assert.equal(still, 4, 'the server stopped reading the hog');
    assert.ok(last > 1000, `the hog was served for a while first (${last})`);
    const other = await conn();
    const fresh = legacyTx();
    other.s.write(req('/binary', fresh, h.key));
    assert.equal((await other.r.wait(1))[0]!.body, sig58(fresh));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(served(), last, 'the hog stays unread');
    // Once it reads again, the server resumes.
    hog.resume();
    await waitFor(() => served() > last, 10_000, 'the server to read the hog again once it drains');
  });

  it('closes a connection whose request does not complete within requestTimeoutMs, and an idle one after keepAliveTimeoutMs', async () => {
    const slow = await conn();
    const head = req('/binary', legacyTx(), h.key);
    let i = 0;
    const trickle = setInterval(() => {
      if (!slow.s.destroyed && i < head.length) slow.s.write(head.subarray(i, ++i));
    }, 50);
    try {
      await waitFor(() => slow.r.closed, 5_000, 'the trickling connection to be closed');
    } finally {
      clearInterval(trickle);
    }
    assert.ok(i < head.length, 'closed before the request completed');
    assert.equal(slow.r.got.length, 0);
    const idle = await conn();
    const t0 = Date.now();
    await waitFor(() => idle.r.closed, 5_000, 'the idle connection to be closed');
    assert.ok(Date.now() - t0 >= 1_000, 'not closed before the keep-alive timeout');
  });
});
