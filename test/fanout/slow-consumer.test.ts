import assert from 'node:assert/strict';
import http2 from 'node:http2';
import v8 from 'node:v8';
import vm from 'node:vm';
import * as grpc from '@grpc/grpc-js';
import { serializeSubscribeRequest } from '../../proto/service';
import { StreamClient, type PlainResponse } from '../support/stream-client';
import { b58, makeTx, startTestFanout, type TestFanout, type TestTx } from './support';

// A subscriber that stops reading is disconnected alone (DATA_LOSS) while others keep receiving everything,
// and the server's memory stays bounded.

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

function heapMiB(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

const MAX_HEAP_GROWTH_MIB = 64;

async function sync(c: StreamClient, id: number): Promise<void> {
  c.send({ pingId: id });
  await c.waitFor((r: PlainResponse) => r.pingId === id, 5000, c.responses.length);
}

/**
 * Publishes n transactions of 0.5–1.2 kB in batches. With `keepUp`, waits before each batch until that reader
 * is at most `lag` behind: the clients share this process's event loop with the server, and a publisher that
 * outruns a healthy reader would make it a slow consumer too.
 */
async function feed(f: TestFanout, n: number, keepUp?: { reader: StreamClient; lag: number }, batch = 100): Promise<TestTx[]> {
  const all: TestTx[] = [];
  for (let i = 0; i < n; i += batch) {
    if (keepUp !== undefined) {
      const deadline = Date.now() + 10_000;
      while (all.length - keepUp.reader.transactions.length > keepUp.lag && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    }
    const txs = Array.from({ length: Math.min(batch, n - i) }, (_v, j) => makeTx({ base: (i + j) % 2 === 0 ? 0 : 12 }));
    all.push(...txs);
    await f.publishTx(...txs);
    await new Promise((r) => setImmediate(r));
  }
  return all;
}

describe('fanout slow consumer', function () {
  it('a paused grpc-js client is ended with DATA_LOSS; a second subscriber receives everything; heap stays bounded', async () => {
    const f = await startTestFanout({ queueMaxMessages: 1000, queueMaxBytes: 4 << 20, endGraceMs: 60_000, heartbeatMs: 10_000 });
    const heap0 = heapMiB();
    try {
      const slow = StreamClient.open(f.address);
      const fast = StreamClient.open(f.address, { service: 'ARPCService' });
      slow.send({ transactions: { all: {} } });
      fast.send({ transactions: { all: {} } });
      await Promise.all([sync(slow, 1), sync(fast, 1)]);
      slow.call.pause(); // stops reading: its HTTP/2 window fills, then the server-side queue

      const N = 6000;
      const sent = await feed(f, N, { reader: fast, lag: 400 });
      const last = sent[sent.length - 1]!;
      await fast.waitFor((r) => r.transaction?.signature === b58(last.signature), 30_000);
      const got = fast.transactions.map((t) => t.signature);
      assert.equal(got.length, N);
      assert.deepEqual(got, sent.map((t) => b58(t.signature)), 'all of them, in order');

      const stats = f.fanout.stats();
      assert.equal(stats.disconnects.slowConsumer, 1);
      assert.equal(stats.subscribers, 1, 'only the fast subscriber is left');
      assert.ok(stats.queue.sum < 1000);

      const heap1 = heapMiB();
      assert.ok(heap1 - heap0 < MAX_HEAP_GROWTH_MIB, `heap grew ${(heap1 - heap0).toFixed(1)} MiB`);

      slow.call.resume(); // reads what the transport held, then the status
      const s = await slow.waitForEnd(10_000);
      assert.equal(s.code, grpc.status.DATA_LOSS);
      assert.match(s.details, /slow consumer/);
      assert.ok(slow.transactions.length < N, `the slow one got ${slow.transactions.length}`);
      await fast.close();
    } finally {
      await f.close();
    }
  });

  it('a raw HTTP/2 client that never reads is reset after endGraceMs; the server forgets it', async () => {
    const f = await startTestFanout({ queueMaxMessages: 200, queueMaxBytes: 1 << 20, endGraceMs: 300, heartbeatMs: 10_000 });
    const session = http2.connect(`http://${f.address}`);
    try {
      const req = session.request({
        ':method': 'POST',
        ':path': '/arpc.StreamService/Subscribe',
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      const body = serializeSubscribeRequest({ transactions: { all: {} } });
      const frame = Buffer.alloc(5 + body.length);
      frame.writeUInt32BE(body.length, 1);
      body.copy(frame, 5);
      req.write(frame);
      for (const ev of ['close', 'aborted', 'error', 'end', 'trailers', 'response']) req.on(ev, (x: unknown) => console.log('client', ev, req.rstCode, Date.now(), typeof x === 'object' ? JSON.stringify(x) : x));
      // never attach a 'data' listener: the stream stays paused and its window fills
      for (let i = 0; i < 50 && f.fanout.stats().subscribers === 0; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(f.fanout.stats().subscribers, 1);
      await feed(f, 1500);
      for (let i = 0; i < 100 && f.fanout.stats().subscribers > 0; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(f.fanout.stats().subscribers, 0);
      assert.equal(f.fanout.stats().disconnects.slowConsumer, 1);
      // Node defers 'close' on a stream whose received data is unread, but records the reset code at once.
      for (let i = 0; i < 250 && req.rstCode === undefined; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(req.rstCode, http2.constants.NGHTTP2_CANCEL, 'the server reset the stuck stream');
    } finally {
      session.destroy();
      await f.close();
    }
  });
});
