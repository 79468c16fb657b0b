import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Bus, BusMessage, ConsumeOptions, Consumer, ProduceRecord } from '../../bus/bus';
import { foldLatest } from '../../bus/compacted';
import { decodeRental, encodeRental, rentalTombstone, type Rental } from '../../bus/topics/rentals';
import { waitFor } from '../support/wait';

// The Bus contract, run against every implementation (test/bus/embedded.test.ts, test/bus/kafka.test.ts).
// Every test makes its own topics and groups (random suffix), so runs can share one Kafka broker. Nothing here
// depends on timing: conditions are awaited with generous timeouts, and Kafka's slow group joins are covered
// by awaiting Consumer.ready.

const WAIT_MS = 60_000;

export { waitFor };

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

/** Collects what a consumer receives, batch by batch. */
export class Collector {
  readonly messages: BusMessage[] = [];
  readonly batches: BusMessage[][] = [];
  readonly onBatch = (batch: BusMessage[]): void => {
    this.batches.push(batch);
    for (const m of batch) this.messages.push(m);
  };
  values(): string[] {
    return this.messages.map((m) => (m.value === null ? '<null>' : m.value.toString('utf8')));
  }
}

function rec(key: string | null, value: string | null, headers?: Record<string, Buffer>): ProduceRecord {
  return { key: key === null ? null : Buffer.from(key), value: value === null ? null : Buffer.from(value), headers };
}

/** Where each message came from, for a count that is off: a repeated offset is the reader's, a new one the producer's. */
function where(ms: BusMessage[]): string {
  return ms.map((m) => `${m.partition}:${m.offset}=${m.value?.toString('utf8') ?? '<null>'}`).join(' ');
}

function byPartition(ms: BusMessage[]): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const m of ms) out.set(m.partition, [...(out.get(m.partition) ?? []), m.value?.toString('utf8') ?? '<null>']);
  return new Map([...out].sort((a, b) => a[0] - b[0]));
}

function valuesOfKey(ms: BusMessage[], key: string): string[] {
  return ms.filter((m) => m.key?.toString('utf8') === key).map((m) => m.value?.toString('utf8') ?? '<null>');
}

