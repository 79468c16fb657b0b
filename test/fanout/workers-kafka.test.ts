import assert from 'node:assert/strict';
import path from 'node:path';
import { KafkaBus } from '../../bus/kafka';
import { startFanoutWorkers, workerScript, type FanoutWorkers } from '../../fanout/cluster';
import os from 'node:os';
import { resolveWorkers } from '../../fanout/config';
import { parseConfig } from '../../infra/config';
import { ConfigError } from '../../infra/base/config-read';
import { launch } from '../../infra/launcher';
import { Registry } from '../../infra/base/metrics';
import { kafkaBrokers } from '../support/kafka';
import { StreamClient } from '../support/stream-client';
import { waitFor } from '../support/wait';
import { b58, makeTx, quietLog, testKey, testKey58, txRecord, uniqueTopics, type TestTx } from './support';

// fanout.workers = 2 on a real Kafka broker, through the production worker entry (infra/fanout-worker.ts) that
// the launcher starts: the workers share one port, streams (one connection per client) are spread over both
// processes, each worker reads every transaction itself, every client gets exactly what its filter matches,
// the metrics of both workers are served labelled, a crashed worker is replaced, and close() ends every stream
// with UNAVAILABLE before the workers exit.

const CLIENTS = 6;
/** Every client's filter includes this key too: a transaction touching it goes to everyone (the end marker). */
const ALL = 100;

