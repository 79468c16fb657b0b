import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import type { SubscribeResponse } from '../../proto/gen/arpc_pb';
import { openSubscribeStream, type SubscribeStream } from '../../proto/service';
import { liveHeapBytes } from '../support/gc';
import { StreamClient, type PlainResponse } from '../support/stream-client';
import { b58, makeTx, startTestFanout, type TestFanout, type TestTx } from './support';

// A subscriber that stops reading is disconnected alone (DATA_LOSS) while others keep receiving everything,
// and the server's memory stays bounded.

function heapMiB(): number {
  return liveHeapBytes() / 2 ** 20;
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
async function feed(f: TestFanout, n: number, keepUp?: { reader: { transactions: { length: number } }; lag: number }, batch = 100): Promise<TestTx[]> {
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

/** A reader that keeps only signatures (StreamClient keeps every decoded response, which would swamp the heap figure). */
class LeanReader {
  readonly signatures: string[] = [];
  readonly call: SubscribeStream;
  constructor(address: string) {
    this.call = openSubscribeStream(address, { service: 'ARPCService' });
    this.call.on('error', () => undefined);
    this.call.on('data', (r: SubscribeResponse) => {
      const sig = r.getTransaction()?.getSignaturesList_asU8()[0];
      if (sig !== undefined) this.signatures.push(b58(sig));
    });
  }
  get transactions(): { length: number } {
    return this.signatures;
  }
}

describe('fanout slow consumer', function () {
  it('a paused grpc-js client is ended with DATA_LOSS; a second subscriber receives everything; heap stays bounded', async () => {
    const f = await startTestFanout({ queueMaxMessages: 1000, queueMaxBytes: 4 << 20, endGraceMs: 60_000, heartbeatMs: 10_000 });
    try {
      const slow = StreamClient.open(f.address);
      const fast = new LeanReader(f.address);
      slow.send({ transactions: { all: {} } });
      fast.call.write({ transactions: { all: {} } });
      await sync(slow, 1);
      for (let i = 0; i < 100 && f.fanout.stats().index.subscribers < 2; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(f.fanout.stats().index.subscribers, 2);
      slow.call.pause(); // stops reading: its HTTP/2 window fills, then the server-side queue
      const heap0 = heapMiB();

      const N = 8000;
      const sent = await feed(f, N, { reader: fast, lag: 400 });
      for (let i = 0; i < 500 && fast.signatures.length < N; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(fast.signatures.length, N);
      assert.deepEqual(fast.signatures, sent.map((t) => b58(t.signature)), 'all of them, in order');

      const stats = f.fanout.stats();
      assert.equal(stats.disconnects.slowConsumer, 1);
      assert.equal(stats.subscribers, 1, 'only the fast subscriber is left');
      assert.ok(stats.queue.sum < 1000);
      // What remains on the heap: the embedded bus's copy of every record (~1 kB each), the test's own lists.
      const growth = heapMiB() - heap0;
      assert.ok(growth < MAX_HEAP_GROWTH_MIB, `heap grew ${growth.toFixed(1)} MiB`);
      if (process.env.FANOUT_TEST_VERBOSE === '1') console.log(`      heap growth over ${N} transactions: ${growth.toFixed(1)} MiB`);

      slow.call.resume(); // reads what the transport held, then the status
      const s = await slow.waitForEnd(10_000);
      assert.equal(s.code, grpc.status.DATA_LOSS);
      assert.match(s.details, /slow consumer/);
      assert.ok(slow.transactions.length < N / 4, `the slow one got ${slow.transactions.length}`);
      fast.call.cancel();
    } finally {
      await f.close();
    }
  });

  it('a stream whose status cannot get through (window full) is reset after endGraceMs; the server forgets it', async () => {
    const f = await startTestFanout({ queueMaxMessages: 200, queueMaxBytes: 1 << 20, endGraceMs: 300, heartbeatMs: 10_000 });
    try {
      const slow = StreamClient.open(f.address);
      await sync(slow, 1);
      slow.send({ transactions: { all: {} } });
      await sync(slow, 2);
      slow.call.pause();
      // A gentle feed: the window fills (about 64 kB plus 16 messages in grpc-js), then the queue overflows.
      for (let i = 0; i < 300 && f.fanout.stats().subscribers > 0; i++) {
        await f.publishTx(...Array.from({ length: 10 }, () => makeTx()));
        await new Promise((r) => setTimeout(r, 3));
      }
      assert.equal(f.fanout.stats().subscribers, 0);
      assert.equal(f.fanout.stats().disconnects.slowConsumer, 1);
      await new Promise((r) => setTimeout(r, 800)); // past endGraceMs
      slow.call.resume();
      const s = await slow.waitForEnd(5000);
      // The status could not overtake the unread data, so the stream was reset: grpc-js reports that as CANCELLED.
      assert.equal(s.code, grpc.status.CANCELLED);
    } finally {
      await f.close();
    }
  });
});
