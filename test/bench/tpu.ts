import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { Keypair } from '@solana/web3.js';
import { Connection } from '@solana/web3.js';
import { EmbeddedBus } from '../../bus/embedded';
import { rentalsFromList } from '../../bus/rental-registry';
import { defaultTopicSpecs } from '../../bus/topics';
import { parseSubmitConfig } from '../../gateways/submit/config';
import { startSubmit, type SubmitService } from '../../gateways/submit/service';
import type { TraceView } from '../../gateways/submit/trace';
import { ensureTpuBinary, LEADER_BIN, SENDER_BIN } from '../../gateways/submit/tpu/sender-build';
import { createLogger } from '../../infra/base/log';
import { Registry } from '../../infra/base/metrics';
import { parseIngestConfig } from '../../ingest/config';
import { startIngest } from '../../ingest/worker';
import { quietLog } from '../support/log-capture';
import { waitFor } from '../support/wait';
import { legacyTx, MIN_TIP, rental, TIP_ACCOUNTS } from '../gateways/submit/support';
import { startTpuCluster, type TpuCluster } from '../gateways/submit/tpu-cluster';
import { percentile, type BenchResult } from './stats';
import { httpLoad } from './submit';

// The `tpu` route against the `rpc` route on the local multi-leader cluster (4 solana-streamer TPU servers,
// leaders rotating every 4 slots of 100 ms), each server behind a seeded UDP loss relay (test/support/
// udp-loss-relay.ts: drops a share of datagrams both ways). The chain's own sendTransaction forwards to the
// leaders' TPU over QUIC with Agave's send-transaction service's rules (infra/local/chain/send-service.ts, Agave's
// solana-tpu-client-next in a sender process), so `rpc` reaches the leaders one hop after `tpu`, on the same
// relays and servers.
//
// 1. Landing, same run, same load: three submission services on the one cluster (`tpu` alone, `rpc` alone, both),
//    cases interleaved in rounds (loss 0% / 10% alternating first, the three configurations rotating), each case
//    N transactions at a fixed rate through /binary; figures: landing rate, slot delta p50/p99 (from the traces:
//    landed slot − slot at acceptance, the slot from ingest's stream.slots), the time from the client's request to
//    the packet's first arrival at a leader's TPU server (the hop the `rpc` route adds, in ms), and the relays'
//    measured drop share.
// 2. The pipeline's accepted tx/s per core with the `tpu` route on vs off, and traces on vs off: three service
//    children (routes rpc / rpc+tpu, traces on; routes rpc, traces off), the /binary load of bench/submit.ts
//    (pipelined raw HTTP/1.1), phases interleaved child after child over rounds; per core = accepted ÷ CPU
//    seconds of the child and of its own children (the Rust sender counts), read from /proc, over the load and
//    until the rpc route has forwarded all it accepted. The rpc route goes to a sink in a process of its own
//    (answers every sendTransaction at once; the route's in-flight cap raised so it never refuses); the tpu route
//    sends to the real leaders (relays at 0%); traces poll a port with nothing listening, as bench/submit.ts does.
//
// Env: BENCH_TPU_ROUNDS (3), BENCH_TPU_TXS (per case, 60), BENCH_TPU_RATE (tx/s, 30), BENCH_TPU_CORE_ROUNDS (3),
// BENCH_TPU_SECONDS (per phase, 3), BENCH_TPU_SEED (36), BENCH_TPU_PARTS (landing,core), BENCH_TPU_AA (1 = the
// "tpu on" child runs routes rpc too: the noise floor of the per-core comparison).
//   npx ts-node --transpile-only test/bench/tpu.ts      (or BENCH_ONLY=tpu npm run bench)

const ROUNDS = Number(process.env.BENCH_TPU_ROUNDS ?? 3);
const PER_CASE = Number(process.env.BENCH_TPU_TXS ?? 60);
const RATE = Number(process.env.BENCH_TPU_RATE ?? 30);
const CORE_ROUNDS = Number(process.env.BENCH_TPU_CORE_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_TPU_SECONDS ?? 3);
const SEED = Number(process.env.BENCH_TPU_SEED ?? 36);
const LOSSES = [0, 0.1] as const;
const CONFIGS = [['tpu'], ['rpc'], ['rpc', 'tpu']] as const;
const SETTLE_MS = 16_000;

