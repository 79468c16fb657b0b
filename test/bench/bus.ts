import { Writable } from 'node:stream';
import type { Bus, BusMessage, ProduceRecord } from '../../bus/bus';
import { EmbeddedBus } from '../../bus/embedded';
import { KafkaBus } from '../../bus/kafka';
import { createLogger, type Log } from '../../infra/base/log';
import { uniqueName } from '../bus/contract';
import { mochaHooks } from '../support/global-fixtures';
import { kafkaBrokers } from '../support/kafka';
import { formatResults, ProcessSampler, sleep, summarize, type BenchResult } from './stats';

// The bus, end to end in one process, for each implementation:
//   latency    — a paced producer at RATE msg/s of VALUE_SZ-byte values (one produce per timer tick, 1–2 ms
//                apart, like ingest's per-entry-batch produces); latency = receive time − the send time stamped
//                into the value (same clock, same process). The first WARMUP_MS of samples are dropped.
//   throughput — produce as fast as the bus accepts (batches of THROUGHPUT_BATCH, a few in flight) for a
//                window, then wait for the reader to drain; rate = messages / (first send → last receive), i.e.
//                what the bus sustains end to end, not what the producer alone can push.
// Both use a one-partition topic, the shape of stream.transactions.

const RATE = 5000;
const VALUE_SZ = 600;
const WARMUP_MS = 500;
const THROUGHPUT_BATCH = 500;
const STAMP_OFF = 0; // f64 performance.now() at send
const SEQ_OFF = 8; // u32 sequence number

interface Plan {
  name: string;
  latencyMs: number;
  throughputMs: number;
  inFlight: number;
  make: () => Promise<Bus>;
}

function silentLog(): Log {
  return createLogger({ destination: new Writable({ write: (_c, _e, cb) => cb() }), level: 'warn' });
}

function record(seq: number, now: number): ProduceRecord {
  const value = Buffer.alloc(VALUE_SZ);
  value.writeDoubleLE(now, STAMP_OFF);
  value.writeUInt32LE(seq, SEQ_OFF);
  return { key: null, value };
}

/** Produces without waiting for each send, at most `limit` at once (Kafka round trips would pace it otherwise). */
class InFlight {
  private readonly pending = new Set<Promise<void>>();
  error: unknown = null;
  constructor(private readonly limit: number) {}
  async add(p: Promise<void>): Promise<void> {
    const tracked = p.catch((e: unknown) => void (this.error ??= e)).finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
    while (this.pending.size >= this.limit) await Promise.race(this.pending);
  }
  async drain(): Promise<void> {
    await Promise.all(this.pending);
    if (this.error !== null) throw this.error;
  }
}

async function waitUntil(cond: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!cond() && performance.now() < deadline) await sleep(5);
  return cond();
}

async function latency(bus: Bus, plan: Plan): Promise<BenchResult> {
  const topic = uniqueName('bench-latency');
  await bus.createTopics([{ name: topic, partitions: 1, compacted: false }]);
  const samples: number[] = [];
  let received = 0;
  let t0 = 0;
  const reader = await bus.consume({
    topics: [topic],
    from: 'latest',
    onBatch: (batch: BusMessage[]) => {
      const now = performance.now();
      for (const m of batch) {
        const sent = m.value!.readDoubleLE(STAMP_OFF);
        if (sent - t0 >= WARMUP_MS) samples.push(now - sent);
      }
      received += batch.length;
    },
  });
  await reader.ready;
  const flight = new InFlight(plan.inFlight);
  const usage = new ProcessSampler().start();
  t0 = performance.now();
  let sent = 0;
  let produces = 0;
  for (let elapsed = 0; elapsed < plan.latencyMs; elapsed = performance.now() - t0) {
    const due = Math.floor((elapsed * RATE) / 1000) - sent;
    if (due > 0) {
      const now = performance.now();
      const records = Array.from({ length: due }, (_, i) => record(sent + i, now));
      sent += due;
      produces++;
      await flight.add(bus.produce(topic, records));
    }
    await sleep(1);
  }
  await flight.drain();
  const drained = await waitUntil(() => received >= sent, 15_000);
  const u = usage.stop();
  await reader.close();
  const s = summarize(samples);
  return {
    bench: 'bus',
    case: `${plan.name}: latency at ${RATE} msg/s`,
    figures: { msgs: sent, 'msgs/s': (sent / u.wallMs) * 1000, 'msgs/produce': sent / produces, p50_ms: s.p50, p99_ms: s.p99, p999_ms: s.p999, max_ms: s.max, cpu_pct: u.cpuPct, rss_peak_mb: u.rssPeakMb },
    note: drained ? undefined : `reader got ${received} of ${sent}`,
  };
}

