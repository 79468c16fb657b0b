import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import WebSocket from 'ws';
import { Upstream } from '../../gateways/core/upstream';
import { fmt, summarize, type BenchResult } from './stats';

// The chain gateway against calling the same upstream (the local chain node) directly, in one run:
//   - latency: one request at a time over one keep-alive connection each, direct and through the gateway
//     interleaved one by one (20,000 pairs after 5,000 of warm-up, so p99 rests on the 200 slowest of each;
//     the warm-up's own p99 is in the row's note);
//     added p50/p99 = gateway pNN − direct pNN, and paired_added_p99 = p99 over the pairs of (gateway − direct);
//   - throughput: 64 requests in flight over 32 keep-alive connections for a few seconds; the gateway's own
//     CPU (it runs in its own process) gives requests/s per core of the gateway;
//   - for a cheap method (getHealth) and a batch of 10 of it, with metering and usage events on; beside it, the
//     same with fleet-wide limits on (gateways.rpc.fleet: the usage exchange on the gateway's bus); as
//     references, once more with usage events off, and getHealth through a bare proxy (node:http + undici, no
//     gateway logic: what the extra hop alone costs on this machine);
//   - WebSocket: slotSubscribe directly and through the gateway at once; for each slot, the arrival-time
//     difference of the same notification (gateway − direct).
// The node, the gateway and the load generator (this process, a bare undici dispatch loop) are three processes
// on the same 2 cores, so absolute throughput is bounded by the node; added latency and per-core figures are the
// gateway's. Interleaving matters: alternating in blocks of 100 gave each side its own stretch of time, so a
// burst of another process (or a block the node produced) landed on whichever side owned that stretch.

const LAT_N = Number(process.env.RPC_BENCH_LAT_N ?? 20_000);
const LAT_WARMUP = Number(process.env.RPC_BENCH_LAT_WARMUP ?? 5_000);
const THRU_MS = Number(process.env.RPC_BENCH_THRU_MS ?? 3_000);
const WS_MS = Number(process.env.RPC_BENCH_WS_MS ?? 8_000); // ~160 notifications at 50 ms slots: p99 is not just the maximum
const CONCURRENCY = 64;

interface Child {
  proc: ChildProcess;
  http: string;
  ws: string;
  cpu(): Promise<{ usage: NodeJS.CpuUsage; events: number; skipped: number }>;
  close(): Promise<void>;
}

