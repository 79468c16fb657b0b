import assert from 'node:assert/strict';
import type { BusMessage } from '../../bus/bus';
import { foldLatest } from '../../bus/compacted';
import { EmbeddedBus, type EmbeddedBusOptions } from '../../bus/embedded';
import { murmur2, partitionForKey } from '../../bus/murmur2';
import { Collector, runBusContract, uniqueName, waitFor } from './contract';
import { quietLog } from '../support/log-capture';
import { metrics } from '../../infra/base/metrics';


function bus(opts: EmbeddedBusOptions = {}): EmbeddedBus {
  return new EmbeddedBus({ log: quietLog().log, ...opts });
}

function values(n: number, prefix = 'v', size = 0): Array<{ key: Buffer; value: Buffer }> {
  return Array.from({ length: n }, (_, i) => ({ key: Buffer.from(`k${i % 7}`), value: Buffer.from(`${prefix}${i}`.padEnd(size, '.')) }));
}

runBusContract('embedded', async () => {
  const b = bus();
  return { bus: b, cleanup: () => b.close() };
});

describe('EmbeddedBus', () => {
  const buses: EmbeddedBus[] = [];
  function make(opts: EmbeddedBusOptions = {}): EmbeddedBus {
    const b = bus(opts);
    buses.push(b);
    return b;
  }
  afterEach(async () => {
    await Promise.all(buses.splice(0).map((b) => b.close()));
  });

  it("partitions keys with Kafka's murmur2 (UtilsTest vectors)", () => {
    const cases: Array<[string, number]> = [
      ['21', -973932308],
      ['foobar', -790332482],
      ['a-little-bit-long-string', -985981536],
      ['a-little-bit-longer-string', -1486304829],
      ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
      ['abc', 479470107],
      ['', 275646681],
    ];
    assert.deepEqual(cases.map(([s]) => murmur2(Buffer.from(s))), cases.map(([, h]) => h));
    // toPositive(-790332482) % 7 — the mask, not Math.abs, decides for negative hashes.
    assert.equal(partitionForKey(Buffer.from('foobar'), 7), (-790332482 & 0x7fffffff) % 7);
  });

  it('bounds a partition by message count; a reader that fell behind skips ahead and the skip is counted', async () => {
    const { log, lines } = quietLog();
    const b = make({ maxMessagesPerPartition: 100, log });
    await b.createTopics([{ name: 't', partitions: 1, compacted: false }]);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = new Collector();
    await b.consume({
      topics: ['t'],
      from: 'beginning',
      onBatch: async (batch) => {
        slow.onBatch(batch);
        await gate; // the first batch holds the reader while the log moves on
      },
    });
    await b.produce('t', values(1));
    await waitFor(() => slow.messages.length === 1, 5000, 'first message');
    for (let i = 0; i < 10; i++) await b.produce('t', values(100, `r${i}-`));

    assert.deepEqual(b.retained('t').map((p) => [p.start, p.end, p.messages]), [['901', '1001', 100]]);
    assert.deepEqual(await b.endOffsets('t'), new Map([[0, '1001']]));
    assert.deepEqual(await b.startOffsets('t'), new Map([[0, '901']]));
    release();
    await waitFor(() => slow.messages.length >= 101, 5000, 'the retained tail');
    assert.equal(slow.messages.length, 101);
    assert.deepEqual(slow.messages.slice(1).map((m) => m.offset), Array.from({ length: 100 }, (_, i) => String(901 + i)));
    assert.equal(b.stats.skipped, 900);
    assert.equal(lines.filter((l) => l.includes('skipped ahead')).length, 1);
  });

  it('applies per-topic bounds over the bus-wide ones', async () => {
    const b = make({ maxMessagesPerPartition: 10, topicLimits: { big: { maxMessagesPerPartition: 50 } } });
    await b.createTopics([
      { name: 'big', partitions: 1, compacted: false },
      { name: 'small', partitions: 1, compacted: false },
    ]);
    await b.produce('big', values(100));
    await b.produce('small', values(100));
    assert.deepEqual([b.retained('big')[0]!.messages, b.retained('small')[0]!.messages], [50, 10]);
  });

  it('shows what each topic retains on /metrics (all partitions, every open bus), and forgets a closed bus', async () => {
    const topic = uniqueName('gauged');
    const series = (): Map<string, number> => {
      const m = new Map<string, number>();
      for (const line of metrics.render().split('\n')) {
        const hit = /^(meridian_bus_embedded_(?:retained_bytes|retained_records|limit_bytes))\{topic="([^"]+)"\} (\d+)$/.exec(line);
        if (hit !== null && hit[2] === topic) m.set(hit[1]!, (m.get(hit[1]!) ?? 0) + Number(hit[3]));
      }
      return m;
    };
    const a = make({ maxBytesPerPartition: 4096 });
    const b = make({ maxBytesPerPartition: 4096 });
    await a.createTopics([{ name: topic, partitions: 2, compacted: false }]);
    await b.createTopics([{ name: topic, partitions: 1, compacted: false }]);
    await a.produce(topic, values(10, 'v', 100));
    await b.produce(topic, values(3, 'w', 100));
    const held = (x: EmbeddedBus): { bytes: number; messages: number } => x.retained(topic).reduce((s, p) => ({ bytes: s.bytes + p.bytes, messages: s.messages + p.messages }), { bytes: 0, messages: 0 });
    const [ha, hb] = [held(a), held(b)];
    assert.ok(ha.bytes > 1000 && hb.bytes > 300, JSON.stringify({ ha, hb }));
    assert.deepEqual(series(), new Map([
      ['meridian_bus_embedded_retained_bytes', ha.bytes + hb.bytes],
      ['meridian_bus_embedded_retained_records', 13],
      ['meridian_bus_embedded_limit_bytes', 3 * 4096],
    ]), 'one series per topic for the process, not one per bus');
    await a.close();
    assert.deepEqual(series(), new Map([
      ['meridian_bus_embedded_retained_bytes', hb.bytes],
      ['meridian_bus_embedded_retained_records', 3],
      ['meridian_bus_embedded_limit_bytes', 4096],
    ]));
  });

  it('bounds a partition by bytes and by age', async () => {
    const b = make({ maxBytesPerPartition: 10_000, sweepIntervalMs: 10 });
    await b.createTopics([
      { name: 'bytes', partitions: 1, compacted: false },
      { name: 'aged', partitions: 2, compacted: false, retentionMs: 30 },
    ]);
    await b.produce('bytes', values(50, 'v', 1000));
    const [p] = b.retained('bytes');
    assert.ok(p !== undefined && p.bytes <= 10_000 && p.messages >= 9, JSON.stringify(p));
    await b.produce('aged', values(20));
    assert.equal(b.retained('aged').reduce((n, q) => n + q.messages, 0), 20);
    await waitFor(() => b.retained('aged').every((q) => q.messages === 0), 5000, 'aged messages to expire');
    const ends = await b.endOffsets('aged');
    assert.equal([...ends.values()].reduce((n, e) => n + Number(e), 0), 20); // offsets are never reused
    assert.deepEqual(await b.startOffsets('aged'), ends); // nothing retained: start = end
  });

  it('compacts superseded records and expires tombstones, keeping latest-per-key for a rebuild', async () => {
    const b = make({ compactMinDirty: 10, tombstoneRetentionMs: 50, sweepIntervalMs: 10 });
    await b.createTopics([{ name: 'c', partitions: 1, compacted: true }]);
    for (let v = 0; v < 100; v++) await b.produce('c', ['a', 'b', 'c'].map((k) => ({ key: Buffer.from(k), value: Buffer.from(`${k}${v}`) })));
    await b.produce('c', [{ key: Buffer.from('b'), value: null }]);
    const [p] = b.retained('c');
    assert.ok(p !== undefined && p.messages < 40, `retained ${p?.messages}`);

    const got = new Collector();
    await b.consume({ topics: ['c'], from: 'beginning', onBatch: got.onBatch });
    await waitFor(() => got.messages.some((m) => m.offset === '300'), 5000, 'rebuild');
    const { latest } = foldLatest<string>(got.messages, (v) => v.toString());
    assert.deepEqual(latest, new Map([['a', 'a99'], ['c', 'c99']]));
    assert.ok(got.messages.length < 301, 'a rebuild reads the compacted log, not the history');

    await waitFor(() => b.retained('c')[0]!.messages === 2, 5000, 'the tombstone to expire');
    await assert.rejects(b.produce('c', [{ key: null, value: Buffer.from('x') }]), /needs a key/);
  });

  it('retries a batch whose handler throws or rejects, then moves on in order', async () => {
    const { log, lines } = quietLog();
    const b = make({ retryDelayMs: 10, log });
    await b.createTopics([{ name: 't', partitions: 1, compacted: false }]);
    const calls: string[][] = [];
    let failures = 0;
    await b.consume({
      topics: ['t'],
      from: 'beginning',
      onBatch: (batch: BusMessage[]) => {
        calls.push(batch.map((m) => m.value!.toString()));
        if (failures === 0) {
          failures++;
          throw new Error('sync failure');
        }
        if (failures === 1) {
          failures++;
          return Promise.reject(new Error('async failure'));
        }
        return undefined;
      },
    });
    await b.produce('t', values(3));
    await waitFor(() => calls.flat().includes('v2') && failures === 2 && calls.length >= 3, 5000, 'redelivery');
    await b.produce('t', [{ key: null, value: Buffer.from('after') }]);
    await waitFor(() => calls.flat().includes('after'), 5000, 'delivery after the failures');

    assert.equal(calls.length, 4);
    assert.deepEqual(calls.slice(0, 3), [['v0', 'v1', 'v2'], ['v0', 'v1', 'v2'], ['v0', 'v1', 'v2']]);
    assert.deepEqual(calls[3], ['after']);
    assert.equal(b.stats.handlerErrors, 2);
    assert.equal(lines.filter((l) => l.includes('batch handler failed')).length, 2);
  });

  it('hands a partition to the next group member only after the batch in flight is done', async () => {
    const b = make();
    await b.createTopics([{ name: 't', partitions: 1, compacted: false }]);
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = await b.consume({
      topics: ['t'],
      groupId: 'g',
      from: 'beginning',
      onBatch: async (batch) => {
        order.push(`first:${batch.map((m) => m.offset).join(',')}`);
        await gate;
        order.push('first:done');
      },
    });
    await b.produce('t', values(2));
    await waitFor(() => order.length === 1, 5000, 'first batch');
    const second = await b.consume({ topics: ['t'], groupId: 'g', from: 'beginning', onBatch: (batch) => void order.push(`second:${batch.map((m) => m.offset).join(',')}`) });
    const closing = first.close(); // the partition moves to `second` now, but its batch is still running
    await b.produce('t', values(1));
    release();
    await closing;
    await waitFor(() => order.length === 3, 5000, 'second member');

    assert.deepEqual(order, ['first:0,1', 'first:done', 'second:2']);
    assert.deepEqual(b.committed('g'), new Map([['t/0', 3]]));
    await second.close();
  });

  it('keeps timers running while a handler feeds its own topic', async () => {
    const b = make();
    await b.createTopics([{ name: 'loop', partitions: 1, compacted: false }]);
    let delivered = 0;
    await b.consume({
      topics: ['loop'],
      from: 'latest',
      onBatch: async () => {
        delivered++;
        await b.produce('loop', [{ key: null, value: Buffer.from('again') }]); // a feedback loop, on purpose
      },
    });
    await b.produce('loop', [{ key: null, value: Buffer.from('start') }]);
    // If deliveries never yielded to the event loop, this timer would never fire and the test would time out.
    await new Promise((r) => setTimeout(r, 20));
    assert.ok(delivered > 0);
    await b.close();
  });

  it('copies produced buffers, so a producer may reuse them', async () => {
    const b = make();
    await b.createTopics([{ name: 't', partitions: 1, compacted: false }]);
    const value = Buffer.from('original');
    await b.produce('t', [{ key: null, value }]);
    value.write('mutated!');
    const got = new Collector();
    await b.consume({ topics: ['t'], from: 'beginning', onBatch: got.onBatch });
    await waitFor(() => got.messages.length === 1, 5000, 'message');
    assert.equal(got.values()[0], 'original');
  });

  it('refuses unknown topics, and everything after close', async () => {
    const b = make();
    await assert.rejects(b.produce('nope', []), /unknown topic/);
    await b.createTopics([{ name: 't', partitions: 1, compacted: false }]);
    const got = new Collector();
    await b.consume({ topics: ['t'], from: 'latest', onBatch: got.onBatch });
    await b.close();
    await assert.rejects(b.produce('t', [{ key: null, value: Buffer.from('late') }]), /bus closed/);
    await assert.rejects(b.consume({ topics: ['t'], from: 'latest', onBatch: () => undefined }), /bus closed/);
    await assert.rejects(b.endOffsets('t'), /bus closed/);
    await b.close(); // idempotent
    assert.equal(got.messages.length, 0);
  });

  it('a retained record holds bytes of its own partition and produce call, not a shared pool slab (which would pin far more than maxBytes counts)', async () => {
    // Buffer.from of a small buffer is a slice of a pool slab (8 KiB on Node 20, 64 KiB on Node 24); a record the
    // log keeps would pin the slab and every short-lived buffer cut from it. Measured on Node 24 before the fix:
    // 1,000 retained records pinned 44 MiB of slabs (test/fanout/hostile-load.test.ts). A plain topic's records
    // of one call and one partition share one allocation of exactly their bytes (they leave the log together);
    // a compacted topic's records each keep their own (they are superseded one by one).
    const b = make();
    await b.createTopics([{ name: 'own', partitions: 2, compacted: false }, { name: 'own-c', partitions: 1, compacted: true }]);
    const batch = [
      { key: null, value: Buffer.from('a small value'), headers: { h: Buffer.from('hv') }, partition: 0 },
      { key: null, value: Buffer.from('no key'), partition: 1 },
      { key: Buffer.from('k3'), value: null, partition: 0 },
      { key: Buffer.from('k4'), value: Buffer.from('four'), partition: 1 },
    ];
    await b.produce('own', batch);
    for (const r of batch) r.value?.fill(0x2a); // the producer reuses its buffers: the log keeps what was produced
    await b.produce('own', [{ key: null, value: Buffer.from('a later call'), partition: 0 }]);
    await b.produce('own-c', [{ key: Buffer.from('a'), value: Buffer.from('one') }, { key: Buffer.from('b'), value: Buffer.from('two') }]);
    const got = new Collector();
    await b.consume({ topics: ['own', 'own-c'], from: 'beginning', onBatch: got.onBatch });
    await waitFor(() => got.messages.length === 7);
    const fieldsOf = (m: (typeof got.messages)[number]): Buffer[] => [m.key, m.value, ...Object.values(m.headers)].filter((x): x is Buffer => x !== null);
    const groups = new Map<string, Set<ArrayBufferLike>>();
    const bytes = new Map<string, number>();
    for (const m of got.messages) {
      const g = `${m.topic}/${m.partition}/${m.value?.toString() === 'a later call' ? 'later' : m.topic === 'own-c' ? m.key!.toString() : 'first'}`;
      const set = groups.get(g) ?? new Set<ArrayBufferLike>();
      for (const f of fieldsOf(m)) set.add(f.buffer);
      groups.set(g, set);
      bytes.set(g, (bytes.get(g) ?? 0) + fieldsOf(m).reduce((n, x) => n + x.length, 0));
    }
    const seen = new Set<ArrayBufferLike>();
    for (const [g, set] of groups) {
      assert.equal(set.size, 1, `${g}: one allocation`);
      const ab = [...set][0]!;
      assert.ok(!seen.has(ab), `${g}: an allocation no other group shares`);
      seen.add(ab);
      assert.equal(ab.byteLength, bytes.get(g), `${g}: the allocation holds exactly its records' bytes`);
    }
    assert.deepEqual([...groups.keys()].sort(), ['own-c/0/a', 'own-c/0/b', 'own/0/first', 'own/0/later', 'own/1/first']);
    const own = got.messages.filter((m) => m.topic === 'own');
    assert.equal(own.find((m) => m.headers.h !== undefined)!.headers.h!.toString(), 'hv');
    assert.deepEqual(own.map((m) => m.value?.toString() ?? '<null>').sort(), ['<null>', 'a later call', 'a small value', 'four', 'no key']);
  });

  it('one partition\'s share of a large produce call is cut into allocations of at most 256 KiB', async () => {
    const b = make();
    await b.createTopics([{ name: 'big', partitions: 1, compacted: false }]);
    await b.produce('big', Array.from({ length: 600 }, (_, i) => ({ key: null, value: Buffer.alloc(1000, i % 256) })));
    const got = new Collector();
    await b.consume({ topics: ['big'], from: 'beginning', onBatch: got.onBatch });
    await waitFor(() => got.messages.length === 600);
    const allocations = new Set(got.messages.map((m) => m.value!.buffer));
    assert.deepEqual([...allocations].map((ab) => ab.byteLength), [262_144, 262_144, 76_000], '262 records fit in each 256 KiB allocation (144 bytes unused), the last one holds the rest');
    assert.ok(got.messages.every((m, i) => m.value![999] === i % 256));
  });

  it('keeps memory bounded under sustained load with no reader', async () => {
    const b = make({ maxMessagesPerPartition: 1000 });
    const t = uniqueName('load');
    await b.createTopics([{ name: t, partitions: 2, compacted: false }]);
    for (let i = 0; i < 100; i++) await b.produce(t, values(500, 'x', 100));
    const parts = b.retained(t);
    assert.equal(parts.length, 2);
    assert.deepEqual(parts.map((p) => p.messages <= 1000), [true, true]);
    assert.equal(parts.reduce((n, p) => n + Number(p.end), 0), 50_000);
  });
});
