import assert from 'node:assert/strict';
import { Budget } from '../../../fanout/h2/budget';
import { DEFAULT_CONNECTION_LIMITS } from '../../../fanout/h2/connection';
import { startGrpcServer, type ConnectionEnded, type GrpcServer } from '../../../fanout/h2/server';
import { frame } from './raw-peer';
import { E, F, grpcRequestFields, headersFrame, ping, RawH2Client, rstStream, T, windowUpdate } from './raw-h2-client';

// The own HTTP/2 server's per-connection budgets (fanout/h2/budget.ts, issue 32), against a server with small
// budgets that never refill (rate 0), so that "the last token is allowed, one more ends the connection" can be
// shown frame by frame: the reset budget (streams reset by the peer, refused, reset for the peer's errors, or
// answered with a status only: rapid reset and its variants) and the glitch budget (frames that do nothing).
// Each ends the connection with GOAWAY ENHANCE_YOUR_CALM and reports once what spent the budget.

const PATH = '/t.S/M';
const UNKNOWN = '/t.S/Unknown';
const RESETS = 8;
const GLITCHES = 20;

describe('fanout/h2 budgets: token bucket', () => {
  it('holds burst tokens, refills rate per whole second up to burst, counts a clock going back as one second', () => {
    const b = new Budget<'x' | 'y'>(3, 2, 10_500);
    assert.deepEqual([b.spend('x', 10_500), b.spend('x', 10_900), b.spend('y', 10_999)], [true, true, true]);
    assert.equal(b.spend('x', 10_999), false, 'the fourth within the second');
    assert.deepEqual([b.spend('x', 11_000), b.spend('x', 11_100), b.spend('x', 11_200)], [true, true, false], 'two more a second later');
    assert.deepEqual([b.spend('x', 60_000), b.spend('x', 60_000), b.spend('x', 60_000), b.spend('x', 60_000)], [true, true, true, false], 'never more than burst');
    assert.deepEqual([b.spend('x', 50_000), b.spend('x', 50_000), b.spend('x', 50_000)], [true, true, false], 'clock back: one second');
    assert.equal(b.topKind(), 'x');
  });
});

