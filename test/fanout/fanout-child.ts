import { EmbeddedBus } from '../../bus/embedded';
import type { Bus } from '../../bus/bus';
import { KafkaBus } from '../../bus/kafka';
import { emptyRegistry } from '../../bus/rental-registry';
import { startFanout } from '../../fanout/server';
import { quietLog, testConfig } from './support';
import { fanoutMetrics } from '../../fanout/metrics';

// A fanout in a process of its own, driven over the fork() IPC channel. The horizontal-scale test starts two
// on one Kafka cluster; the benchmark starts one so that its CPU and memory are the fanout's alone.
//
//   parent → child   { type: 'usage' }                     → { type: 'usage', cpuMs, rssMb, heapMb, stats, latency }
//                    { type: 'feed', ... } (embedded only)  → { type: 'fed', published, elapsedMs }
//                    { type: 'close' }                      → exits 0 once closed
//   child → parent   { type: 'ready', address } once the server listens and the bus reader is positioned
//
// Config comes from the FANOUT_CHILD environment variable (JSON, ChildConfig).

export interface ChildConfig {
  bus: 'embedded' | 'kafka';
  brokers?: string[];
  /** fanout config overrides (listen defaults to 127.0.0.1:0). */
  fanout: Record<string, unknown>;
  /** A module exporting `feed(bus, topics, msg)` for embedded-bus feeding (the benchmark's workload). */
  feedModule?: string;
}

/** The fanout's own observed-at → write histogram (cumulative), so the bench can tell server latency from client latency. */
export interface LatencyCounts {
  buckets: number[];
  counts: number[];
  count: number;
}

export type ChildRequest = { type: 'usage'; gc?: boolean } | { type: 'close' } | { type: 'feed'; [k: string]: unknown };

export type ChildReply =
  | { type: 'ready'; address: string }
  | { type: 'usage'; cpuMs: number; rssMb: number; heapMb: number; now: { rssMb: number; heapMb: number; externalMb: number }; stats: unknown; latency: LatencyCounts }
  | { type: 'fed'; published: number; elapsedMs: number }
  | { type: 'error'; message: string };

type Feed = (bus: Bus, topics: { transactions: string; slots: string }, msg: Record<string, unknown>) => Promise<{ published: number; elapsedMs: number }>;

function send(m: ChildReply): void {
  process.send?.(m);
}

async function main(): Promise<void> {
  const cc = JSON.parse(process.env.FANOUT_CHILD ?? '{}') as ChildConfig;
  const log = quietLog();
  const bus: Bus = cc.bus === 'kafka' ? new KafkaBus({ brokers: cc.brokers ?? [], clientId: 'fanout-child', log }) : new EmbeddedBus({ log, copyOnProduce: false });
  const cfg = testConfig(cc.fanout);
  if (cc.bus === 'embedded') {
    await bus.createTopics([
      { name: cfg.topics.transactions, partitions: 1, compacted: false },
      { name: cfg.topics.slots, partitions: 1, compacted: false },
    ]);
  }
  const fanout = await startFanout(cfg, bus, emptyRegistry(), log);
  let peakRss = 0;
  let peakHeap = 0;
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  }, 100);
  sampler.unref();

  process.on('message', (raw: unknown) => {
    const m = raw as ChildRequest;
    void (async () => {
      try {
        if (m.type === 'usage') {
          const gc = (globalThis as { gc?: () => void }).gc;
          if (m.gc === true && gc !== undefined) {
            gc();
            gc();
          }
          const cpu = process.cpuUsage();
          const mem = process.memoryUsage();
          const now = { rssMb: mem.rss / 2 ** 20, heapMb: mem.heapUsed / 2 ** 20, externalMb: mem.external / 2 ** 20 };
          send({ type: 'usage', cpuMs: (cpu.user + cpu.system) / 1000, rssMb: Math.max(peakRss, mem.rss) / 2 ** 20, heapMb: Math.max(peakHeap, mem.heapUsed) / 2 ** 20, now, stats: fanout.stats(), latency: { buckets: fanoutMetrics.latencyMs.buckets, counts: [...fanoutMetrics.latencyMs.counts], count: fanoutMetrics.latencyMs.count } });
          peakRss = 0;
          peakHeap = 0;
        } else if (m.type === 'feed') {
          if (cc.feedModule === undefined) throw new Error('no feedModule configured');
          const mod = require(cc.feedModule) as { feed: Feed };
          send({ type: 'fed', ...(await mod.feed(bus, cfg.topics, m)) });
        } else if (m.type === 'close') {
          await fanout.close();
          await bus.close();
          process.exit(0);
        }
      } catch (e) {
        send({ type: 'error', message: (e as Error).stack ?? String(e) });
      }
    })();
  });
  process.on('disconnect', () => process.exit(0)); // the parent went away: do not linger
  send({ type: 'ready', address: fanout.address });
}

main().catch((e: unknown) => {
  send({ type: 'error', message: (e as Error).stack ?? String(e) });
  process.exit(1);
});