const CHILD_ENV = 'MERIDIAN_TPU_BENCH_CHILD';
const SINK_ENV = 'MERIDIAN_TPU_BENCH_SINK';
const API_KEY = '7c1f3a52-9b4e-4d6a-8e21-3f5a6b7c8d9e';

const label = (routes: readonly string[]): string => (routes.length === 2 ? 'rpc+tpu' : routes[0]!);

interface CaseOut {
  sent: number;
  landed: number;
  deltas: number[];
  /** Request sent → first arrival of the packet at a leader's TPU server. */
  toLeaderMs: number[];
  dropped: number;
  relayed: number;
}

// ---------------------------------------------------------------- 1. landing
async function landing(cluster: TpuCluster, services: Map<string, SubmitService>, key: string): Promise<BenchResult[]> {
  const conn = new Connection(cluster.chain.httpUrl, 'processed');
  const payer = Keypair.fromSecretKey(cluster.chain.payer);
  const out = new Map<string, CaseOut>();
  let amount = 1_000_000;
  const relayTotals = (): { dropped: number; relayed: number } => {
    let dropped = 0;
    let relayed = 0;
    for (const r of cluster.relays) {
      dropped += r.counts.upDropped + r.counts.downDropped;
      relayed += r.counts.upForwarded + r.counts.downForwarded;
    }
    return { dropped, relayed };
  };
  for (let round = 0; round < ROUNDS; round++) {
    const losses = round % 2 === 0 ? LOSSES : [...LOSSES].reverse();
    for (const loss of losses) {
      cluster.setLoss(loss);
      for (let k = 0; k < CONFIGS.length; k++) {
        const routes = CONFIGS[(k + round) % CONFIGS.length]!;
        const name = `${label(routes)} @ ${loss * 100}% loss`;
        const svc = services.get(label(routes))!;
        const base = `http://127.0.0.1:${svc.http.port}`;
        const r0 = relayTotals();
        const bh = (await conn.getLatestBlockhash('processed')).blockhash;
        const sigs: string[] = [];
        const sentAt: number[] = [];
        const t0 = Date.now();
        for (let i = 0; i < PER_CASE; i++) {
          const due = t0 + (i * 1000) / RATE;
          if (due > Date.now()) await new Promise((res) => setTimeout(res, due - Date.now()));
          const tx = legacyTx({ payer, blockhash: bh, amount: amount++ });
          sentAt.push(Date.now());
          sigs.push(await (await fetch(`${base}/binary?api-key=${key}`, { method: 'POST', body: tx })).text());
        }
        // Settle: every trace landed or expired (a blockhash lives 15 s at 100 ms slots), or SETTLE_MS.
        const views = new Map<string, TraceView>();
        const deadline = Date.now() + SETTLE_MS;
        while (Date.now() < deadline && views.size < sigs.length) {
          for (const s of sigs) {
            if (views.has(s)) continue;
            const res = await fetch(`${base}/trace/${s}?api-key=${key}`);
            if (res.status !== 200) continue;
            const t = ((await res.json()) as { trace: TraceView }).trace;
            if (t.landed !== null || t.state === 'expired') views.set(s, t);
          }
          if (views.size < sigs.length) await new Promise((res) => setTimeout(res, 200));
        }
        const r1 = relayTotals();
        let o = out.get(name);
        if (o === undefined) out.set(name, (o = { sent: 0, landed: 0, deltas: [], toLeaderMs: [], dropped: 0, relayed: 0 }));
        o.dropped += r1.dropped - r0.dropped;
        o.relayed += r1.relayed - r0.relayed;
        for (const [i, s] of sigs.entries()) {
          o.sent++;
          const a = cluster.arrivals.get(s);
          if (a !== undefined) o.toLeaderMs.push(Math.min(...a.map((x) => x.at)) - sentAt[i]!);
          const t = views.get(s);
          if (t?.landed == null) continue;
          o.landed++;
          if (t.landed.slotDelta !== null) o.deltas.push(t.landed.slotDelta);
        }
      }
    }
  }
  cluster.setLoss(0);
  const results: BenchResult[] = [];
  for (const loss of LOSSES) {
    const rpc = out.get(`rpc @ ${loss * 100}% loss`)!;
    const rpcP50 = percentile([...rpc.deltas].sort((a, b) => a - b), 50);
    const rpcRate = rpc.landed / rpc.sent;
    for (const routes of CONFIGS) {
      const name = `${label(routes)} @ ${loss * 100}% loss`;
      const o = out.get(name)!;
      const d = [...o.deltas].sort((a, b) => a - b);
      const rate = o.landed / o.sent;
      results.push({
        bench: 'tpu',
        case: routes[0] === 'rpc' && routes.length === 1 ? `reference: ${name}` : name,
        figures: {
          sent: o.sent,
          landing_rate: rate,
          slot_delta_p50: percentile(d, 50),
          slot_delta_p99: percentile(d, 99),
          to_leader_ms_p50: percentile([...o.toLeaderMs].sort((a, b) => a - b), 50),
          to_leader_ms_p99: percentile([...o.toLeaderMs].sort((a, b) => a - b), 99),
          ...(routes[0] === 'rpc' && routes.length === 1 ? {} : { vs_rpc_landing: rate / rpcRate, vs_rpc_p50_slots: percentile(d, 50) - rpcP50 }),
          drop_share: o.relayed + o.dropped === 0 ? 0 : o.dropped / (o.relayed + o.dropped),
        },
        note: o.landed < o.sent ? `${o.sent - o.landed} not landed within ${SETTLE_MS / 1000} s (expired or still pending)` : undefined,
      });
    }
  }
  const hop = cluster.chain.sendCounts();
  results.push({ bench: 'tpu', case: "chain's forward hop (sendTransaction → leaders' TPU) over the run", figures: { sent: hop.received }, note: `send service ${JSON.stringify(hop)}; chain TPU intake ${JSON.stringify(cluster.chain.tpuCounts())} (rejected: mostly the second leader's copy, already processed); hop client ${JSON.stringify(cluster.hop.counts)}` });
  return results;
}

