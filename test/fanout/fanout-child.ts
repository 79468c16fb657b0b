import cluster from 'node:cluster';
import { EmbeddedBus } from '../../bus/embedded';
import type { Bus } from '../../bus/bus';
import { KafkaBus } from '../../bus/kafka';
import { emptyRegistry } from '../../bus/rental-registry';
import { startFanout, type FanoutHandle } from '../../fanout/server';
import { startFanoutWorkers } from '../../fanout/cluster';
import { serveFanoutWorker } from '../../fanout/cluster-worker';
import type { FanoutStats } from '../../fanout/v1/hub';
import { quietLog, testConfig } from './support';
import { fanoutMetrics } from '../../fanout/metrics';
import { FEED_MAX_BURST } from '../bench/fanout-workload';

// A fanout in a process of its own, driven over the fork() IPC channel. The horizontal-scale test starts two
// on one Kafka cluster; the benchmark starts one so that its CPU and memory are the fanout's alone.
//
//   parent → child   { type: 'usage' }                     → { type: 'usage', cpuMs, rssMb, heapMb, stats, latency }
//                    { type: 'feed', ... } (embedded only)  → { type: 'fed', published, elapsedMs, lateMs }
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
  /**
   * > 1: this child is a cluster primary (fanout/cluster.ts) and each worker runs the fanout on its own bus, on
   * one shared port; 'usage' sums CPU over the primary and the workers, 'feed' feeds every worker the same plan.
   */
  workers?: number;
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
  | { type: 'usage'; cpuMs: number; rssMb: number; heapMb: number; now: { rssMb: number; heapMb: number; externalMb: number; arrayBuffersMb: number }; stats: unknown; latency: LatencyCounts; v2?: unknown }
  | { type: 'fed'; published: number; elapsedMs: number; lateMs?: number; publishMs?: number }
  | { type: 'error'; message: string };

type Feed = (bus: Bus, topics: { transactions: string; slots: string }, msg: Record<string, unknown>) => Promise<{ published: number; elapsedMs: number; lateMs?: number; publishMs?: number }>;

function send(m: ChildReply): void {
  process.send?.(m);
}

type UsageReply = Extract<ChildReply, { type: 'usage' }>;
type FedReply = Extract<ChildReply, { type: 'fed' }>;

/**
 * The embedded bus stands in for a broker, whose retained log lives outside the fanout's process. Its reader here
 * is live: the fanout's (synchronous) handler reads in the microtask after each append, so the log only has to
 * hold what the feed appends before it yields (FEED_MAX_BURST, 2,304 records), with a margin. A bigger log kept
 * each record alive long enough to be promoted: the "broker's" log went into the fanout's old generation and its
 * major collections into the fanout's figures (200k records: ~200 MB of heap; 4,096: still ~2.5 µs of the
 * 20-connection figure at 4,000 tx/s, and p99 ×4). A smaller one made the feed's bursts at high rates skip records.
 * A reader that falls behind skips ahead, and the bench then counts the phase as not kept up.
 */
const CHILD_BUS_RETENTION = { maxMessagesPerPartition: FEED_MAX_BURST + 512, maxBytesPerPartition: 16 << 20 };

/** One fanout with its bus, as the single child runs it and as each worker of a multi-worker child runs it. */
interface One {
  fanout: FanoutHandle;
  usage(gc: boolean): UsageReply;
  feed(msg: Record<string, unknown>): Promise<FedReply>;
  close(): Promise<void>;
}