function startChild(env: Record<string, string>): Promise<Child> {
  const compiled = __filename.endsWith('.js');
  const proc = fork(path.join(__dirname, compiled ? 'rpc-child.js' : 'rpc-child.ts'), [], {
    execArgv: compiled ? [] : ['-r', 'ts-node/register/transpile-only'],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = (type: string): Promise<any> =>
    new Promise((resolve, reject) => {
      const onMsg = (m: any): void => {
        if (m.type === type || m.type === 'error') {
          proc.off('message', onMsg);
          if (m.type === 'error') reject(new Error(m.message));
          else resolve(m);
        }
      };
      proc.on('message', onMsg);
      proc.once('exit', (c) => reject(new Error(`bench child exited ${c}`)));
    });
  return next('ready').then((r: { http: string; ws: string }) => ({
    proc,
    http: r.http,
    ws: r.ws,
    cpu: () => {
      const p = next('cpu');
      proc.send({ type: 'cpu' });
      return p;
    },
    close: async () => {
      if (proc.exitCode !== null) return;
      const exited = new Promise<void>((r) => proc.once('exit', () => r()));
      proc.send({ type: 'close' });
      const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
  }));
}

const CHEAP = Buffer.from('{"jsonrpc":"2.0","id":1,"method":"getHealth"}');
const BATCH = Buffer.from(JSON.stringify(Array.from({ length: 10 }, (_v, i) => ({ jsonrpc: '2.0', id: i, method: 'getHealth' }))));

function client(url: string, connections: number): Upstream {
  return new Upstream(0, { http: url }, { connections, timeoutMs: 10_000, maxResponseBytes: 1 << 20, keepAliveMs: 30_000 });
}

interface Samples {
  d: Float64Array;
  g: Float64Array;
  /** gateway − direct, pair by pair. */
  paired: Float64Array;
}

/**
 * Direct and gateway requests interleaved one by one (which goes first alternates per pair), so both sides
 * meet the same machine: another process's burst, a block the node produces, a scheduler hiccup land on
 * neighbouring samples of both, not on whichever side happened to own a block of 100.
 */
async function pairs(direct: Upstream, gw: Upstream, body: Buffer, n: number): Promise<Samples> {
  const d = new Float64Array(n);
  const g = new Float64Array(n);
  const paired = new Float64Array(n);
  const once = async (c: Upstream): Promise<number> => {
    const t0 = performance.now();
    const r = await c.post(body);
    const t = performance.now() - t0;
    if (!r.ok || r.status !== 200) throw new Error(`bench request failed: ${JSON.stringify(r.ok ? r.status : r.why)}`);
    return t;
  };
  for (let i = 0; i < n; i++) {
    if ((i & 1) === 0) {
      d[i] = await once(direct);
      g[i] = await once(gw);
    } else {
      g[i] = await once(gw);
      d[i] = await once(direct);
    }
    paired[i] = g[i]! - d[i]!;
  }
  return { d, g, paired };
}

/**
 * The steady state after a fixed warm-up, and the warm-up itself (reported, not hidden): a just-started
 * process spends its first ~2 s compiling (V8 optimised ~470 functions of the gateway and its libraries in the
 * first 4,000 pairs, on the same 2 cores), and the p99 of those pairs is several times the steady one.
 */
async function latency(direct: Upstream, gw: Upstream, body: Buffer): Promise<{ warmup: Samples; steady: Samples }> {
  const warmup = await pairs(direct, gw, body, LAT_WARMUP);
  return { warmup, steady: await pairs(direct, gw, body, LAT_N) };
}

async function throughput(c: Upstream, body: Buffer, gwChild?: Child): Promise<{ rps: number; cpuPct: number }> {
  const cpu0 = gwChild === undefined ? undefined : (await gwChild.cpu()).usage;
  const t0 = performance.now();
  const end = t0 + THRU_MS;
  let n = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const r = await c.post(body);
        if (r.ok && r.status === 200) n++;
        else failed++;
      }
    }),
  );
  const wall = performance.now() - t0;
  let cpuPct = NaN;
  if (gwChild !== undefined && cpu0 !== undefined) {
    const u = (await gwChild.cpu()).usage;
    cpuPct = ((u.user - cpu0.user + u.system - cpu0.system) / 1000 / wall) * 100;
  }
  if (failed > 0) throw new Error(`${failed} requests failed during the throughput run`);
  return { rps: (n / wall) * 1000, cpuPct };
}

async function wsLatency(directUrl: string, gwUrl: string): Promise<number[]> {
  const open = (u: string): Promise<WebSocket> => new Promise((res, rej) => {
    const w = new WebSocket(u);
    w.once('open', () => res(w));
    w.once('error', rej);
  });
  const [d, g] = await Promise.all([open(directUrl), open(gwUrl)]);
  const seen = new Map<number, number>();
  const added: number[] = [];
  const onMsg = (which: 'd' | 'g') => (data: WebSocket.RawData): void => {
    const t = performance.now();
    const m = JSON.parse(data.toString()) as { method?: string; params?: { result?: { slot?: number } } };
    const slot = m.params?.result?.slot;
    if (m.method !== 'slotNotification' || slot === undefined) return;
    const key = which === 'd' ? slot : -slot - 1;
    const other = which === 'd' ? -slot - 1 : slot;
    const o = seen.get(other);
    if (o === undefined) seen.set(key, t);
    else {
      seen.delete(other);
      added.push(which === 'g' ? t - o : o - t);
    }
  };
  d.on('message', onMsg('d'));
  g.on('message', onMsg('g'));
  const sub = '{"jsonrpc":"2.0","id":1,"method":"slotSubscribe"}';
  d.send(sub);
  g.send(sub);
  await new Promise((r) => setTimeout(r, WS_MS));
  d.close();
  g.close();
  return added;
}

const BOTH: ReadonlyArray<readonly [string, Buffer]> = [['getHealth', CHEAP], ['batch of 10 getHealth', BATCH]];