// ---------------------------------------------------------------- 2. per core: child
interface ChildStats {
  accepted: number;
  routed: number;
}

async function serve(): Promise<void> {
  const bus = new EmbeddedBus();
  await bus.createTopics(defaultTopicSpecs());
  // error: the status poller's failed calls to the port with nothing listening are warnings.
  const log = createLogger({ level: 'error' });
  const routes = (process.env.BENCH_TPU_ROUTES ?? 'rpc').split(',');
  const cfg = parseSubmitConfig({
    enabled: true,
    listen: '127.0.0.1:0',
    udp: { enabled: false },
    tips: { accounts: (process.env.BENCH_TPU_TIPS ?? '').split(','), minLamports: MIN_TIP },
    forwardUrls: [process.env.BENCH_TPU_SINK!],
    // Never at its cap: every accepted transaction is forwarded within the phase (the parent waits for the sink).
    forward: { maxInFlightPerTarget: 1_000_000 },
    routes,
    tpu: { rpcUrl: process.env.BENCH_TPU_CHAIN!, wsUrl: process.env.BENCH_TPU_CHAIN!.replace(/^http/, 'ws'), senderBinary: process.env.BENCH_TPU_SENDER },
    traces: { enabled: process.env.BENCH_TPU_TRACES !== 'off', statusUrl: 'http://127.0.0.1:1/' },
  });
  const rentals = rentalsFromList([{ id: 'bench', rps: 0, tps: 1e12, region: 'local', ips: [], apiKeys: [API_KEY], tokens: [], dedicatedPaths: [], pps: 0, evmIps: [], status: 'active' }]);
  const svc = await startSubmit(cfg, { bus, rentals, log, registry: new Registry() });
  if (svc.tpu !== undefined) await waitFor(() => svc.tpu!.targets() !== null, 20_000, 'the tpu route to know the slot and the schedule');
  const m = svc.pipeline.metrics;
  process.on('message', (msg: { cmd: string }) => {
    if (msg.cmd === 'stats') process.send!({ stats: { accepted: m.value('binary', 'accepted'), routed: 0 } satisfies ChildStats });
    if (msg.cmd === 'stop') void svc.close().then(() => bus.close()).then(() => process.exit(0));
  });
  process.send!({ ready: svc.http.port });
}