/** One connection per client (grpc-js would otherwise put every client on one shared connection). */
const ownConnection = { channelOptions: { 'grpc.use_local_subchannel_pool': 1 } };

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('fanout workers on Kafka (fanout.workers = 2, one port)', function () {
  this.timeout(180_000);
  let bus: KafkaBus;
  let pool: FanoutWorkers | undefined;
  const clients: StreamClient[] = [];
  let topics: ReturnType<typeof uniqueTopics>;

  before(async () => {
    const brokers = await kafkaBrokers();
    bus = new KafkaBus({ brokers, clientId: 'fanout-workers-test', log: quietLog() });
    topics = uniqueTopics('workers');
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
      fanout: { listen: '127.0.0.1:0', workers: 2, topics, heartbeatMs: 60_000 },
    });
    pool = await startFanoutWorkers({ count: 2, ...workerScript(path.dirname(require.resolve('../../infra/fanout-worker')), 'fanout-worker', __filename), payload: { config }, log: quietLog() });
  });

  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await pool?.close();
    await bus?.close();
  });

  const openClient = async (i: number): Promise<StreamClient> => {
    const c = StreamClient.open(pool!.address, ownConnection);
    c.send({ transactions: { [`own-${i}`]: { accountInclude: [testKey58(i), testKey58(ALL)] } }, pingId: 1 });
    await c.waitFor((r) => r.pingId === 1, 30_000);
    return c;
  };

  it('spreads streams over both workers; each client receives exactly the transactions its filter matches', async () => {
    const workers = pool!.workers();
    assert.equal(workers.length, 2);
    assert.notEqual(workers[0]!.pid, workers[1]!.pid);
    assert.ok(workers.every((w) => w.pid !== process.pid && alive(w.pid)));

    for (let i = 0; i < CLIENTS; i++) clients.push(await openClient(i));
    // Connections go to the workers in turn: both hold streams, all streams are held.
    const stats = await pool!.stats();
    assert.equal(stats.length, 2);
    const held = stats.map((s) => s.body.subscribers);
    assert.ok(held.every((n) => n > 0), `streams per worker: ${held.join(', ')}`);
    assert.equal(held[0]! + held[1]!, CLIENTS);

    // Transaction j touches client j % 7's key (7: nobody's), and every third one also client (j+1) % 7's.
    const N = 70;
    const keysFor = (j: number): Buffer[] => (j % 3 === 0 ? [testKey(j % 7), testKey((j + 1) % 7)] : [testKey(j % 7)]);
    const txs = Array.from({ length: N }, (_v, j) => makeTx({ keys: keysFor(j), base: j }));
    const last = makeTx({ keys: [testKey(ALL)] });
    for (let j = 0; j < N; j += 10) await bus.produce(topics.transactions, txs.slice(j, j + 10).map((t) => txRecord(t)));
    await bus.produce(topics.transactions, [txRecord(last)]);
    await Promise.all(clients.map((c) => c.waitFor((r) => r.transaction?.signature === b58(last.signature), 60_000)));

    const expectedFor = (i: number): TestTx[] => [...txs.filter((_t, j) => j % 7 === i || (j % 3 === 0 && (j + 1) % 7 === i)), last];
    for (let i = 0; i < CLIENTS; i++) {
      const got = clients[i]!.transactions.map((t) => t.signature);
      const want = expectedFor(i).map((t) => b58(t.signature));
      assert.equal(got.length, want.length, `client ${i}`);
      assert.deepEqual(got, want, `client ${i}`);
      assert.ok(clients[i]!.responses.filter((r) => r.transaction !== undefined).every((r) => r.filters.length === 1 && r.filters[0] === `own-${i}`));
    }
    // Each worker read every transaction itself.
    const after = await pool!.stats();
    assert.deepEqual(after.map((s) => s.body.transactions), [N + 1, N + 1]);
    assert.equal(after.reduce((n, s) => n + s.body.deliveredTransactions, 0), clients.reduce((n, c) => n + c.transactions.length, 0));
  });

  it('serves both workers\' metrics in one scrape, labelled by worker', async () => {
    const registry = new Registry();
    registry.counter('meridian_test_primary_total', 'a series of the primary itself').inc(3);
    registry.gauge('meridian_fanout_subscribers', 'Open Subscribe streams').set(0);
    registry.addRemote(() => pool!.metrics());
    const text = await registry.renderAll();
    const lines = text.split('\n');
    assert.equal(lines.filter((l) => l === '# TYPE meridian_fanout_subscribers gauge').length, 1, 'one TYPE line per family');
    const perWorker = lines.filter((l) => l.startsWith('meridian_fanout_subscribers{worker='));
    assert.equal(perWorker.length, 2);
    const counts = perWorker.map((l) => Number(l.split(' ')[1]));
    assert.ok(counts.every((n) => n > 0));
    assert.equal(counts[0]! + counts[1]!, CLIENTS);
    assert.ok(lines.includes('meridian_test_primary_total 3'));
    assert.equal(lines.filter((l) => /^meridian_fanout_transactions_total\{worker="[01]"\} 71$/.test(l)).length, 2);
    // Each worker process's runtime series (prom-client's names), labelled like its own.
    for (const w of ['0', '1']) {
      const rss = lines.find((l) => l.startsWith(`process_resident_memory_bytes{worker="${w}"} `));
      assert.ok(rss !== undefined && Number(rss.split(' ')[1]) > 10_000_000, `worker ${w} RSS: ${rss}`);
      assert.ok(lines.some((l) => l.startsWith(`nodejs_eventloop_lag_p99_seconds{worker="${w}"} `)), `worker ${w} event-loop lag`);
    }
    assert.equal(lines.filter((l) => l === '# TYPE process_resident_memory_bytes gauge').length, 1, 'one TYPE line for the workers\' RSS');
  });

  it('replaces a worker that crashes; its clients see the stream end, new clients are served', async () => {
    const before = pool!.workers();
    const victim = before[0]!;
    const onVictim = clients.slice(); // which clients sat on it is not known from outside; some did
    process.kill(victim.pid, 'SIGKILL');
    await waitFor(() => pool!.healthy() && pool!.workers().every((w) => w.pid !== victim.pid), 30_000, 'the worker to be replaced');
    assert.equal(pool!.workers().length, 2);
    const ended = onVictim.filter((c) => c.status !== undefined);
    assert.ok(ended.length > 0 && ended.length < CLIENTS, `streams ended by the crash: ${ended.length}`);
    assert.ok(ended.every((c) => c.status!.code !== 0));
    const c = await openClient(0);
    clients.push(c);
    const tx = makeTx({ keys: [testKey(0)] });
    await bus.produce(topics.transactions, [txRecord(tx)]);
    await c.waitFor((r) => r.transaction?.signature === b58(tx.signature), 60_000);
  });

  it('close() ends every open stream with UNAVAILABLE and the workers exit', async () => {
    const open = clients.filter((c) => c.status === undefined);
    assert.ok(open.length > 0);
    const pids = pool!.workers().map((w) => w.pid);
    assert.equal(pids.length, 2);
    await pool!.close();
    const statuses = await Promise.all(open.map((c) => c.waitForEnd(20_000)));
    assert.equal(statuses.length, open.length);
    assert.ok(statuses.every((s) => s.codeName === 'UNAVAILABLE'), statuses.map((s) => `${s.codeName} ${s.details}`).join('; '));
    await waitFor(() => pids.every((p) => !alive(p)), 10_000, 'the workers to exit');
    assert.equal(pool!.healthy(), false);
  });
});

