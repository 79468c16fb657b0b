import assert from 'node:assert/strict';
import { EmbeddedBus } from '../../bus/embedded';
import type { ProduceRecord } from '../../bus/bus';
import { newUsageEvent } from '../../bus/topics/usage-events';
import { UsageProducer } from '../../bus/usage-producer';
import { Registry } from '../../infra/base/metrics';
import { quietLog } from '../support/log-capture';

// The usage producer's linger: events that arrive one I/O turn apart (a gateway answering one request at a time)
// go to the bus in one batch, not a produce() each; a full batch does not wait for the linger to end.

function countingBus(): { bus: EmbeddedBus; batches: number[] } {
  const bus = new EmbeddedBus();
  const batches: number[] = [];
  const produce = bus.produce.bind(bus);
  bus.produce = (topic: string, records: ProduceRecord[]) => {
    batches.push(records.length);
    return produce(topic, records);
  };
  return { bus, batches };
}

const event = (): ReturnType<typeof newUsageEvent> => newUsageEvent({ rental: 'r', surface: 'rpc', method: 'getHealth', units: 1, outcome: 'ok' });
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('UsageProducer linger', () => {
  it('batches events that arrive in separate turns within the linger', async () => {
    const { bus, batches } = countingBus();
    await bus.createTopics([{ name: 'usage.events', partitions: 1, compacted: false }]);
    const p = new UsageProducer(bus, { lingerMs: 200, log: quietLog().log, registry: new Registry() });
    for (let i = 0; i < 10; i++) {
      p.emit(event());
      await turn();
    }
    await p.flush();
    assert.deepEqual(batches, [10]);
    await p.close();
    await bus.close();
  });

  it('produces a full batch at once, without waiting out the linger', async () => {
    const { bus, batches } = countingBus();
    await bus.createTopics([{ name: 'usage.events', partitions: 1, compacted: false }]);
    const p = new UsageProducer(bus, { lingerMs: 60_000, maxBatch: 5, log: quietLog().log, registry: new Registry() });
    const t0 = Date.now();
    p.emit(event());
    await turn();
    for (let i = 0; i < 4; i++) p.emit(event());
    await p.flush();
    assert.deepEqual(batches, [5]);
    assert.ok(Date.now() - t0 < 30_000, 'waited for the linger');
    await p.close();
    await bus.close();
  });
});