export function runBusContract(name: string, make: () => Promise<{ bus: Bus; cleanup: () => Promise<void> }>): void {
  describe(`Bus contract: ${name}`, function () {
    this.timeout(180_000);
    let bus: Bus;
    let cleanup: (() => Promise<void>) | undefined;
    const open = new Set<Consumer>();

    before(async () => {
      ({ bus, cleanup } = await make());
    });
    afterEach(async () => {
      await Promise.all([...open].map((c) => c.close()));
      open.clear();
    });
    after(async () => {
      await cleanup?.();
    });

    async function topic(prefix: string, partitions: number, compacted = false): Promise<string> {
      const t = uniqueName(`contract-${prefix}`);
      await bus.createTopics([{ name: t, partitions, compacted }]);
      return t;
    }
    async function consume(options: ConsumeOptions): Promise<Consumer> {
      const c = await bus.consume(options);
      open.add(c);
      await c.ready;
      return c;
    }
    async function closeConsumer(c: Consumer): Promise<void> {
      open.delete(c);
      await c.close();
    }

    it('keeps every key on one partition and its values in produce order', async () => {
      const t = await topic('order', 3);
      const keys = Array.from({ length: 12 }, (_, i) => `key-${i}`);
      const rounds = 15;
      for (let round = 0; round < rounds; round += 3) {
        const batch: ProduceRecord[] = [];
        for (let r = round; r < round + 3; r++) for (const k of keys) batch.push(rec(k, `${k}:${r}`));
        await bus.produce(t, batch);
      }
      const got = new Collector();
      await consume({ topics: [t], from: 'beginning', onBatch: got.onBatch });
      await waitFor(() => got.messages.length >= keys.length * rounds, WAIT_MS, 'all keyed messages');

      assert.equal(got.messages.length, keys.length * rounds, where(got.messages));
      const expected = keys.map((k) => Array.from({ length: rounds }, (_, r) => `${k}:${r}`));
      assert.deepEqual(keys.map((k) => valuesOfKey(got.messages, k)), expected);
      const partitionsOfKey = keys.map((k) => new Set(got.messages.filter((m) => m.key?.toString() === k).map((m) => m.partition)).size);
      assert.deepEqual(partitionsOfKey, keys.map(() => 1));
      assert.ok(new Set(got.messages.map((m) => m.partition)).size > 1, 'twelve keys should spread over more than one of three partitions');
      // Offsets within a partition arrive strictly ascending.
      const offsets = [...byPartition(got.messages).keys()].map((p) => got.messages.filter((m) => m.partition === p).map((m) => BigInt(m.offset)));
      assert.deepEqual(offsets.map((os) => os.every((o, i) => i === 0 || o > os[i - 1]!)), offsets.map(() => true));
    });

    it('round-trips keys, values, headers, null keys and null-value tombstones', async () => {
      const t = await topic('roundtrip', 2);
      const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
      const records: ProduceRecord[] = [
        { key: Buffer.from('k-bin'), value: binary, headers: { 'h-text': Buffer.from('x'), 'h-bin': Buffer.from([0, 255, 7]) } },
        rec('k-tomb', null),
        rec(null, 'no key'),
      ];
      const sentAt = Date.now();
      await bus.produce(t, records);
      const got = new Collector();
      await consume({ topics: [t], from: 'beginning', onBatch: got.onBatch });
      await waitFor(() => got.messages.length >= 3, WAIT_MS, 'three messages');

      assert.equal(got.messages.length, 3, where(got.messages));
      const bin = got.messages.find((m) => m.key?.toString() === 'k-bin');
      const tomb = got.messages.find((m) => m.key?.toString() === 'k-tomb');
      const noKey = got.messages.find((m) => m.key === null);
      assert.ok(bin !== undefined && tomb !== undefined && noKey !== undefined);
      assert.deepEqual(bin.value, binary);
      assert.deepEqual(Object.keys(bin.headers).sort(), ['h-bin', 'h-text']);
      assert.deepEqual(bin.headers['h-text'], Buffer.from('x'));
      assert.deepEqual(bin.headers['h-bin'], Buffer.from([0, 255, 7]));
      assert.equal(tomb.value, null);
      assert.deepEqual(noKey.value, Buffer.from('no key'));
      for (const m of got.messages) {
        assert.equal(m.topic, t);
        assert.ok(m.partition === 0 || m.partition === 1, `partition ${m.partition}`);
        assert.match(m.offset, /^(0|[1-9][0-9]*)$/);
        assert.ok(Math.abs(m.timestamp - sentAt) < 60_000, `timestamp ${m.timestamp} vs sent ${sentAt}`);
      }
    });

    it('appends to an explicit partition instead of the key\'s, and refuses a partition the topic lacks', async () => {
      const t = await topic('explicit-partition', 3);
      // One key on every partition: without `partition` all three would land on the key's one partition.
      await bus.produce(t, [0, 1, 2].map((p) => ({ ...rec('same-key', `to-${p}`), partition: p })));
      const got = new Collector();
      await consume({ topics: [t], from: 'beginning', onBatch: got.onBatch });
      await waitFor(() => new Set(got.values()).size >= 3, WAIT_MS, 'three messages');
      // Each partition holds its own record and only it. Distinct values, not a count: kafkajs's producer (not
      // idempotent) resends a whole request when one partition of a just-created topic answers "not leader yet",
      // so a record may be there twice — delivery is at-least-once on Kafka, and that is not what this tests.
      const distinct = new Map([...byPartition(got.messages)].map(([p, vs]) => [p, [...new Set(vs)]]));
      assert.deepEqual(distinct, new Map([[0, ['to-0']], [1, ['to-1']], [2, ['to-2']]]));
      await assert.rejects(bus.produce(t, [{ ...rec('k', 'v'), partition: 7 }]));
    });

    it("replays from the beginning for a late reader; a 'latest' reader sees only what follows", async () => {
      const t = await topic('replay', 2);
      const before = Array.from({ length: 6 }, (_, i) => rec(`k${i}`, `old-${i}`));
      await bus.produce(t, before);
      const all = new Collector();
      await consume({ topics: [t], from: 'beginning', onBatch: all.onBatch });
      await waitFor(() => all.messages.length >= 6, WAIT_MS, 'replayed messages');
      const fresh = new Collector();
      await consume({ topics: [t], from: 'latest', onBatch: fresh.onBatch });
      await bus.produce(t, Array.from({ length: 4 }, (_, i) => rec(`k${i}`, `new-${i}`)));
      await waitFor(() => all.messages.length >= 10 && fresh.messages.length >= 4, WAIT_MS, 'new messages at both readers');

      assert.equal(all.messages.length, 10, where(all.messages));
      assert.deepEqual(all.values().sort(), [...before.map((r) => r.value!.toString()), 'new-0', 'new-1', 'new-2', 'new-3'].sort());
      assert.equal(fresh.messages.length, 4, where(fresh.messages));
      assert.deepEqual(fresh.values().sort(), ['new-0', 'new-1', 'new-2', 'new-3']);
    });

    it('gives each of two independent readers every message, in partition order', async () => {
      const t = await topic('readers', 2);
      const a = new Collector();
      const b = new Collector();
      await consume({ topics: [t], from: 'latest', onBatch: a.onBatch });
      await consume({ topics: [t], from: 'latest', onBatch: b.onBatch });
      const keys = ['x', 'y', 'z', 'w'];
      for (let round = 0; round < 5; round++) {
        await bus.produce(t, keys.flatMap((k) => [0, 1].map((j) => rec(k, `${k}:${round * 2 + j}`))));
      }
      await waitFor(() => a.messages.length >= 40 && b.messages.length >= 40, WAIT_MS, 'both readers');

      assert.equal(a.messages.length, 40, where(a.messages));
      assert.equal(b.messages.length, 40, where(b.messages));
      assert.deepEqual(byPartition(a.messages), byPartition(b.messages));
      const expected = keys.map((k) => Array.from({ length: 10 }, (_, i) => `${k}:${i}`));
      assert.deepEqual(keys.map((k) => valuesOfKey(a.messages, k)), expected);
    });

    it('shares partitions between the live members of a group', async () => {
      const t = await topic('share', 4);
      const group = uniqueName('contract-share');
      const a = new Collector();
      const b = new Collector();
      await consume({ topics: [t], groupId: group, from: 'latest', onBatch: a.onBatch });
      await consume({ topics: [t], groupId: group, from: 'latest', onBatch: b.onBatch });
      // Kafka rebalances when the second member joins; ready on both means both hold their assignment.
      const sent = Array.from({ length: 40 }, (_, i) => `v${i}`);
      await bus.produce(t, sent.map((v, i) => rec(`key-${i}`, v)));
      const seen = (): Set<string> => new Set([...a.values(), ...b.values()]);
      await waitFor(() => seen().size >= sent.length, WAIT_MS, 'every message at some member');

      assert.equal(seen().size, sent.length);
      assert.ok(a.messages.length > 0 && b.messages.length > 0, `one member got nothing (${a.messages.length}/${b.messages.length})`);
      const partitionsA = new Set(a.messages.map((m) => m.partition));
      const overlap = b.messages.filter((m) => partitionsA.has(m.partition));
      assert.equal(overlap.length, 0, 'a partition was served to two members at once');
    });

    it('resumes a group from its committed offsets after the member restarts', async () => {
      const t = await topic('resume', 2);
      const group = uniqueName('contract-resume');
      const first = Array.from({ length: 10 }, (_, i) => rec(`k${i % 5}`, `first-${i}`));
      const rest = Array.from({ length: 10 }, (_, i) => rec(`k${i % 5}`, `rest-${i}`));
      const m1 = new Collector();
      const c1 = await consume({ topics: [t], groupId: group, from: 'beginning', onBatch: m1.onBatch });
      // One record at a time, each awaited, so the first member handles (and commits) many small batches and
      // "its last batch" is a small part of what it saw: replaying everything would not pass as at-least-once.
      for (const [i, r] of first.entries()) {
        await bus.produce(t, [r]);
        await waitFor(() => m1.values().includes(`first-${i}`), WAIT_MS, `first member to see first-${i}`);
      }
      await closeConsumer(c1);
      await bus.produce(t, rest);
      const m2 = new Collector();
      await consume({ topics: [t], groupId: group, from: 'beginning', onBatch: m2.onBatch });
      await waitFor(() => m2.values().filter((v) => v.startsWith('rest-')).length >= 10, WAIT_MS, 'second member to see the rest');

      const restValues = rest.map((r) => r.value!.toString());
      assert.deepEqual(m2.values().filter((v) => v.startsWith('rest-')).sort(), [...restValues].sort());
      // At-least-once allows re-seeing the first member's last batch of a partition, never anything earlier.
      const lastBatches = new Set<string>();
      for (const p of [0, 1]) {
        const last = [...m1.batches].reverse().find((b) => b[0]!.partition === p);
        for (const m of last ?? []) lastBatches.add(m.value!.toString());
      }
      assert.ok(lastBatches.size < first.length, `the first member's last batches hold ${lastBatches.size} of ${first.length}`);
      const replayed = m2.values().filter((v) => v.startsWith('first-'));
      assert.deepEqual(replayed.filter((v) => !lastBatches.has(v)), []);
    });

    it('rebuilds latest-per-key from the compacted rentals topic', async () => {
      const t = await topic('rentals', 1, true);
      const id = (s: string): string => uniqueName(`rental-${s}`);
      const [a, b, c, d] = [id('a'), id('b'), id('c'), id('d')];
      const rental = (rid: string, rps: number): Rental => ({ id: rid, rps, tps: 1, region: 'fra', ips: ['10.0.0.1'], apiKeys: [], tokens: [], dedicatedPaths: [], pps: 0, evmIps: [], status: 'active' });
      await bus.produce(t, [encodeRental(rental(a, 1)), encodeRental(rental(b, 1)), encodeRental(rental(a, 2)), encodeRental(rental(c, 1))]);
      await bus.produce(t, [rentalTombstone(b), encodeRental(rental(a, 3)), encodeRental(rental(c, 2)), encodeRental(rental(d, 1)), rentalTombstone(d)]);
      const end = Number((await bus.endOffsets(t)).get(0));
      const got = new Collector();
      await consume({ topics: [t], from: 'beginning', onBatch: got.onBatch });
      // Compaction may drop superseded records, never the last one, so "caught up" = saw offset end - 1.
      await waitFor(() => got.messages.some((m) => Number(m.offset) === end - 1), WAIT_MS, 'rebuild to reach the end');

      const { latest, rejected } = foldLatest(got.messages, decodeRental);
      assert.deepEqual(rejected, []);
      assert.deepEqual(latest, new Map([[a, rental(a, 3)], [c, rental(c, 2)]]));
    });

    it('reports end offsets per partition', async () => {
      const t = await topic('end', 3);
      assert.deepEqual(await bus.endOffsets(t), new Map([[0, '0'], [1, '0'], [2, '0']]));
      await bus.produce(t, Array.from({ length: 9 }, (_, i) => rec(`key-${i}`, `v${i}`)));
      const got = new Collector();
      await consume({ topics: [t], from: 'beginning', onBatch: got.onBatch });
      await waitFor(() => got.messages.length >= 9, WAIT_MS, 'nine messages');

      assert.equal(got.messages.length, 9, where(got.messages));
      const counts = new Map([0, 1, 2].map((p) => [p, String(got.messages.filter((m) => m.partition === p).length)]));
      assert.deepEqual(await bus.endOffsets(t), counts);
    });

    it('reports start offsets per partition: 0 for a new log, the first record a beginning reader gets', async () => {
      const t = await topic('start', 2);
      assert.deepEqual(await bus.startOffsets(t), new Map([[0, '0'], [1, '0']]));
      await bus.produce(t, Array.from({ length: 6 }, (_, i) => rec(`key-${i}`, `v${i}`)));
      assert.deepEqual(await bus.startOffsets(t), new Map([[0, '0'], [1, '0']]));
    });

    it('names the log behind a topic, and finds offsets by append time', async () => {
      const t = await topic('logid', 2);
      // Empty: every partition answers its end offset.
      assert.deepEqual(await bus.offsetsForTime(t, 0), new Map([[0, '0'], [1, '0']]));
      const id = await bus.logIdentity(t);
      assert.ok(id.id.length > 0);
      assert.deepEqual(await bus.logIdentity(t), id, 'stable while the log lives');
      const other = await topic('logid', 1);
      await bus.endOffsets(other);
      assert.notEqual((await bus.logIdentity(other)).id, id.id, 'another topic, another log');
      await bus.produce(t, [rec('k', 'first')]);
      const got = new Collector();
      await consume({ topics: [t], from: 'beginning', onBatch: got.onBatch });
      await waitFor(() => got.messages.length === 1, WAIT_MS, 'the first record');
      const first = got.messages[0]!;
      await waitFor(() => Date.now() > first.timestamp, WAIT_MS, 'the clock past the first record', 1);
      await bus.produce(t, [rec('k', 'second')]);
      await waitFor(() => got.messages.length === 2, WAIT_MS, 'the second record');
      const second = got.messages[1]!;
      const p = first.partition;
      assert.equal((await bus.offsetsForTime(t, first.timestamp)).get(p), first.offset);
      // The first record appended after the first one's time: the second (or, in the same millisecond, none before it).
      assert.equal((await bus.offsetsForTime(t, first.timestamp + 1)).get(p), second.timestamp > first.timestamp ? second.offset : '2');
      assert.equal((await bus.offsetsForTime(t, second.timestamp + 1)).get(p), '2', 'past the last record: the end offset');
    });
  });
}