async function startOne(cc: ChildConfig): Promise<One> {
  const log = quietLog();
  const bus: Bus = cc.bus === 'kafka' ? new KafkaBus({ brokers: cc.brokers ?? [], clientId: 'fanout-child', log }) : new EmbeddedBus({ log, copyOnProduce: false, ...CHILD_BUS_RETENTION });
  const cfg = testConfig(cc.fanout);
  if (cc.bus === 'embedded') {
    await bus.createTopics([
      { name: cfg.topics.transactions, partitions: 1, compacted: false },
      { name: cfg.topics.slots, partitions: 1, compacted: false },
      { name: cfg.topics.entries, partitions: 1, compacted: false },
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
  return {
    fanout,
    usage: (gcFirst) => {
      const gc = (globalThis as { gc?: () => void }).gc;
      if (gcFirst && gc !== undefined) {
        gc();
        gc();
      }
      const cpu = process.cpuUsage();
      const mem = process.memoryUsage();
      const now = { rssMb: mem.rss / 2 ** 20, heapMb: mem.heapUsed / 2 ** 20, externalMb: mem.external / 2 ** 20, arrayBuffersMb: mem.arrayBuffers / 2 ** 20 };
      const r: UsageReply = { type: 'usage', cpuMs: (cpu.user + cpu.system) / 1000, rssMb: Math.max(peakRss, mem.rss) / 2 ** 20, heapMb: Math.max(peakHeap, mem.heapUsed) / 2 ** 20, now, stats: fanout.stats(), v2: fanout.v2Stats(), latency: { buckets: fanoutMetrics.latencyMs.buckets, counts: [...fanoutMetrics.latencyMs.counts], count: fanoutMetrics.latencyMs.count } };
      peakRss = 0;
      peakHeap = 0;
      return r;
    },
    feed: async (msg) => {
      if (cc.feedModule === undefined) throw new Error('no feedModule configured');
      const mod = require(cc.feedModule) as { feed: Feed };
      return { type: 'fed', ...(await mod.feed(bus, cfg.topics, msg)) };
    },
    close: async () => {
      clearInterval(sampler);
      await fanout.close();
      await bus.close();
    },
  };
}

/** Serves the parent's requests (usage, feed, close) with `answer`. */
function serveParent(answer: (m: ChildRequest) => Promise<'closed' | undefined>): void {
  process.on('message', (raw: unknown) => {
    const m = raw as ChildRequest;
    void (async () => {
      try {
        if ((await answer(m)) === 'closed') process.exit(0);
      } catch (e) {
        send({ type: 'error', message: (e as Error).stack ?? String(e) });
      }
    })();
  });
  process.on('disconnect', () => process.exit(0)); // the parent went away: do not linger
}

async function single(cc: ChildConfig): Promise<void> {
  const one = await startOne(cc);
  serveParent(async (m) => {
    if (m.type === 'usage') send(one.usage(m.gc === true));
    else if (m.type === 'feed') send(await one.feed(m));
    else if (m.type === 'close') {
      await one.close();
      return 'closed';
    }
    return undefined;
  });
  send({ type: 'ready', address: one.fanout.address });
}

/** Σ of the workers' numeric stats; what every worker counts alike (each reads every record) is the least of them. */
function mergeStats(all: FanoutStats[]): FanoutStats & { workers: number[] } {
  const sum = (f: (s: FanoutStats) => number): number => all.reduce((n, s) => n + f(s), 0);
  const max = (f: (s: FanoutStats) => number): number => Math.max(...all.map(f));
  const first = all[0]!;
  return {
    ...first,
    subscribers: sum((s) => s.subscribers),
    transactions: Math.min(...all.map((s) => s.transactions)),
    slots: Math.min(...all.map((s) => s.slots)),
    delivered: sum((s) => s.delivered),
    deliveredTransactions: sum((s) => s.deliveredTransactions),
    bytes: sum((s) => s.bytes),
    connections: sum((s) => s.connections),
    queue: { ...first.queue, sum: sum((s) => s.queue.sum), max: max((s) => s.queue.max), bytes: sum((s) => s.queue.bytes), lagMaxMs: max((s) => s.queue.lagMaxMs) },
    /** Streams per worker: how the connections spread. */
    workers: all.map((s) => s.subscribers),
  };
}

/** workers > 1: this child is the cluster primary; the fanouts run in its workers (fanout/cluster.ts). */
async function primary(cc: ChildConfig): Promise<void> {
  const pool = await startFanoutWorkers({ count: cc.workers!, exec: __filename, execArgv: process.execArgv, payload: cc, log: quietLog() });
  serveParent(async (m) => {
    if (m.type === 'usage') {
      const own = process.cpuUsage();
      const rs = (await pool.request<UsageReply>({ kind: 'usage', gc: m.gc === true })).map((r) => r.body);
      const lat = rs[0]!.latency;
      send({
        type: 'usage',
        // The primary accepts every connection and hands it over: its CPU is the server's too.
        cpuMs: (own.user + own.system) / 1000 + rs.reduce((n, r) => n + r.cpuMs, 0),
        rssMb: rs.reduce((n, r) => n + r.rssMb, process.memoryUsage().rss / 2 ** 20),
        heapMb: rs.reduce((n, r) => n + r.heapMb, 0),
        now: { rssMb: rs.reduce((n, r) => n + r.now.rssMb, 0), heapMb: rs.reduce((n, r) => n + r.now.heapMb, 0), externalMb: rs.reduce((n, r) => n + r.now.externalMb, 0), arrayBuffersMb: rs.reduce((n, r) => n + r.now.arrayBuffersMb, 0) },
        stats: mergeStats(rs.map((r) => r.stats as FanoutStats)),
        latency: { buckets: lat.buckets, counts: lat.counts.map((_c, i) => rs.reduce((n, r) => n + r.latency.counts[i]!, 0)), count: rs.reduce((n, r) => n + r.latency.count, 0) },
      });
    } else if (m.type === 'feed') {
      // Every worker publishes the same plan into its own embedded bus: what each would read from a shared bus.
      const rs = (await pool.request<FedReply>({ ...m, kind: 'feed' }, 120_000)).map((r) => r.body);
      send({ type: 'fed', published: Math.max(...rs.map((r) => r.published)), elapsedMs: Math.max(...rs.map((r) => r.elapsedMs)), ...lateOf(rs), publishMs: rs.reduce((n, r) => n + (r.publishMs ?? 0), 0) });
    } else if (m.type === 'close') {
      await pool.close();
      return 'closed';
    }
    return undefined;
  });
  send({ type: 'ready', address: pool.address });
}

function lateOf(rs: FedReply[]): { lateMs?: number } {
  const late = rs.map((r) => r.lateMs).filter((x): x is number => x !== undefined);
  return late.length === 0 ? {} : { lateMs: Math.max(...late) };
}

function worker(): void {
  let one: One | undefined;
  serveFanoutWorker(
    async ({ payload }) => {
      one = await startOne(payload as ChildConfig);
      return { fanout: one.fanout, close: () => one!.close() };
    },
    {
      usage: async (b) => one!.usage(b.gc === true),
      feed: async (b) => one!.feed(b),
    },
  );
}

async function main(): Promise<void> {
  if (cluster.isWorker) return worker();
  const cc = JSON.parse(process.env.FANOUT_CHILD ?? '{}') as ChildConfig;
  return (cc.workers ?? 1) > 1 ? primary(cc) : single(cc);
}

main().catch((e: unknown) => {
  send({ type: 'error', message: (e as Error).stack ?? String(e) });
  process.exit(1);
});