// ---------------------------------------------------------------- 2. per core: parent
/** CPU seconds (user + system) of `pid` and every descendant, from /proc (USER_HZ = 100 on Linux). */
function treeCpuSeconds(pid: number): { self: number; tree: number } {
  const parent = new Map<number, number>();
  const ticks = new Map<number, number>();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${d}/stat`, 'latin1');
    } catch {
      continue;
    }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    parent.set(Number(d), Number(f[1]));
    ticks.set(Number(d), Number(f[11]) + Number(f[12]));
  }
  const inTree = (p: number): boolean => {
    for (let q = p, n = 0; q > 1 && n < 64; q = parent.get(q) ?? 0, n++) if (q === pid) return true;
    return false;
  };
  let tree = 0;
  for (const [p, t] of ticks) if (inTree(p)) tree += t;
  return { self: (ticks.get(pid) ?? 0) / 100, tree: tree / 100 };
}

interface Child {
  name: string;
  child: ChildProcess;
  port: number;
}

async function startChild(name: string, env: Record<string, string>): Promise<Child> {
  const child = fork(__filename, [], { env: { ...process.env, [CHILD_ENV]: '1', ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`bench child ${name} exited (${code})`)));
    child.on('message', (m: { ready?: number }) => m.ready !== undefined && resolve(m.ready));
  });
  return { name, child, port };
}

function ask(c: ChildProcess): Promise<ChildStats> {
  return new Promise((resolve) => {
    const on = (m: { stats?: ChildStats }): void => {
      if (m.stats === undefined) return;
      c.off('message', on);
      resolve(m.stats);
    };
    c.on('message', on);
    c.send({ cmd: 'stats' });
  });
}

async function stopChild(c: ChildProcess): Promise<void> {
  c.send({ cmd: 'stop' });
  await new Promise((r) => {
    const t = setTimeout(() => {
      c.kill('SIGKILL');
      r(undefined);
    }, 5000);
    c.once('exit', () => {
      clearTimeout(t);
      r(undefined);
    });
  });
}

/** Sink child: a chain RPC node that answers every sendTransaction at once, counting requests per URL path. */
function sinkServe(): void {
  const counts: Record<string, number> = {};
  const answer = Buffer.from('{"jsonrpc":"2.0","id":1,"result":"1111111111111111111111111111111111111111111111111111111111111111"}');
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    req.resume();
    req.on('end', () => {
      counts[path] = (counts[path] ?? 0) + 1;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length });
      res.end(answer);
    });
  });
  server.keepAliveTimeout = 60_000;
  process.on('message', (m: { cmd: string }) => {
    if (m.cmd === 'counts') process.send!({ counts });
    if (m.cmd === 'stop') server.close(() => process.exit(0));
  });
  server.listen(0, '127.0.0.1', () => process.send!({ ready: (server.address() as { port: number }).port }));
}

interface Sink {
  url: (path: string) => string;
  count: (path: string) => Promise<number>;
  child: ChildProcess;
}

/** The sink in a process of its own, so answering the rpc route never waits on this (busy) process. */
async function startSink(): Promise<Sink> {
  const c = await startChild('sink', { [SINK_ENV]: '1' });
  return {
    url: (path) => `http://127.0.0.1:${c.port}/${path}`,
    count: (path) =>
      new Promise((resolve) => {
        const on = (m: { counts?: Record<string, number> }): void => {
          if (m.counts === undefined) return;
          c.child.off('message', on);
          resolve(m.counts[`/${path}`] ?? 0);
        };
        c.child.on('message', on);
        c.child.send({ cmd: 'counts' });
      }),
    child: c.child,
  };
}

