import assert from 'node:assert/strict';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import type { BusMessage, Consumer } from '../../bus/bus';
import { KafkaBus } from '../../bus/kafka';
import { kafkaBrokers } from '../support/kafka';
import { Collector, runBusContract, uniqueName, waitFor } from './contract';
import { quietLog } from '../support/log-capture';

// KafkaBus against a real broker (test/support/kafka.ts picks one): the shared Bus contract, then what only
// Kafka makes hard — the join-then-resolve race of 'latest', commits after handlers, topic settings.


async function makeBus(): Promise<KafkaBus> {
  return new KafkaBus({ brokers: await kafkaBrokers(), clientId: 'meridian-test', log: quietLog().log });
}

runBusContract('kafka', async () => {
  const bus = await makeBus();
  return { bus, cleanup: () => bus.close() };
});

describe('KafkaBus', function () {
  this.timeout(180_000);
  let bus: KafkaBus;
  let admin: Admin;
  const open: Consumer[] = [];

  before(async () => {
    bus = await makeBus();
    admin = new Kafka({ brokers: await kafkaBrokers(), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
  });
  after(async () => {
    await admin?.disconnect();
    await bus?.close();
  });

  async function topic(prefix: string, partitions: number): Promise<string> {
    const t = uniqueName(`kafka-${prefix}`);
    await bus.createTopics([{ name: t, partitions, compacted: false }]);
    return t;
  }

  async function consumeReady(options: Parameters<KafkaBus['consume']>[0]): Promise<Consumer> {
    const c = await bus.consume(options);
    await c.ready;
    return c;
  }

  async function committed(groupId: string, t: string): Promise<string[]> {
    const [offsets] = await admin.fetchOffsets({ groupId, topics: [t] });
    return (offsets?.partitions ?? []).sort((a, b) => a.partition - b.partition).map((p) => p.offset);
  }

  // kafkajs resolves 'latest' at its first fetch, after the join; a message produced in between is lost
  // unless positions are fixed before `ready`. Several rounds, each producing the instant ready resolves.
  for (const kind of ['independent reader', 'new group member'] as const) {
    it(`${kind === 'independent reader' ? 'an' : 'a'} ${kind} from 'latest' sees a message produced right after ready, and nothing older`, async () => {
      const t = await topic('latest', 3);
      await bus.produce(t, [0, 1, 2].map((i) => ({ key: Buffer.from(`old-${i}`), value: Buffer.from('old') })));
      const rounds = 5;
      const collectors: Collector[] = [];
      for (let r = 0; r < rounds; r++) {
        const got = new Collector();
        collectors.push(got);
        const groupId = kind === 'new group member' ? uniqueName('kafka-latest') : undefined;
        const c = await bus.consume({ topics: [t], groupId, from: 'latest', onBatch: got.onBatch });
        open.push(c);
        await c.ready;
        await bus.produce(t, [{ key: Buffer.from(`round-${r}`), value: Buffer.from(`r${r}`) }]);
      }
      // Reader r must see exactly rounds r..rounds-1, whatever partition each landed on.
      const expected = collectors.map((_, r) => Array.from({ length: rounds - r }, (_x, i) => `r${r + i}`));
      await waitFor(() => collectors.every((c, r) => c.messages.length >= expected[r]!.length), 60_000, 'every round at its readers');
      assert.equal(collectors.length, rounds);
      assert.deepEqual(collectors.map((c) => c.values().sort()), expected);
    });
  }

  it('commits a group offset only after the batch handler has finished', async () => {
    const t = await topic('commit', 1);
    const groupId = uniqueName('kafka-commit');
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const got = new Collector();
    const reader = new Collector(); // an independent reader of the same partition, for the fence
    open.push(
      ...(await Promise.all([
        consumeReady({
          topics: [t],
          groupId,
          from: 'beginning',
          onBatch: async (batch: BusMessage[]) => {
            got.onBatch(batch);
            await gate;
          },
        }),
        consumeReady({ topics: [t], from: 'beginning', onBatch: reader.onBatch }),
      ])),
    );
    await bus.produce(t, Array.from({ length: 5 }, (_, i) => ({ key: null, value: Buffer.from(`v${i}`) })));
    await waitFor(() => got.messages.length > 0, 60_000, 'the first batch');
    // The handler is still running. Fence: a later record on the same partition, produced and read back by the
    // independent reader. A commit the member made with (or before) handing out the batch was sent to the broker
    // before all of that, so it would show by now; and a member that did not wait for its handler would have
    // gone on to fetch the fence too.
    await bus.produce(t, [{ key: null, value: Buffer.from('fence') }]);
    await waitFor(() => reader.values().includes('fence'), 60_000, 'the fence at the independent reader');
    assert.deepEqual(await committed(groupId, t), ['-1']);
    assert.equal(got.values().includes('fence'), false, 'the member is still in its first batch');
    release();
    await waitFor(async () => (await committed(groupId, t))[0] === '6', 60_000, 'the commit of offset 6 (the fence included)', 100);
    assert.deepEqual(got.values(), ['v0', 'v1', 'v2', 'v3', 'v4', 'fence']);
  });

  it('redelivers a batch whose handler failed, then commits past it', async () => {
    const t = await topic('redeliver', 1);
    const groupId = uniqueName('kafka-redeliver');
    const calls: string[][] = [];
    open.push(
      await consumeReady({
        topics: [t],
        groupId,
        from: 'beginning',
        onBatch: (batch) => {
          calls.push(batch.map((m) => m.value!.toString()));
          if (calls.length === 1) throw new Error('handler failure');
        },
      }),
    );
    await bus.produce(t, [0, 1, 2].map((i) => ({ key: null, value: Buffer.from(`v${i}`) })));
    await waitFor(async () => (await committed(groupId, t))[0] === '3', 60_000, 'the commit after redelivery', 100);
    assert.ok(calls.length >= 2, `handler called ${calls.length} times`);
    assert.deepEqual(calls[0], ['v0', 'v1', 'v2']);
    assert.deepEqual([...new Set(calls.flat())].sort(), ['v0', 'v1', 'v2']);
  });

  it('an independent reader redelivers a batch whose handler failed', async () => {
    const t = await topic('redeliver-independent', 1);
    const calls: string[][] = [];
    open.push(
      await consumeReady({
        topics: [t],
        from: 'beginning',
        onBatch: (batch) => {
          calls.push(batch.map((m) => m.value!.toString()));
          if (calls.length === 1) throw new Error('handler failure');
        },
      }),
    );
    await bus.produce(t, [0, 1, 2].map((i) => ({ key: null, value: Buffer.from(`v${i}`) })));
    await waitFor(() => calls.length >= 2 && calls.slice(1).flat().includes('v2'), 60_000, 'the redelivery');
    assert.deepEqual(calls[0], ['v0', 'v1', 'v2']);
    assert.deepEqual(calls.slice(1).flat(), ['v0', 'v1', 'v2']);
  });

  it('creates topics idempotently with compaction, retention and append-time settings', async () => {
    const plain = uniqueName('kafka-plain');
    const compacted = uniqueName('kafka-compacted');
    const specs = [
      { name: plain, partitions: 2, compacted: false, retentionMs: 3_600_000 },
      { name: compacted, partitions: 1, compacted: true },
    ];
    await bus.createTopics(specs);
    await bus.createTopics(specs); // already there: no error
    const { resources } = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [plain, compacted].map((name) => ({ type: 2 /* TOPIC */, name, configNames: ['cleanup.policy', 'retention.ms', 'message.timestamp.type'] })),
    });
    const config = (name: string): Record<string, string> =>
      Object.fromEntries((resources.find((r) => r.resourceName === name)?.configEntries ?? []).map((e) => [e.configName, e.configValue]));
    assert.deepEqual(config(plain), { 'cleanup.policy': 'delete', 'retention.ms': '3600000', 'message.timestamp.type': 'LogAppendTime' });
    assert.equal(config(compacted)['cleanup.policy'], 'compact');
    assert.deepEqual(await bus.endOffsets(plain), new Map([[0, '0'], [1, '0']]));
  });
});
