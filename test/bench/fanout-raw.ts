import os from 'node:os';
import path from 'node:path';
import type { FanoutStats } from '../../fanout/v1/hub';
import { FanoutChild } from '../fanout/child-process';
import { serverP99 } from './fanout';
import { uniqueTopics } from '../fanout/support';
import { loadClientKinds, openLoad, type Load, type LoadClientKind } from './fanout-load';
import { WORKLOAD } from './fanout-workload';
import { fmt, sleep, type BenchResult } from './stats';

// The fanout's own cost per delivered message, under a load client cheaper than the server: 1,000 subscriber
// streams (fanout-load.ts) that cut the byte stream at gRPC length prefixes, read only the publish stamp in
// signatures[0] and decode nothing else, on 1,000 connections and on 20 — by default the compiled Go client
// (test/bench/loadclient, a process of its own), else bare node:http2 in this process. Same workload as
// fanout/v1/hub.ts (~5 subscribers reached per transaction, real ~800 B templates), published inside the fanout's
// process (embedded bus). Server CPU = the fanout's user+system time over the phase (with workers: the cluster
// primary's and every worker's), divided by the messages the clients received.
//
// Cases, each in a fresh fanout child:
//   - grpc-js direct writes (reference): fanout.transport grpc-js, responses written straight to node:http2's
//     stream (grpc-js's own per-message write path, once the first reference here, was removed: issue 20);
//   - own HTTP/2, one process (one core): fanout.transport h2 (fanout/h2/), the default;
//   - own HTTP/2, fanout.workers = every core: node:cluster workers on one port (fanout/cluster.ts); each
//     worker publishes the same feed into its own embedded bus, standing in for its own reader of the shared
//     Kafka topic (production workers read Kafka; the embedded bus keeps the broker's CPU out of the figure).
// Each runs 4,000 and 12,000 tx/s for PHASE_S, then (own HTTP/2) searches for the highest rate kept up:
// every transaction processed and every response received within TAIL_MS of the feed's end, p99 publish →
// receipt < 250 ms, and the publisher (which shares the fanout's event loop) never more than 250 ms late.