async function perCore(cluster: TpuCluster): Promise<BenchResult[]> {
  const sink = await startSink();
  const sender = await ensureTpuBinary(SENDER_BIN);
  const common = { BENCH_TPU_CHAIN: cluster.chain.httpUrl, BENCH_TPU_SENDER: sender, BENCH_TPU_TIPS: TIP_ACCOUNTS.map((k) => k.toBase58()).join(',') };
  const children: Child[] = [];
  const paths = new Map<string, string>();
  try {
    for (const [name, env] of [
      ['rpc', { BENCH_TPU_ROUTES: 'rpc' }],
      // BENCH_TPU_AA=1: this child runs routes rpc too (an A/A run: the spread two identical children show).
      ['rpc+tpu', { BENCH_TPU_ROUTES: process.env.BENCH_TPU_AA === '1' ? 'rpc' : 'rpc,tpu' }],
      ['rpc, traces off', { BENCH_TPU_ROUTES: 'rpc', BENCH_TPU_TRACES: 'off' }],
    ] as const) {
      const path = `c${children.length}`;
      paths.set(name, path);
      children.push(await startChild(name, { ...common, ...env, BENCH_TPU_SINK: sink.url(path) }));
    }
    const payers = Array.from({ length: 64 }, () => Keypair.generate());
    const reqs = Array.from({ length: 2_000 }, (_, i) => {
      const tx = legacyTx({ payer: payers[i % payers.length]!, amount: 1000 + i });
      return Buffer.concat([Buffer.from(`POST /binary?api-key=${API_KEY} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/octet-stream\r\nContent-Length: ${tx.length}\r\n\r\n`, 'latin1'), tx]);
    });
    for (const c of children) await httpLoad(c.port, reqs, 1); // warm-up, not measured
    const runs = new Map<string, Array<{ self: number; tree: number; wall: number }>>();
    const notAccepted = new Map<string, number>();
    for (let round = 0; round < CORE_ROUNDS; round++) {
      for (let k = 0; k < children.length; k++) {
        const c = children[(k + round) % children.length]!;
        const a = await ask(c.child);
        const ca = treeCpuSeconds(c.child.pid!);
        const t0 = performance.now();
        const answers = await httpLoad(c.port, reqs, SECONDS);
        const wall = (performance.now() - t0) / 1000;
        const b = await ask(c.child);
        const n = b.accepted - a.accepted;
        // The phase ends once the rpc route has forwarded what it accepted (its cost inside the measurement).
        const path = paths.get(c.name)!;
        const due = b.accepted;
        await waitFor(async () => (await sink.count(path)) >= due, 30_000, 'the rpc route to forward what was accepted', 20);
        const cb = treeCpuSeconds(c.child.pid!);
        if (answers.other > 0) notAccepted.set(c.name, (notAccepted.get(c.name) ?? 0) + answers.other);
        const list = runs.get(c.name) ?? [];
        list.push({ self: n / (cb.self - ca.self), tree: n / (cb.tree - ca.tree), wall: n / wall });
        runs.set(c.name, list);
      }
    }
    const mean = (xs: number[]): number => xs.reduce((x, y) => x + y, 0) / xs.length;
    const fig = (name: string): { self: number; tree: number; wall: number; list: string } => {
      const l = runs.get(name)!;
      return { self: mean(l.map((x) => x.self)), tree: mean(l.map((x) => x.tree)), wall: mean(l.map((x) => x.wall)), list: l.map((x) => Math.round(x.self)).join(', ') };
    };
    const off = fig('rpc');
    const on = fig('rpc+tpu');
    const noTraces = fig('rpc, traces off');
    const refused = notAccepted.size === 0 ? 'every request accepted' : `not accepted: ${JSON.stringify(Object.fromEntries(notAccepted))}`;
    return [
      { bench: 'tpu', case: 'reference: /binary per core, tpu off (routes rpc), traces on', figures: { per_core_s: Math.round(off.self), with_children_s: Math.round(off.tree), per_wall_s: Math.round(off.wall) }, note: `runs ${off.list}/s (per core of the service process), interleaved with the rows below; ${refused}` },
      { bench: 'tpu', case: '/binary per core, tpu on (routes rpc + tpu), traces on', figures: { per_core_s: Math.round(on.self), with_children_s: Math.round(on.tree), per_wall_s: Math.round(on.wall), vs_ref: on.self / off.self }, note: `runs ${on.list}/s; every accepted tx also to 2 leaders' TPU through the sender; counting the sender's CPU too (a child of the service): ${(on.tree / off.tree).toFixed(2)}× off; aim ≥ 0.9× off` },
      { bench: 'tpu', case: 'reference: /binary per core, traces off (routes rpc)', figures: { per_core_s: Math.round(noTraces.self), per_wall_s: Math.round(noTraces.wall) }, note: `runs ${noTraces.list}/s` },
      { bench: 'tpu', case: '/binary per core, traces on (routes rpc: the first row)', figures: { per_core_s: Math.round(off.self), vs_ref: off.self / noTraces.self }, note: 'aim ≥ 0.95× traces off; the status poller polls a port with nothing listening, as in bench/submit.ts' },
    ];
  } finally {
    for (const c of children) await stopChild(c.child);
    await stopChild(sink.child);
  }
}

