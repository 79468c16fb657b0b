import assert from 'node:assert/strict';
import path from 'node:path';
import { KafkaBus } from '../../../bus/kafka';
import { startFanoutWorkers, workerScript, type FanoutWorkers } from '../../../fanout/cluster';
import type { FanoutHandle } from '../../../fanout/server';
import { parseConfig } from '../../../infra/config';
import { kafkaBrokers } from '../../support/kafka';
import { waitFor } from '../../support/wait';
import { makeTx, quietLog, testKey, testKey58, txRecord, uniqueTopics, type TestTx } from '../support';
import { seqsContiguous, V2Client } from './client';

// Stream v2 with fanout.workers = 2 on a real Kafka broker, through the production worker entry
// (infra/fanout-worker.ts), on both transports. Each worker reads the stream topics itself and keeps its own v2 hub;
// a cursor is bus offsets, so a stream cut off on one worker resumes on the other: replay there, ReplayComplete,
// then live, with exactly the transactions of an uninterrupted reference stream from the cursor on (no gap, no
// duplicate), the same cursors, and seq without holes. Which worker holds a stream is read from the workers' own
// counts (v2stats), since node:cluster picks the worker per connection.

type V2Stats = NonNullable<ReturnType<FanoutHandle['v2Stats']>>;

/** One connection per client (grpc-js would otherwise put every client on one shared connection, one worker). */
const OWN_CONNECTION = { 'grpc.use_local_subchannel_pool': 1 };
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

