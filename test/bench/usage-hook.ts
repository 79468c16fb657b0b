import { EmbeddedBus } from '../../bus/embedded';
import { TOPIC, defaultTopicSpecs } from '../../bus/topics';
import { newUsageEvent } from '../../bus/topics/usage-events';
import { UsageProducer } from '../../bus/usage-producer';
import { emitRequestUsage, type RpcCall } from '../../gateways/core';
import { Registry } from '../../infra/base/metrics';
import { createLogger } from '../../infra/base/log';
import type { BenchResult } from './stats';

// What usage accounting costs per request, away from the HTTP hop and the machine's noise: the chain gateway's
// usage of one request (emitRequestUsage: one event per method and request) beside the same request as an event per
// call (what the gateway did before issue 35, written here as the reference), both through a UsageProducer onto an
// embedded bus with a reader consuming as events arrive, as in the gateway bench's child. CPU of this process per
// block of requests, the block's events produced and read (producer.flush) before the block ends; blocks of the two
// interleaved ABBA.

const REQUESTS = Number(process.env.USAGE_BENCH_REQUESTS ?? 200_000);
const BLOCK = 2_000;

type Emit = (producer: UsageProducer, calls: readonly RpcCall[], units: readonly number[]) => void;

const perMethod: Emit = (p, calls, units) => emitRequestUsage(p, 'bench', 'rpc', calls, units, 'ok');
const perCall: Emit = (p, calls, units) => {
  const time = new Date();
  for (let i = 0; i < calls.length; i++) p.emit(newUsageEvent({ rental: 'bench', surface: 'rpc', method: calls[i]!.method, units: units[i] ?? 0, outcome: 'ok', time }));
};

export async function benchUsageHook(): Promise<BenchResult[]> {
  const log = createLogger({ level: 'warn' });
  const bus = new EmbeddedBus({ topicLimits: { [TOPIC.usageEvents]: { maxMessagesPerPartition: 500 } } });
  await bus.createTopics(defaultTopicSpecs().filter((t) => t.name === TOPIC.usageEvents));
  let read = 0;
  const consumer = await bus.consume({ topics: [TOPIC.usageEvents], from: 'beginning', onBatch: (b) => void (read += b.length) });
  const producer = new UsageProducer(bus, { log, registry: new Registry() });
  const out: BenchResult[] = [];
  try {
    const cases: Array<[string, RpcCall[]]> = [
      ['getHealth', [{ method: 'getHealth' } as RpcCall]],
      ['batch of 10 getHealth', Array.from({ length: 10 }, () => ({ method: 'getHealth' }) as RpcCall)],
      ['batch of 10, 3 methods', Array.from({ length: 10 }, (_v, i) => ({ method: ['getSlot', 'getBalance', 'getAccountInfo'][i % 3]! }) as RpcCall)],
    ];
    for (const [name, calls] of cases) {
      const units = calls.map(() => 1);
      const us = { perMethod: 0, perCall: 0 };
      const events = { perMethod: 0, perCall: 0 };
      for (const f of [perMethod, perCall]) {
        for (let i = 0; i < BLOCK; i++) f(producer, calls, units); // warm-up, not counted
        await producer.flush();
      }
      for (let done = 0; done < REQUESTS; done += 2 * BLOCK) {
        const order: Array<'perMethod' | 'perCall'> = (done / (2 * BLOCK)) % 2 === 0 ? ['perMethod', 'perCall'] : ['perCall', 'perMethod'];
        for (const k of order) {
          const f = k === 'perMethod' ? perMethod : perCall;
          const r0 = read;
          const c0 = process.cpuUsage();
          for (let i = 0; i < BLOCK; i++) f(producer, calls, units);
          await producer.flush();
          const c = process.cpuUsage(c0);
          us[k] += c.user + c.system;
          events[k] += read - r0;
        }
      }
      const half = REQUESTS / 2;
      out.push({
        bench: 'usage-hook',
        case: name,
        figures: { per_method_us_per_request: us.perMethod / half, per_call_us_per_request: us.perCall / half, per_method_over_per_call: us.perMethod / us.perCall, per_method_events_per_request: events.perMethod / half, per_call_events_per_request: events.perCall / half },
      });
    }
    out[0]!.note = `${REQUESTS.toLocaleString('en')} requests per case, blocks of ${BLOCK} interleaved ABBA; this process's CPU including the producer's batches, the embedded bus and a reader`;
  } finally {
    await producer.close();
    await consumer.close();
    await bus.close();
  }
  return out;
}
