import assert from 'node:assert/strict';
import { KafkaBus } from '../../bus/kafka';
import { kafkaBrokers } from '../support/kafka';
import { StreamClient, type PlainResponse } from '../support/stream-client';
import { FanoutChild } from './child-process';
import { b58, makeTx, quietLog, slotRecord, testKey, testKey58, txRecord, uniqueTopics } from './support';

// Horizontal scale on a real Kafka broker: two fanout processes read the same topics as independent readers;
// two subscribers on each, with the same filters, receive identical data (same transactions, same order,
// same filter names, same slots), duplicates included in the publish and dropped by each instance.

describe('fanout horizontal scale on Kafka (two processes)', function () {
  this.timeout(180_000);
  let bus: KafkaBus;
  const children: FanoutChild[] = [];
  const clients: StreamClient[] = [];

  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(children.map((c) => c.close()));
    await bus?.close();
  });

  it('four subscribers on two instances receive identical streams', async () => {
    const brokers = await kafkaBrokers();
    bus = new KafkaBus({ brokers, clientId: 'fanout-scale-test', log: quietLog() });
    const topics = uniqueTopics('scale');
    await bus.createTopics([
      { name: topics.transactions, partitions: 1, compacted: false },
      { name: topics.slots, partitions: 1, compacted: false },
      { name: topics.entries, partitions: 1, compacted: false },
    ]);
    const cc = { bus: 'kafka' as const, brokers, fanout: { topics, heartbeatMs: 60_000 } };
    children.push(...(await Promise.all([FanoutChild.start(cc), FanoutChild.start(cc)])));
    assert.notEqual(children[0]!.address, children[1]!.address);

    for (const child of children) {
      for (const service of ['StreamService', 'ARPCService'] as const) {
        const c = StreamClient.open(child.address, { service });
        c.send({ transactions: { hot: { accountInclude: [testKey58(1), testKey58(2)] }, both: { accountRequired: [testKey58(1), testKey58(3)] } }, newSeenSlots: true, pingId: 1 });
        clients.push(c);
      }
    }
    await Promise.all(clients.map((c) => c.waitFor((r) => r.pingId === 1, 10_000)));

    const N = 120;
    const keysFor = (i: number): Buffer[] => (i % 3 === 0 ? [testKey(1), testKey(3)] : i % 3 === 1 ? [testKey(2)] : [testKey(4)]);
    const txs = Array.from({ length: N }, (_v, i) => makeTx({ keys: keysFor(i), base: i }));
    for (let i = 0; i < N; i += 20) {
      const batch = txs.slice(i, i + 20);
      await bus.produce(topics.transactions, [...batch, batch[0]!].map((t) => txRecord(t))); // one duplicate per batch
      await bus.produce(topics.slots, [slotRecord(BigInt(1000 + i)), slotRecord(BigInt(1000 + i))]);
    }
    const expected = txs.filter((_t, i) => i % 3 !== 2);
    const last = expected[expected.length - 1]!;
    const lastSlot = 1000 + N - 20;
    await Promise.all(
      clients.map(async (c) => {
        await c.waitFor((r) => r.transaction?.signature === b58(last.signature), 60_000);
        await c.waitFor((r) => r.newSlot === lastSlot, 60_000);
      }),
    );

    const view = (c: StreamClient): Array<Pick<PlainResponse, 'filters' | 'newSlot'> & { sig?: string }> =>
      c.responses.filter((r) => r.pingId === undefined).map((r) => ({ filters: r.filters, newSlot: r.newSlot, sig: r.transaction?.signature }));
    const first = view(clients[0]!);
    assert.equal(first.filter((r) => r.sig !== undefined).length, expected.length);
    assert.deepEqual(first.filter((r) => r.sig !== undefined).map((r) => r.sig), expected.map((t) => b58(t.signature)));
    assert.deepEqual(first.filter((r) => r.sig === b58(txs[0]!.signature)).map((r) => r.filters), [['both', 'hot']]); // the map's wire order (google-protobuf sorts keys)
    assert.deepEqual(first.filter((r) => r.sig === b58(txs[1]!.signature)).map((r) => r.filters), [['hot']]);
    assert.equal(first.filter((r) => r.newSlot !== undefined).length, N / 20, 'each slot once');
    // Transactions and slots come from two topics, so their interleaving may differ between instances;
    // each kind on its own must be identical.
    for (const c of clients.slice(1)) {
      const v = view(c);
      assert.deepEqual(v.filter((r) => r.sig !== undefined), first.filter((r) => r.sig !== undefined));
      assert.deepEqual(v.filter((r) => r.newSlot !== undefined), first.filter((r) => r.newSlot !== undefined));
    }
    for (const child of children) {
      const u = await child.usage();
      const stats = u.stats as { transactions: number; dedupeDrops: number; subscribers: number };
      assert.equal(stats.transactions, N);
      assert.equal(stats.subscribers, 2);
      assert.ok(stats.dedupeDrops >= N / 20 * 2, `dedupe drops ${stats.dedupeDrops}`);
    }
  });
});