describe('fanout.workers in config and in the launcher', function () {
  this.timeout(180_000);

  it('refuses workers > 1 on the embedded bus; "auto" is one per core on Kafka and 1 on the embedded bus', () => {
    assert.throws(() => parseConfig({ fanout: { workers: 2 } }), (e: unknown) => e instanceof ConfigError && /fanout\.workers 2 needs the Kafka bus/.test(e.message));
    assert.throws(() => parseConfig({ fanout: { workers: 'many' } }), ConfigError);
    const auto = parseConfig({ fanout: { workers: 'auto' } }).fanout;
    assert.equal(auto.workers, 0);
    assert.equal(resolveWorkers(auto, 'embedded'), 1);
    assert.equal(resolveWorkers(auto, 'kafka'), os.availableParallelism());
    assert.equal(resolveWorkers(parseConfig({ bus: { kind: 'kafka', brokers: ['127.0.0.1:1'] }, fanout: { workers: 3 } }).fanout, 'kafka'), 3);
  });

  it('meridian start with fanout.workers = 2 on Kafka: one stream endpoint, both workers in /metrics and /readyz, stop ends the streams', async () => {
    const brokers = await kafkaBrokers();
    const topics = uniqueTopics('workers-launch');
    const cfg = parseConfig({
      bus: { kind: 'kafka', brokers, createTopics: true },
      log: { level: 'warn' },
      metrics: { listen: '127.0.0.1:0' },
      ingest: { enabled: false },
      demo: { enabled: false },
      rentals: { fromBus: false },
      fanout: { listen: '127.0.0.1:0', workers: 2, topics, heartbeatMs: 60_000 },
    });
    const bus = new KafkaBus({ brokers, clientId: 'fanout-workers-launch-test', log: quietLog() });
    await bus.createTopics([
      { name: topics.transactions, partitions: 1, compacted: false },
      { name: topics.slots, partitions: 1, compacted: false },
      { name: topics.entries, partitions: 1, compacted: false },
    ]);
    const running = await launch(cfg, quietLog());
    const clients: StreamClient[] = [];
    let stopped = false;
    try {
      const address = running.endpoints.stream!;
      assert.match(address, /^127\.0\.0\.1:\d+$/);
      for (let i = 0; i < 4; i++) {
        const c = StreamClient.open(address, ownConnection);
        c.send({ transactions: { mine: { accountInclude: [testKey58(200 + i)] } }, pingId: 7 });
        clients.push(c);
      }
      await Promise.all(clients.map((c) => c.waitFor((r) => r.pingId === 7, 30_000)));
      const tx = makeTx({ keys: [testKey(202)] });
      await bus.produce(topics.transactions, [txRecord(tx)]);
      await clients[2]!.waitFor((r) => r.transaction?.signature === b58(tx.signature), 60_000);

      const metricsUrl = running.endpoints.metrics!;
      const text = await (await fetch(metricsUrl)).text();
      const perWorker = text.split('\n').filter((l) => l.startsWith('meridian_fanout_subscribers{worker='));
      assert.equal(perWorker.length, 2, text.split('\n').filter((l) => l.includes('fanout_subscribers')).join('\n'));
      assert.equal(perWorker.reduce((n, l) => n + Number(l.split(' ')[1]), 0), 4);
      assert.equal(text.split('\n').filter((l) => l === '# TYPE meridian_fanout_subscribers gauge').length, 1);
      const ready = await fetch(metricsUrl.replace(/\/metrics$/, '/readyz'));
      assert.equal(ready.status, 200);

      await running.stop();
      stopped = true;
      const statuses = await Promise.all(clients.map((c) => c.waitForEnd(20_000)));
      assert.equal(statuses.length, 4);
      assert.ok(statuses.every((st) => st.codeName === 'UNAVAILABLE'), statuses.map((st) => st.codeName).join(', '));
      assert.equal(clients[0]!.transactions.length, 0);
      assert.equal(clients[2]!.transactions.length, 1);
    } finally {
      if (!stopped) await running.stop();
      await Promise.all(clients.map((c) => c.close()));
      await bus.close();
    }
  });
});