for (const transport of ['h2', 'grpc-js'] as const) {
  describe(`stream v2 with fanout.workers = 2 on Kafka, ${transport === 'h2' ? 'own HTTP/2 server' : 'grpc-js server'}`, function () {
    this.timeout(180_000);
    let bus: KafkaBus;
    let pool: FanoutWorkers | undefined;
    let topics: ReturnType<typeof uniqueTopics>;
    const clients: V2Client[] = [];
    const key = testKey(9, 23);
    const key58 = testKey58(9, 23);
    const matching = (n: number): TestTx[] => Array.from({ length: n }, () => makeTx({ keys: [key, testKey(1, 1)], slot: 777n }));
    const publish = (txs: TestTx[]): Promise<void> => bus.produce(topics.transactions, txs.map((t) => txRecord(t)));

    before(async () => {
      const brokers = await kafkaBrokers();
      bus = new KafkaBus({ brokers, clientId: 'v2-workers-test', log: quietLog() });
      topics = uniqueTopics('v2-workers');
      await bus.createTopics([
        { name: topics.transactions, partitions: 1, compacted: false },
        { name: topics.slots, partitions: 1, compacted: false },
        { name: topics.entries, partitions: 1, compacted: false },
      ]);
      const config = parseConfig({
        bus: { kind: 'kafka', brokers, createTopics: false },
        log: { level: process.env.LOG === '1' ? 'debug' : 'warn' },
        metrics: { enabled: false },
        rentals: { fromBus: false },
        fanout: { listen: '127.0.0.1:0', workers: 2, transport, topics, heartbeatMs: 300 },
      });
      pool = await startFanoutWorkers({ count: 2, ...workerScript(path.dirname(require.resolve('../../../infra/fanout-worker')), 'fanout-worker', __filename), payload: { config }, log: quietLog() });
    });

    after(async () => {
      for (const c of clients.splice(0)) c.cancel();
      await pool?.close();
      await bus?.close();
    });

    /** Open v2 streams per worker slot. */
    const perWorker = async (): Promise<V2Stats[]> => (await pool!.request<V2Stats | null>({ kind: 'v2stats' })).map((r) => {
      assert.ok(r.body !== null, `v2 is on in worker ${r.slot}`);
      return r.body;
    });
    const total = async (): Promise<number> => (await perWorker()).reduce((n, s) => n + s.streams, 0);

    /** A client with the filter, acknowledged (its stream is open on some worker); returns it and that worker's slot. */
    async function opened(): Promise<{ c: V2Client; slot: number }> {
      const before = await perWorker();
      const c = new V2Client(pool!.address, OWN_CONNECTION);
      clients.push(c);
      c.add('a', [key58]);
      await c.waitUpdates((u) => u.some((x) => x.hasFilterAck()), 'ack');
      const after = await perWorker();
      const grew = after.findIndex((s, i) => s.streams === before[i]!.streams + 1);
      assert.ok(grew >= 0 && after.reduce((n, s) => n + s.streams, 0) === before.reduce((n, s) => n + s.streams, 0) + 1, 'one stream more, on one worker');
      return { c, slot: grew };
    }

    /** Started live and current (a heartbeat with a cursor came): what it gets next is what its worker reads next. */
    async function live(c: V2Client): Promise<void> {
      c.start();
      await c.waitUpdates((u) => u.some((x) => x.hasHeartbeat() && x.getCursor_asU8().length > 0), 'a heartbeat with a cursor');
    }

    it('a stream resumed from its cursor on the other worker: replay, ReplayComplete, then live — no gap, no duplicate, the same cursors', async () => {
      assert.equal(pool!.workers().length, 2);
      const ref = (await opened()).c;
      await live(ref);
      const { c: a, slot: aSlot } = await opened();
      await live(a);

      const first = matching(20);
      const other = makeTx({ keys: [testKey(50, 50)] }); // matches nobody: still moves the cursor
      await publish([...first.slice(0, 10), other, ...first.slice(10)]);
      await a.waitUpdates(() => a.txs().length === 20, 'a has 20');
      const cursor = a.txs()[11]!.getCursor_asU8(); // after the 12th
      const streamsBefore = await total();
      a.cancel();
      await waitFor(async () => (await total()) === streamsBefore - 1, 10_000, "a's stream gone from its worker");

      const second = matching(30);
      await publish(second);

      // node:cluster hands connections to the workers in turn; open until one lands on the other worker.
      let b: V2Client | undefined;
      for (let attempt = 0; attempt < 6 && b === undefined; attempt++) {
        const o = await opened();
        if (o.slot !== aSlot) b = o.c;
        else {
          const n = await total();
          o.c.cancel();
          await waitFor(async () => (await total()) === n - 1, 10_000, 'the probe stream gone');
        }
      }
      assert.ok(b !== undefined, 'a connection reached the other worker');
      const replaysBefore = await perWorker();
      b.start({ cursor });
      await b.waitUpdates((u) => u.some((x) => x.hasReplayComplete()), 'replay complete');
      const replaysAfter = await perWorker();
      assert.equal(replaysAfter[1 - aSlot]!.replaysStarted, replaysBefore[1 - aSlot]!.replaysStarted + 1, 'the other worker replayed');
      assert.equal(replaysAfter[aSlot]!.replaysStarted, replaysBefore[aSlot]!.replaysStarted);

      const third = matching(15);
      await publish(third);
      await ref.waitUpdates(() => ref.txs().length === 65, 'ref has all');
      await b.waitUpdates(() => b.txs().length === 65 - 12, 'b has the rest');
      assert.deepEqual(b.sigs(), ref.sigs().slice(12), 'exactly the reference from the cursor on');
      assert.deepEqual(b.txs().map((u) => hex(u.getCursor_asU8())), ref.txs().slice(12).map((u) => hex(u.getCursor_asU8())), 'cursors are bus positions: the same on both workers');
      const rc = b.updates.findIndex((u) => u.hasReplayComplete());
      const replayed = b.updates.slice(0, rc).filter((u) => u.hasTransaction()).length;
      assert.equal(b.updates[rc]!.getReplayComplete()!.getReplayed(), replayed);
      assert.ok(replayed >= 38, `the 38 published before the start were replayed (${replayed})`);
      assert.ok(seqsContiguous(b.updates) && seqsContiguous(ref.updates));
      assert.equal(b.status, undefined);
    });
  });
}