async function throughput(bus: Bus, plan: Plan): Promise<BenchResult> {
  const topic = uniqueName('bench-throughput');
  await bus.createTopics([{ name: topic, partitions: 1, compacted: false }]);
  let received = 0;
  let lastReceive = 0;
  const reader = await bus.consume({
    topics: [topic],
    from: 'latest',
    onBatch: (batch: BusMessage[]) => {
      received += batch.length;
      lastReceive = performance.now();
    },
  });
  await reader.ready;
  const flight = new InFlight(plan.inFlight);
  const usage = new ProcessSampler().start();
  const t0 = performance.now();
  let sent = 0;
  let batches = 0;
  while (performance.now() - t0 < plan.throughputMs) {
    const now = performance.now();
    const records = Array.from({ length: THROUGHPUT_BATCH }, (_, i) => record(sent + i, now));
    sent += records.length;
    await flight.add(bus.produce(topic, records));
    // The embedded bus resolves produce at once; yield a macrotask now and then so timers (and I/O) run.
    if (++batches % 8 === 0) await new Promise((r) => setImmediate(r));
  }
  const produceMs = performance.now() - t0;
  await flight.drain();
  const drained = await waitUntil(() => received >= sent, 30_000);
  const u = usage.stop();
  await reader.close();
  const e2eMs = lastReceive - t0;
  return {
    bench: 'bus',
    case: `${plan.name}: max throughput`,
    figures: { msgs: sent, 'produced/s': (sent / produceMs) * 1000, 'msgs/s': (received / e2eMs) * 1000, cpu_pct: u.cpuPct, rss_peak_mb: u.rssPeakMb },
    note: drained ? undefined : `reader got ${received} of ${sent} within 30 s after the producer stopped`,
  };
}

async function runPlan(plan: Plan): Promise<BenchResult[]> {
  let bus: Bus;
  try {
    bus = await plan.make();
  } catch (e) {
    return [{ bench: 'bus', case: plan.name, figures: {}, note: `skipped: ${(e as Error).message}` }];
  }
  try {
    return [await latency(bus, plan), await throughput(bus, plan)];
  } finally {
    await bus.close();
  }
}

export async function benchBus(): Promise<BenchResult[]> {
  const plans: Plan[] = [
    { name: 'embedded', latencyMs: 6000, throughputMs: 3000, inFlight: 1, make: async () => new EmbeddedBus({ log: silentLog() }) },
    {
      name: 'kafka',
      latencyMs: 8000,
      throughputMs: 6000,
      inFlight: 8,
      make: async () => {
        const bus = new KafkaBus({ brokers: await kafkaBrokers(), clientId: 'meridian-bench', log: silentLog() });
        await bus.createTopics([{ name: uniqueName('bench-warmup'), partitions: 1, compacted: false }]); // connect now, not inside a measurement
        return bus;
      },
    },
  ];
  const results: BenchResult[] = [];
  for (const plan of plans) results.push(...(await runPlan(plan)));
  return results;
}

if (require.main === module) {
  void (async () => {
    let code = 0;
    try {
      console.log(formatResults('bus', await benchBus()));
    } catch (e) {
      console.error(e);
      code = 1;
    } finally {
      await mochaHooks.afterAll(); // stops a broker kafkaBrokers() started (it registers with the run-end hooks)
    }
    process.exit(code);
  })();
}
