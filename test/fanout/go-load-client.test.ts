import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { subscribeFrame } from './raw-client';
import { goToolchain, ensureGoLoadClient } from './go-load-client-build';
import { GoLoadClient, type GoLoadCounts } from './go-load-client';
import { makeTx, startTestFanout, testKey, testKey58, type TestFanout } from './support';

// The compiled load client of the fanout bench (test/bench/loadclient) against a real fanout: it subscribes,
// counts what the fanout sends, and reads the publish stamp out of signatures[0] as the bench's publishStamp().

/** Polls the client's counters until `pred` holds; the last stats. */
async function countsUntil(c: GoLoadClient, what: string, pred: (s: GoLoadCounts) => boolean, timeoutMs = 10_000): Promise<GoLoadCounts> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await c.counts();
    if (pred(s)) return s;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A unique signature carrying `stampMs` where the bench workload puts its publish stamp (STAMP_OFF 0, f64 LE). */
function stampedSignature(stampMs: number): Buffer {
  const s = Buffer.alloc(64, 0x22);
  s.writeDoubleLE(stampMs, 0);
  crypto.randomBytes(16).copy(s, 16);
  return s;
}

describe('fanout bench: compiled load client', function () {
  let f: TestFanout | undefined;
  const clients: GoLoadClient[] = [];

  before(async function () {
    if (goToolchain() === null) {
      console.log('    (skipped: no Go toolchain on PATH; the compiled load client needs `go`)');
      this.skip();
    }
    this.timeout(180_000); // the first build fetches golang.org/x/net through the module proxy
    await ensureGoLoadClient();
  });

  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close();
    await f?.close();
    f = undefined;
  });

  it('gets every pong, counts every transaction sent to its streams and records their latency', async () => {
    f = await startTestFanout({ heartbeatMs: 60_000 });
    // 6 streams on 2 connections: streams 0, 2, 4 follow key 1, streams 1, 3, 5 key 2.
    const requests = Array.from({ length: 6 }, (_, i) => subscribeFrame({ transactions: { f: { accountInclude: [testKey58(1 + (i % 2))] } }, pingId: 7 }));
    const c = await GoLoadClient.start(f.address, 2, requests);
    clients.push(c);
    assert.equal(await c.ready(10_000), true, 'every stream got its pong');
    await c.record(true);
    const sent = Date.now();
    await f.publishTx(
      makeTx({ keys: [testKey(1)], signature: stampedSignature(sent) }), // 3 streams
      makeTx({ keys: [testKey(1), testKey(2)], signature: stampedSignature(sent) }), // 6 streams
      makeTx({ keys: [testKey(9)], signature: stampedSignature(sent) }), // none
    );
    await countsUntil(c, '9 transactions received', (x) => x.received >= 9);
    await c.record(false);
    const s = await c.stats();
    assert.equal(s.streams, 6);
    assert.equal(s.pongs, 6);
    assert.equal(s.received, 9, 'one per (transaction, matching stream)');
    assert.equal(s.messages, 6 + 9, 'the pongs and the transactions, nothing else');
    assert.equal(s.samples, 9);
    assert.ok(s.p50 !== null && s.p99 !== null && s.max !== null);
    assert.ok(s.p50 > 0 && s.p99 >= s.p50 && s.max <= Date.now() - sent + 1, `latency ${s.p50} / ${s.p99} / ${s.max} ms`);
    assert.equal(s.ended, 0);
    assert.equal(s.status, '');
    assert.ok(s.cpuMs > 0);
  });

  it('sees a stream the fanout refuses end with its gRPC status', async () => {
    f = await startTestFanout({ heartbeatMs: 60_000 });
    const bad = subscribeFrame({ transactions: { f: { accountInclude: ['not-base58-0OIl'] } } });
    const c = await GoLoadClient.start(f.address, 1, [bad]);
    clients.push(c);
    const s = await countsUntil(c, 'the stream ended', (x) => x.ended === 1);
    assert.equal(s.pongs, 0);
    assert.match(s.status, /^grpc-status 3: /, 'INVALID_ARGUMENT from the trailers');
  });
});