// ---------------------------------------------------------------- the bench
export async function benchTpu(): Promise<BenchResult[]> {
  await ensureTpuBinary(SENDER_BIN);
  await ensureTpuBinary(LEADER_BIN);
  const { log } = quietLog('warn');
  const bus = new EmbeddedBus({ log });
  const topics = { transactions: 'b-tx', slots: 'b-slots', traces: 'b-traces' };
  await bus.createTopics(Object.values(topics).map((name) => ({ name, partitions: 1, compacted: false })));
  const ingest = await startIngest(parseIngestConfig({ listen: '127.0.0.1:0', shredVersion: 'any', leader: { mode: 'off' } }), bus, log, { registry: new Registry(), topics: { transactions: topics.transactions, slots: topics.slots } });
  const cluster = await startTpuCluster({ leaders: 4, port: 0, slotMs: 100, shredTo: `${ingest.address.host}:${ingest.address.port}`, log, lossRelay: { loss: 0, seed: SEED } });
  const mine = rental({ tps: 100_000, rps: 100_000 });
  const key = mine.apiKeys[0]!;
  const services = new Map<string, SubmitService>();
  try {
    for (const routes of CONFIGS) {
      const name = label(routes);
      const cfg = parseSubmitConfig({
        enabled: true,
        listen: '127.0.0.1:0',
        udp: { enabled: false },
        tips: { accounts: TIP_ACCOUNTS.map((k) => k.toBase58()), minLamports: MIN_TIP },
        forwardUrls: [cluster.chain.httpUrl],
        routes: [...routes],
        topics: { ...topics, traces: `b-traces-${name}` },
        traces: { pollIntervalMs: 100, statusUrl: cluster.chain.httpUrl, commitment: 'processed' },
      });
      services.set(name, await startSubmit(cfg, { bus, rentals: rentalsFromList([mine]), log, registry: new Registry() }));
    }
    await waitFor(() => [...services.values()].every((s) => (s.tpu === undefined || s.tpu.targets() !== null) && s.tracing?.store.currentSlot !== null), 20_000, 'slots and schedule');
    // BENCH_TPU_PARTS=core: only the per-core part (landing=only the landing part).
    const parts = process.env.BENCH_TPU_PARTS ?? 'landing,core';
    const results = parts.includes('landing') ? await landing(cluster, services, key) : [];
    for (const s of services.values()) await s.close();
    services.clear();
    if (parts.includes('core')) results.push(...(await perCore(cluster)));
    return results;
  } finally {
    for (const s of services.values()) await s.close();
    await cluster.close();
    await ingest.close();
    await bus.close();
  }
}

if (process.env[CHILD_ENV] === '1' && require.main === module) {
  if (process.env[SINK_ENV] === '1') sinkServe();
  else void serve();
} else if (require.main === module) {
  void (async () => {
    const { formatResults } = await import('./stats');
    try {
      console.log(formatResults('tpu route on the local multi-leader cluster', await benchTpu()));
      process.exit(0);
    } catch (e) {
      console.error(e);
      process.exit(1);
    }
  })();
}
