import assert from 'node:assert/strict';
import type { Bus, ProduceRecord } from '../../bus/bus';
import { Publisher } from '../../ingest/publisher';
import { recordingBus, type Produce } from './support/run-capture';

const rec = (n: number): ProduceRecord[] => Array.from({ length: n }, (_, i) => ({ key: Buffer.from([i]), value: Buffer.alloc(1) }));

/** A bus whose produce() waits until released, to fill the publisher's queue. */
function gatedBus(calls: Produce[]): { bus: Bus; release: () => void; fail: (yes: boolean) => void } {
  let open: () => void = () => undefined;
  let gate = new Promise<void>((r) => (open = r));
  let failing = false;
  const bus = recordingBus(calls);
  const produce = bus.produce.bind(bus);
  return {
    bus: {
      ...bus,
      produce: async (topic, records) => {
        await gate;
        if (failing) throw new Error('broker down');
        return produce(topic, records);
      },
    },
    release: () => {
      open();
      gate = Promise.resolve();
    },
    fail: (yes) => (failing = yes),
  };
}

describe('ingest: publisher', () => {
  it('in order; what queued behind a produce goes in the next one; a full queue drops and counts instead of blocking', async () => {
    const calls: Produce[] = [];
    const g = gatedBus(calls);
    const p = new Publisher(g.bus, { maxItems: 3 });
    const accepted = [1, 2, 3, 4, 5].map((n) => p.offer({ topic: 't', records: rec(n) }));
    // The first item is taken by the drain loop at once (in flight), so 3 more fit; the 5th is dropped.
    assert.deepEqual(accepted, [true, true, true, true, false]);
    assert.equal(p.stats().queueDrops, 1);
    g.release();
    await p.idle();
    // The first item alone, then the three that waited behind it in one produce (records in offer order).
    assert.deepEqual(calls.map((c) => c.records.length), [1, 9]);
    assert.deepEqual(calls[1]!.records.map((r) => r.key![0]), [0, 1, 0, 1, 2, 0, 1, 2, 3]);
    assert.deepEqual(p.stats(), { offered: 5, published: 4, records: 10, queueDrops: 1, failed: 0, queued: 0 });
  });

  it('one produce in flight per topic: a topic whose produce hangs does not hold another back', async () => {
    const calls: Produce[] = [];
    const bus = recordingBus(calls);
    const record = bus.produce.bind(bus);
    const stuck = new Promise<void>(() => undefined);
    const p = new Publisher({ ...bus, produce: (topic, records) => (topic === 'slow' ? stuck : record(topic, records)) }, { maxItems: 10 });
    p.offer({ topic: 'slow', records: rec(1) });
    p.offer({ topic: 'slow', records: rec(1) });
    let published = 0;
    for (let i = 0; i < 3; i++) p.offer({ topic: 'fast', records: rec(1), onPublished: () => published++ });
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    assert.equal(published, 3);
    assert.deepEqual(calls.map((c) => c.topic), ['fast', 'fast']);
    assert.equal(p.stats().queued, 1, "the slow topic's second item waits behind its first");
  });

  it('without coalescing, one produce per item', async () => {
    const calls: Produce[] = [];
    const g = gatedBus(calls);
    const p = new Publisher(g.bus, { maxItems: 10, coalesce: false });
    for (const n of [1, 2, 3]) p.offer({ topic: 't', records: rec(n) });
    g.release();
    await p.idle();
    assert.deepEqual(calls.map((c) => c.records.length), [1, 2, 3]);
  });

  it('counts failed produces and goes on', async () => {
    const calls: Produce[] = [];
    const g = gatedBus(calls);
    g.release();
    g.fail(true);
    const p = new Publisher(g.bus, { maxItems: 10 });
    p.offer({ topic: 't', records: rec(1) });
    await p.idle();
    g.fail(false);
    let latency = -1;
    p.offer({ topic: 't', records: rec(2), onPublished: (t) => (latency = t) });
    await p.idle();
    assert.equal(p.stats().failed, 1);
    assert.equal(p.stats().published, 1);
    assert.ok(latency > 0);
    await p.close();
    assert.equal(p.offer({ topic: 't', records: rec(1) }), false, 'closed');
  });
});