// FANOUT_BENCH_PROFILE=<dir>: the fanout child runs under --cpu-prof and writes its profile there on exit;
// FANOUT_BENCH_NODE_ARGS='--max-semi-space-size=64': node flags for the fanout child (and its workers).
// FANOUT_BENCH_ONLY=h2|grpc-js, FANOUT_BENCH_CONNECTIONS=20, FANOUT_BENCH_WORKERS=1|2: run a subset.
// FANOUT_BENCH_SEARCH=0: skip the searches; FANOUT_BENCH_RATES=4000: other fixed rates; FANOUT_BENCH_PHASE_S=20: longer phases.
// FANOUT_BENCH_CLIENT=go|node|go,node: the load client(s); default go when `go` is on PATH, else node (each case
// runs once per client, in a fresh fanout child).
// p99 beside the build before: FANOUT_BENCH_BASELINE=<root of another checkout, built> runs, after the cases
// above, FANOUT_BENCH_P99_ROUNDS rounds (default 4; 0 skips) of one 4,000 tx/s phase of FANOUT_BENCH_P99_PHASE_S
// (default 6) with 1,000 streams on 1,000 connections, own HTTP/2 in one process, alternating this build and that
// one's fanout child (and workload) ABBA, each phase in a fresh child: per build the median p99 and CPU per
// delivered message with their spread over rounds (min–max), and this ÷ base per round. Without a baseline the
// rounds run on this build alone (their spread is the noise a difference must exceed). FANOUT_BENCH_P99_ONLY=1: only
// these rounds.
const BASELINE = process.env.FANOUT_BENCH_BASELINE;
const P99_ROUNDS = Number(process.env.FANOUT_BENCH_P99_ROUNDS ?? 4);
const P99_PHASE_S = Number(process.env.FANOUT_BENCH_P99_PHASE_S ?? 6);
const P99_RATE = 4000;
const P99_CONNECTIONS = 1000;
const PROFILE_DIR = process.env.FANOUT_BENCH_PROFILE;
const NODE_ARGS = (process.env.FANOUT_BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
const PHASE_S = Number(process.env.FANOUT_BENCH_PHASE_S ?? 4);
const RATES = process.env.FANOUT_BENCH_RATES === undefined ? [4000, 12_000] : process.env.FANOUT_BENCH_RATES.split(',').map(Number);
const CONNECTION_COUNTS = [1000, 20];
const SEARCH_PHASE_S = 2;
const SEARCH_STEPS = 6;
const KEPT_UP_P99_MS = 250;
const KEPT_UP_LATE_MS = 250;
const TAIL_MS = 1500;
/** After a phase that fell behind, how long the backlog may take to clear before the next one. */
const DRAIN_MS = 15_000;

interface CaseSpec {
  client: LoadClientKind;
  transport: 'h2' | 'grpc-js';
  connections: number;
  workers: number;
}

interface PhaseResult {
  rate: number;
  published: number;
  delivered: number;
  deliveredPerS: number;
  cpuPct: number;
  usPerMsg: number;
  /** Of usPerMsg, the publisher's own share (making records, appending them to the embedded bus). */
  publisherUsPerMsg: number;
  p50: number;
  p99: number;
  /** Upper bucket bound of the server's own p99, bus record observed-at → written to the stream. */
  serverP99Le: number;
  lateMs: number;
  clientCpuPct: number;
  clientUsPerMsg: number;
  /** The kernel's share of the client's CPU. */
  clientSysPct: number;
  /** Why the phase does not count as kept up; undefined when it does. */
  behind: string | undefined;
}

const stats = (u: { stats: unknown }): FanoutStats => u.stats as FanoutStats;

/** One phase at `rate`: feed, then up to TAIL_MS for every transaction to be processed and every response received. */
async function runPhase(child: FanoutChild, load: Load, rate: number, seconds: number, seq0: number): Promise<PhaseResult> {
  await load.startRecording();
  const r0 = await load.received();
  const c0 = await load.cpuMs();
  const u0 = await child.usage();
  const t0 = performance.now();
  const fed = await child.feed({ rate, seconds, seq0 }, (seconds + 60) * 1000);
  const until = performance.now() + TAIL_MS;
  let u1 = await child.usage();
  let r1 = await load.received();
  const caughtUp = (): boolean =>
    stats(u1).transactions - stats(u0).transactions >= fed.published && stats(u1).queue.sum === 0 && r1 - r0 >= stats(u1).deliveredTransactions - stats(u0).deliveredTransactions;
  while (!caughtUp() && performance.now() < until) {
    await sleep(50);
    u1 = await child.usage();
    r1 = await load.received();
  }
  const done = caughtUp();
  const wallS = (performance.now() - t0) / 1000;
  const s = await load.stopRecording();
  const c1 = await load.cpuMs();
  const clientCpuMs = c1.user + c1.sys - c0.user - c0.sys;
  const clientSysMs = c1.sys - c0.sys;
  const delivered = (await load.received()) - r0;
  const cpuMs = u1.cpuMs - u0.cpuMs;
  const lateMs = fed.lateMs ?? 0;
  const behind = !done
    ? `not caught up ${TAIL_MS} ms after the feed`
    : !(s.p99 < KEPT_UP_P99_MS)
      ? `p99 ${fmt(s.p99)} ms`
      : lateMs >= KEPT_UP_LATE_MS
        ? `publisher ${fmt(lateMs)} ms late`
        : undefined;
  return {
    rate,
    published: fed.published,
    delivered,
    deliveredPerS: delivered / (fed.elapsedMs / 1000),
    cpuPct: (cpuMs / 1000 / wallS) * 100,
    usPerMsg: delivered > 0 ? (cpuMs * 1000) / delivered : Number.NaN,
    publisherUsPerMsg: delivered > 0 ? ((fed.publishMs ?? 0) * 1000) / delivered : Number.NaN,
    p50: s.p50,
    p99: s.p99,
    serverP99Le: serverP99(u0.latency, u1.latency),
    lateMs,
    clientCpuPct: (clientCpuMs / 1000 / wallS) * 100,
    clientUsPerMsg: delivered > 0 ? (clientCpuMs * 1000) / delivered : Number.NaN,
    clientSysPct: clientCpuMs > 0 ? (clientSysMs / clientCpuMs) * 100 : Number.NaN,
    behind,
  };
}

/** Waits (up to DRAIN_MS) until the fanout has processed and the clients received everything published so far. */
async function drain(child: FanoutChild, load: Load, published: number): Promise<void> {
  const deadline = performance.now() + DRAIN_MS;
  for (;;) {
    const u = await child.usage();
    if ((stats(u).transactions >= published && stats(u).queue.sum === 0 && (await load.received()) >= stats(u).deliveredTransactions) || performance.now() > deadline) return;
    await sleep(100);
  }
}

const roundRate = (r: number): number => Math.max(500, Math.round(r / 500) * 500);

/**
 * The highest rate kept up: from the fixed phases' outcome, grow by half while phases keep up, then bisect;
 * SEARCH_STEPS short phases at most. Returns the best rate kept up (0: none) and every phase tried.
 */
async function searchHighest(run: (rate: number) => Promise<PhaseResult>, known: PhaseResult[]): Promise<{ best: PhaseResult | undefined; tried: PhaseResult[] }> {
  let lo = known.filter((p) => p.behind === undefined).sort((a, b) => b.rate - a.rate)[0];
  let hi = known.filter((p) => p.behind !== undefined && (lo === undefined || p.rate > lo.rate)).sort((a, b) => a.rate - b.rate)[0]?.rate ?? Number.POSITIVE_INFINITY;
  const tried: PhaseResult[] = [];
  for (let step = 0; step < SEARCH_STEPS; step++) {
    const base = lo?.rate ?? 0;
    if (Number.isFinite(hi) && hi - base <= Math.max(1000, base * 0.1)) break;
    const next = roundRate(Number.isFinite(hi) ? (base + hi) / 2 : base * 1.5);
    if (next <= base || next >= hi) break;
    const p = await run(next);
    tried.push(p);
    if (p.behind === undefined) lo = p;
    else hi = next;
  }
  return { best: lo, tried };
}

function caseLabel(c: CaseSpec): string {
  const how = c.transport === 'h2' ? 'own HTTP/2' : 'grpc-js direct writes (reference)';
  const where = c.workers === 1 ? 'one process (one core)' : `${c.workers} workers (every core)`;
  return `${how}, ${where}, ${c.connections} connections, ${c.client} client`;
}

function phaseRow(c: CaseSpec, p: PhaseResult, what: string): BenchResult {
  return {
    bench: 'fanout-raw',
    case: `${caseLabel(c)}, ${what}`,
    figures: {
      tx_per_s: p.rate,
      delivered_per_s: p.deliveredPerS,
      server_cpu_pct: p.cpuPct,
      server_us_per_msg: p.usPerMsg,
      publisher_us_per_msg: p.publisherUsPerMsg,
      p50_ms: p.p50,
      p99_ms: p.p99,
      server_p99_le_ms: p.serverP99Le,
      kept_up: p.behind === undefined ? 'yes' : 'no',
      client_cpu_pct: p.clientCpuPct,
      client_us_per_msg: p.clientUsPerMsg,
      client_sys_share_pct: p.clientSysPct,
    },
    note: p.behind,
  };
}

/** A fanout child for case `c`: this build's, or (`root`) another built checkout's with its own workload. */
function startChild(c: CaseSpec, root?: string): Promise<FanoutChild> {
  return FanoutChild.start(
    {
      bus: 'embedded',
      feedModule: root === undefined ? require.resolve('./fanout-workload') : path.join(root, 'dist', 'test', 'bench', 'fanout-workload.js'),
      workers: c.workers,
      fanout: {
        topics: uniqueTopics('bench-raw'),
        heartbeatMs: 10_000,
        transport: c.transport,
        maxStreamsPerConnection: 1000,
        maxStreamsPerIp: 2000,
        queueMaxMessages: 50_000,
        queueMaxBytes: 64 << 20,
        queueMaxLagMs: 60_000,
        queueBudgetBytes: 1 << 30,
      },
    },
    [...NODE_ARGS, ...(PROFILE_DIR === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`])],
    root,
  );
}

async function runCase(c: CaseSpec, search: boolean): Promise<BenchResult[]> {
  const child = await startChild(c);
  const out: BenchResult[] = [];
  let load: Load | undefined;
  try {
    load = await openLoad(c.client, child.address, c.connections);
    const spread = (stats(await child.usage()) as FanoutStats & { workers?: number[] }).workers;
    let seq = 0;
    await child.feed({ rate: 2000, seconds: 1, seq0: seq }, 30_000); // warm up
    seq += 2000;
    const fixed: PhaseResult[] = [];
    const phase = async (rate: number, seconds: number): Promise<PhaseResult> => {
      await drain(child, load!, seq);
      await sleep(300);
      const p = await runPhase(child, load!, rate, seconds, seq);
      seq += p.published;
      return p;
    };
    for (const rate of RATES) {
      const p = await phase(rate, PHASE_S);
      fixed.push(p);
      out.push(phaseRow(c, p, `${fmt(rate)} tx/s`));
    }
    if (spread !== undefined) out[0]!.note = [`streams per worker: ${spread.join(' / ')}`, out[0]!.note].filter((x) => x !== undefined).join('; ');
    if (search) {
      const { best, tried } = await searchHighest((rate) => phase(rate, SEARCH_PHASE_S), fixed);
      const steps = tried.map((p) => `${fmt(p.rate)} ${p.behind === undefined ? 'kept up' : `no (${p.behind})`}`).join(', ');
      out.push({
        bench: 'fanout-raw',
        case: `${caseLabel(c)}, highest rate kept up`,
        figures:
          best === undefined
            ? { tx_per_s: 0 }
            : {
                tx_per_s: best.rate,
                delivered_per_s: best.deliveredPerS,
                server_cpu_pct: best.cpuPct,
                server_us_per_msg: best.usPerMsg,
                p50_ms: best.p50,
                p99_ms: best.p99,
                client_cpu_pct: best.clientCpuPct,
                client_us_per_msg: best.clientUsPerMsg,
              },
        note: `searched in ${SEARCH_PHASE_S} s phases: ${steps === '' ? 'nothing beyond the fixed rates' : steps}`,
      });
    }
  } finally {
    if (load !== undefined) await load.close();
    await child.close();
  }
  return out;
}

/** One 4,000 tx/s phase in a fresh child of `root`'s build (undefined: this one), after a warm-up. */
async function p99Phase(client: LoadClientKind, root: string | undefined): Promise<PhaseResult> {
  const c: CaseSpec = { client, transport: 'h2', connections: P99_CONNECTIONS, workers: 1 };
  const child = await startChild(c, root);
  let load: Load | undefined;
  try {
    load = await openLoad(client, child.address, c.connections);
    await child.feed({ rate: 2000, seconds: 1, seq0: 0 }, 30_000); // warm up
    await drain(child, load, 2000);
    await sleep(300);
    return await runPhase(child, load, P99_RATE, P99_PHASE_S, 2000);
  } finally {
    if (load !== undefined) await load.close();
    await child.close();
  }
}

/** The p99 rounds (see the header): rows per build and the per-round ratios. */
async function p99Rounds(client: LoadClientKind): Promise<BenchResult[]> {
  const builds: Array<{ name: string; root: string | undefined }> = [{ name: 'this', root: undefined }, ...(BASELINE === undefined ? [] : [{ name: 'base', root: BASELINE }])];
  const got = new Map<string, PhaseResult[]>(builds.map((b) => [b.name, []]));
  const ratios: Array<{ p99: number; us: number }> = [];
  for (let r = 0; r < P99_ROUNDS; r++) {
    const order = r % 2 === 0 ? builds : [...builds].reverse(); // ABBA: a drift over the run hits both alike
    const round = new Map<string, PhaseResult>();
    for (const b of order) {
      const p = await p99Phase(client, b.root);
      got.get(b.name)!.push(p);
      round.set(b.name, p);
    }
    const t = round.get('this')!;
    const b = round.get('base');
    if (b !== undefined) ratios.push({ p99: t.p99 / b.p99, us: t.usPerMsg / b.usPerMsg });
  }
  const med = (xs: number[]): number => xs.slice().sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
  const range = (xs: number[], digits = 2): string => `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;
  const out: BenchResult[] = builds.map((b) => {
    const ps = got.get(b.name)!;
    return {
      bench: 'fanout-raw',
      case: `p99 rounds: ${fmt(P99_RATE)} tx/s × ${WORKLOAD.subscribers} streams, ${P99_CONNECTIONS} connections, own HTTP/2, one process, ${client} client, ${b.name === 'this' ? 'this build' : `build before (${b.root})`}`,
      figures: {
        rounds: ps.length,
        p99_ms_median: med(ps.map((p) => p.p99)),
        p99_ms_spread: range(ps.map((p) => p.p99)),
        p50_ms_median: med(ps.map((p) => p.p50)),
        server_us_per_msg_median: med(ps.map((p) => p.usPerMsg)),
        server_us_per_msg_spread: range(ps.map((p) => p.usPerMsg)),
        kept_up: `${ps.filter((p) => p.behind === undefined).length}/${ps.length}`,
      },
      note: ps.map((p) => p.behind).filter((x) => x !== undefined).join('; ') || undefined,
    };
  });
  if (ratios.length > 0) {
    out.push({
      bench: 'fanout-raw',
      case: 'p99 rounds: this build ÷ build before, per round',
      figures: {
        p99_ratio_median: med(ratios.map((x) => x.p99)),
        p99_ratio_spread: range(ratios.map((x) => x.p99)),
        us_per_msg_ratio_median: med(ratios.map((x) => x.us)),
        us_per_msg_ratio_spread: range(ratios.map((x) => x.us), 3),
      },
      note: 'a difference counts when the spread of the per-round ratios stays on one side of 1 (aim: CPU per message ≤ 1.05)',
    });
  }
  return out;
}

export async function benchFanoutRaw(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  const only = process.env.FANOUT_BENCH_ONLY;
  const conns = process.env.FANOUT_BENCH_CONNECTIONS === undefined ? CONNECTION_COUNTS : [Number(process.env.FANOUT_BENCH_CONNECTIONS)];
  const cores = os.availableParallelism();
  const workerCounts = process.env.FANOUT_BENCH_WORKERS === undefined ? [...new Set([1, cores])] : process.env.FANOUT_BENCH_WORKERS.split(',').map(Number);
  const search = process.env.FANOUT_BENCH_SEARCH !== '0';
  const clients = loadClientKinds();
  if (clients.kinds.length === 1 && clients.kinds[0] === 'node' && process.env.FANOUT_BENCH_CLIENT === undefined) console.log(`fanout-raw: ${clients.note}`);
  for (const connections of process.env.FANOUT_BENCH_P99_ONLY === '1' ? [] : conns) {
    for (const client of clients.kinds) {
      if (only !== 'h2' && workerCounts.includes(1)) {
        results.push(...(await runCase({ client, transport: 'grpc-js', connections, workers: 1 }, false)));
      }
      if (only === 'grpc-js') continue;
      for (const workers of workerCounts) results.push(...(await runCase({ client, transport: 'h2', connections, workers }, search)));
    }
  }
  if (P99_ROUNDS > 0) for (const client of clients.kinds) results.push(...(await p99Rounds(client)));
  results.push({
    bench: 'fanout-raw',
    case: 'how to read',
    figures: { cores },
    note:
      `server_us_per_msg = fanout CPU (with workers: the cluster primary + every worker) / messages received; ` +
      `publisher_us_per_msg = the part of it the feed itself costs (making records, appending them to the embedded bus in the fanout's process); ` +
      `${clients.note}; client_cpu_pct / client_us_per_msg = the load client's CPU (go: its own process; node: this whole bench process); ` +
      `go p50/p99 are upper bounds of 10 µs buckets; ` +
      `"every core" = fanout.workers = ${cores} on this ${cores}-core machine, which the load client shares: ` +
      `neither the workers nor the client has a core of its own, so the every-core rates are a floor. ` +
      `Kept up = all processed and received within ${TAIL_MS} ms of the feed's end, p99 < ${KEPT_UP_P99_MS} ms, publisher < ${KEPT_UP_LATE_MS} ms late`,
  });
  return results;
}

if (require.main === module) {
  void (async () => {
    const { formatResults } = await import('./stats');
    console.log(formatResults('fanout-raw', await benchFanoutRaw()));
    process.exit(0);
  })();
}