describe('fanout/h2 budgets: the connection ends at the first frame past its budget', function () {
  this.timeout(30_000);
  let server: GrpcServer;
  const ended: ConnectionEnded[] = [];
  before(async () => {
    server = await startGrpcServer(
      {
        host: '127.0.0.1',
        port: 0,
        paths: new Set([PATH]),
        limits: { ...DEFAULT_CONNECTION_LIMITS, resetBurst: RESETS, resetRate: 0, glitchBurst: GLITCHES, glitchRate: 0, maxNewStreamsPerSec: 1_000_000 },
        maxMessageBytes: 1024,
        maxRequestBytesTotal: 1 << 20,
        maxConnections: 10,
        keepaliveMs: 60_000,
        keepaliveTimeoutMs: 10_000,
        handshakeTimeoutMs: 10_000,
        onConnectionError: (e) => ended.push(e),
      },
      (call) => call.sendHeaders(),
    );
  });
  after(async () => {
    await server.close(0);
  });

  /**
   * Writes `spend(i)` for i < n, each followed by the server's answer to it where it has one; a PING fence shows
   * the connection still up; then one more `spend` must end it with GOAWAY ENHANCE_YOUR_CALM, reported once as
   * `flood`. `fences` is what the fence itself costs of the budget (PINGs are glitches).
   */
  async function exhaust(n: number, spend: (c: RawH2Client, i: number) => Promise<void> | void, flood: string): Promise<void> {
    const before = ended.length;
    const c = await RawH2Client.connect(server.port);
    try {
      await c.frame((x) => x.type === T.SETTINGS && x.flags === 0);
      for (let i = 0; i < n; i++) await spend(c, i);
      c.write(ping(Buffer.from('stillup!')));
      await c.frame((x) => x.type === T.PING && x.payload.toString() === 'stillup!');
      assert.equal(c.frames.filter((x) => x.type === T.GOAWAY).length, 0, 'the budget itself is allowed');
      await spend(c, n);
      const g = await c.goaway();
      assert.equal(g.code, E.ENHANCE_YOUR_CALM, `GOAWAY "${g.debug}"`);
      await c.waitClosed();
      assert.equal(ended.length, before + 1, 'one report per connection');
      const e = ended[before]!;
      assert.deepEqual([e.code, e.flood], [E.ENHANCE_YOUR_CALM, flood]);
      assert.match(e.peer, /^127\.0\.0\.1:\d+$/);
      assert.ok(e.bytesRead > 0);
    } finally {
      c.destroy();
    }
  }

  const id = (i: number): number => 2 * i + 1;

  it(`reset budget: ${RESETS} streams opened and reset by the client, then one more`, async () => {
    await exhaust(RESETS, async (c, i) => {
      c.request(id(i), PATH);
      await c.until(() => c.stream(id(i)).blocks.length === 1, 5000, 'response headers');
      c.write(rstStream(id(i), E.CANCEL));
    }, 'client_reset');
  });

  it(`reset budget: ${RESETS} malformed requests refused (RST_STREAM PROTOCOL_ERROR), then one more`, async () => {
    await exhaust(RESETS, async (c, i) => {
      c.request(id(i), PATH, [['X-Upper', '1']], true);
      if (i < RESETS) await c.until(() => c.stream(id(i)).rstCode === E.PROTOCOL_ERROR, 5000, 'refusal');
    }, 'refused');
  });

  it(`reset budget: ${RESETS} streams the server resets for the client's error (zero WINDOW_UPDATE), then one more`, async () => {
    await exhaust(RESETS, async (c, i) => {
      c.request(id(i), PATH);
      c.write(windowUpdate(id(i), 0));
      if (i < RESETS) await c.until(() => c.stream(id(i)).rstCode === E.PROTOCOL_ERROR, 5000, 'stream error');
    }, 'stream_error');
  });

  it(`reset budget: ${RESETS} requests answered with a status only (UNIMPLEMENTED), then one more`, async () => {
    await exhaust(RESETS, async (c, i) => {
      c.request(id(i), UNKNOWN, [], true);
      // The last token is spent after the status is written: the status arrives, then the GOAWAY.
      await c.streamEnded(id(i));
    }, 'no_response');
  });

  // The fence PING costs one glitch: the frames before it are GLITCHES - 1.
  const glitch = (what: string, make: (i: number) => Buffer, setup: (c: RawH2Client) => void = () => undefined): void => {
    it(`glitch budget: ${GLITCHES} ${what}, then one more`, async () => {
      let first = true;
      await exhaust(GLITCHES - 1, (c, i) => {
        if (first) setup(c);
        first = false;
        c.write(make(i));
      }, what === 'PINGs' ? 'ping' : flood(what));
    });
  };
  const flood = (what: string): string => ({ 'empty DATA frames': 'empty_data', 'PRIORITY frames': 'priority', 'connection WINDOW_UPDATEs': 'window_update', 'SETTINGS frames': 'settings', 'unknown frames': 'unknown_frame' })[what]!;
  glitch('empty DATA frames', () => frame(T.DATA, 0, 1, Buffer.alloc(0)), (c) => c.request(1, PATH));
  glitch('PRIORITY frames', () => frame(T.PRIORITY, 0, 3, Buffer.from([0, 0, 0, 1, 16])));
  glitch('connection WINDOW_UPDATEs', () => windowUpdate(0, 1));
  glitch('SETTINGS frames', () => frame(T.SETTINGS, 0, 0, Buffer.alloc(0)));
  glitch('unknown frames', () => frame(0x21, 0, 0, Buffer.alloc(0)));
  glitch('PINGs', (i) => ping(Buffer.from(`p${String(i).padStart(7, '0')}`)));

  it('WINDOW_UPDATEs that return window the server used are free: 100 of them after DATA each', async () => {
    // A call that echoes each request message back: every message is DATA the client then gives window back for.
    const echo = await startGrpcServer(
      {
        host: '127.0.0.1',
        port: 0,
        paths: new Set([PATH]),
        limits: { ...DEFAULT_CONNECTION_LIMITS, resetBurst: RESETS, resetRate: 0, glitchBurst: GLITCHES, glitchRate: 0 },
        maxMessageBytes: 1024,
        maxRequestBytesTotal: 1 << 20,
        maxConnections: 10,
        keepaliveMs: 60_000,
        keepaliveTimeoutMs: 10_000,
        handshakeTimeoutMs: 10_000,
      },
      (call) => {
        call.sendHeaders();
        call.onMessage = (m) => {
          const out = Buffer.alloc(5 + m.length);
          out.writeUInt32BE(m.length, 1);
          m.copy(out, 5);
          call.sink().write(out);
        };
      },
    );
    const c = await RawH2Client.connect(echo.port, { autoWindow: false });
    try {
      c.request(1, PATH);
      for (let i = 0; i < 100; i++) {
        const body = Buffer.from(`message ${i}`);
        const msg = Buffer.alloc(5 + body.length);
        msg.writeUInt32BE(body.length, 1);
        body.copy(msg, 5);
        const have = c.dataOf(1).length;
        c.data(1, msg);
        await c.until(() => c.dataOf(1).length >= have + msg.length, 5000, `echo ${i}`);
        c.write(Buffer.concat([windowUpdate(0, msg.length), windowUpdate(1, msg.length)]));
      }
      await c.fence();
      assert.equal(c.frames.filter((x) => x.type === T.GOAWAY).length, 0);
    } finally {
      c.destroy();
      await echo.close(0);
    }
  });

  it('new streams per second stay capped (maxNewStreamsPerSec) apart from the budgets', async () => {
    const capped = await startGrpcServer(
      {
        host: '127.0.0.1',
        port: 0,
        paths: new Set([PATH]),
        limits: { ...DEFAULT_CONNECTION_LIMITS, maxNewStreamsPerSec: 50 },
        maxMessageBytes: 1024,
        maxRequestBytesTotal: 1 << 20,
        maxConnections: 10,
        keepaliveMs: 60_000,
        keepaliveTimeoutMs: 10_000,
        handshakeTimeoutMs: 10_000,
      },
      (call) => call.sendHeaders(),
    );
    const c = await RawH2Client.connect(capped.port);
    try {
      c.write(Buffer.concat(Array.from({ length: 200 }, (_, i) => headersFrame(id(i), grpcRequestFields(PATH), F.END_HEADERS))));
      const g = await c.goaway();
      assert.equal(g.code, E.ENHANCE_YOUR_CALM);
      assert.ok(g.lastStreamId >= id(50) && g.lastStreamId < id(200), `cut off at stream ${g.lastStreamId}`);
    } finally {
      c.destroy();
      await capped.close(0);
    }
  });
});