async function httpCases(chainUrl: string, gwc: Child, label: string, cases = BOTH): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  for (const [name, body] of cases) {
    const d1 = client(chainUrl, 1);
    const g1 = client(gwc.http, 1);
    const { warmup, steady } = await latency(d1, g1, body);
    const { d, g, paired } = steady;
    await d1.close();
    await g1.close();
    const sd = summarize(d);
    const sg = summarize(g);
    const sp = summarize(paired);
    const dN = client(chainUrl, 32);
    const gN = client(gwc.http, 32);
    const td = await throughput(dN, body);
    const tg = await throughput(gN, body, gwc);
    await dN.close();
    await gN.close();
    out.push({
      bench: 'rpc',
      case: `${name}${label}`,
      figures: {
        direct_p50_ms: sd.p50,
        gateway_p50_ms: sg.p50,
        added_p50_ms: sg.p50 - sd.p50,
        direct_p99_ms: sd.p99,
        gateway_p99_ms: sg.p99,
        added_p99_ms: sg.p99 - sd.p99,
        paired_added_p99_ms: sp.p99,
        direct_req_s: td.rps,
        gateway_req_s: tg.rps,
        gateway_cpu_pct: tg.cpuPct,
        gateway_req_s_per_core: tg.rps / (tg.cpuPct / 100),
      },
      note: `warm-up, the ${fmt(LAT_WARMUP)} pairs before these: direct p99 ${fmt(summarize(warmup.d).p99)} ms, gateway p99 ${fmt(summarize(warmup.g).p99)} ms`,
    });
  }
  return out;
}

export async function benchRpc(): Promise<BenchResult[]> {
  const chain = await startChild({ RPC_BENCH_ROLE: 'chain', RPC_BENCH_SLOT_MS: '50' });
  const upstream = JSON.stringify({ http: chain.http, ws: chain.ws });
  let gwc: Child | undefined;
  let noUsage: Child | undefined;
  let fleet: Child | undefined;
  let bare: Child | undefined;
  const out: BenchResult[] = [];
  try {
    // The gateway as deployed: metering and usage events on (produced to an embedded bus in its process).
    gwc = await startChild({ RPC_BENCH_ROLE: 'gateway', RPC_BENCH_UPSTREAM: upstream });
    out.push(...(await httpCases(chain.http, gwc, '')));
    const ws = summarize(await wsLatency(chain.ws, gwc.ws));
    out.push({
      bench: 'rpc',
      case: 'WS slotNotification, gateway − direct',
      figures: { added_p50_ms: ws.p50, added_p99_ms: ws.p99, notifications: ws.count },
      note: ws.count < 20 ? `only ${ws.count} notifications paired` : undefined,
    });
    const { events, skipped } = await gwc.cpu();
    await gwc.close();
    out[0]!.note += `; usage events produced by the gateway and read back from its bus during the run: ${fmt(events)} (${fmt(skipped)} lost to retention); node, gateway and load generator share 2 cores`;
    // The same gateway with fleet-wide limits on (the usage exchange on its bus), beside the run above.
    fleet = await startChild({ RPC_BENCH_ROLE: 'gateway', RPC_BENCH_UPSTREAM: upstream, RPC_BENCH_FLEET: '1' });
    out.push(...(await httpCases(chain.http, fleet, ' (fleet limits on)')));
    await fleet.close();
    // Reference: the same gateway with usage events off (metering on), to show what producing them costs.
    noUsage = await startChild({ RPC_BENCH_ROLE: 'gateway', RPC_BENCH_UPSTREAM: upstream, RPC_BENCH_NO_USAGE: '1' });
    out.push(...(await httpCases(chain.http, noUsage, ' (reference: usage events off)')));
    await noUsage.close();
    // Reference: the extra hop alone (a bare node:http + undici proxy in its own process).
    bare = await startChild({ RPC_BENCH_ROLE: 'bare', RPC_BENCH_UPSTREAM: upstream });
    out.push(...(await httpCases(chain.http, bare, ' (reference: bare proxy, no gateway logic)', [BOTH[0]!])));
  } finally {
    await gwc?.close();
    await noUsage?.close();
    await fleet?.close();
    await bare?.close();
    await chain.close();
  }
  return out;
}
