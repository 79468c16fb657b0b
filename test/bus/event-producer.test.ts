import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import { EmbeddedBus } from '../../bus/embedded';
import { EventProducer } from '../../bus/event-producer';
import type { ProduceRecord } from '../../bus/bus';
import { Registry } from '../../infra/base/metrics';
import { quietLog } from '../support/log-capture';

// What the producer has handed to the bus it must let go of: the bus copies each record on produce, and a record the
// producer kept (with the pool slab its buffers are views of) held memory nothing would read again.

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

describe('EventProducer', () => {
  it('keeps no reference to records once the bus has taken them', async () => {
    const { log } = quietLog();
    const bus = new EmbeddedBus({ log });
    await bus.createTopics([{ name: 'events', partitions: 1, compacted: false }]);
    // Records whose identity can be watched: the encoder's objects, held only by the producer once emitted.
    const watched: Array<WeakRef<ProduceRecord>> = [];
    const encode = (n: number): ProduceRecord => {
      const r = { key: Buffer.from(`k${n}`), value: Buffer.from(`v${n}`) };
      watched.push(new WeakRef(r));
      return r;
    };
    const producer = new EventProducer<number>(bus, { topic: 'events', encode, metricPrefix: 'test_event_producer', registry: new Registry(), log });
    for (let i = 0; i < 100; i++) producer.emit(i);
    await producer.flush();
    assert.equal(bus.retained('events')[0]!.messages, 100);
    // Collection of a WeakRef target needs a turn of the event loop after the last strong reference went.
    await new Promise((r) => setImmediate(r));
    gc();
    const alive = watched.filter((w) => w.deref() !== undefined).length;
    assert.equal(alive, 0, `${alive} of 100 produced records still reachable from the producer`);
    await producer.close();
    await bus.close();
  });
});
