import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { Upstream } from '../../gateways/core/upstream';
import { goAvailable, HttpLoad, targetOf } from './httpload';
import { fmt, summarize, type BenchResult } from './stats';

// The chain gateway against calling the same upstream (the local chain node) directly, in one run, every variant
// of the gateway in a process of its own and all of them measured in the same stretch of time (interleaved()):
//   [A] as deployed (metering and usage events on), [B] the same with fleet-wide limits on (gateways.rpc.fleet: the
//   usage exchange on the gateway's bus), [C] usage events off, [R] a bare node:http + undici proxy (no gateway
//   logic: what the extra hop alone costs on this machine), and with RPC_BENCH_BASELINE=<dist of another build>
//   [base], that build as deployed;
//   - latency: rounds of one request directly and one through each variant (first of a round rotating), over one
//     keep-alive connection each; added p50/p99 = variant pNN − direct pNN, paired_added_p99 = p99 over the rounds
//     of (variant − direct);
//   - throughput: 32 connections × 1 in flight, after an unmeasured warm-up phase of each, phases of THRU_MS per
//     variant in palindromes (A B C R R C B A, THRU_ROUNDS times); the variant's own CPU over its phases gives
//     requests/s per core;
//   - for a cheap method (getHealth) and a batch of 10 of it; the rows B ÷ A (fleet limits) and A ÷ C (usage
//     events) are the figures the issue asks for, each beside its same-run reference;
//   - WebSocket: slotSubscribe directly and through [A] at once; for each slot, the arrival-time difference of the
//     same notification (gateway − direct).
// The load comes from a compiled client (test/bench/httpload, Go, raw HTTP/1.1; RPC_BENCH_CLIENT=node for undici in
// this process): its CPU per request is printed beside the gateway's and is a fraction of it, so the figures are
// the gateway's. Node, gateways and client share the machine, so absolute throughput is bounded by the node.

const LAT_N = Number(process.env.RPC_BENCH_LAT_N ?? 10_000);
const LAT_WARMUP = Number(process.env.RPC_BENCH_LAT_WARMUP ?? 3_000);
const THRU_MS = Number(process.env.RPC_BENCH_THRU_MS ?? 1_000);
/** Palindromes of throughput phases per body (each variant gets 2 phases per round). */
const THRU_ROUNDS = Number(process.env.RPC_BENCH_THRU_ROUNDS ?? 4);
const WS_MS = Number(process.env.RPC_BENCH_WS_MS ?? 8_000); // ~160 notifications at 50 ms slots: p99 is not just the maximum
const CONCURRENCY = 32;

interface Child {
  proc: ChildProcess;
  http: string;
  ws: string;
  cpu(): Promise<{ usage: NodeJS.CpuUsage; events: number; skipped: number }>;
  close(): Promise<void>;
}

function startChild(env: Record<string, string>): Promise<Child> {
  const compiled = __filename.endsWith('.js');
  const file = env.RPC_BENCH_CHILD ?? path.join(__dirname, compiled ? 'rpc-child.js' : 'rpc-child.ts');
  const proc = fork(file, [], {
    execArgv: file.endsWith('.js') ? [] : ['-r', 'ts-node/register/transpile-only'],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = (type: string): Promise<any> =>
    new Promise((resolve, reject) => {
      const onExit = (c: number | null): void => reject(new Error(`bench child exited ${c}`));
      const onMsg = (m: any): void => {
        if (m.type === type || m.type === 'error') {
          proc.off('message', onMsg);
          proc.off('exit', onExit);
          if (m.type === 'error') reject(new Error(m.message));
          else resolve(m);
        }
      };
      proc.on('message', onMsg);
      proc.once('exit', onExit);
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

const BODIES: ReadonlyArray<readonly [string, Buffer]> = [['getHealth', CHEAP], ['batch of 10 getHealth', BATCH]];

/** One gateway build or setting under test, in a process of its own. */
interface Variant {
  key: string;
  label: string;
  child: Child;
}

interface VariantFigures {
  added_p50_ms: number;
  added_p99_ms: number;
  paired_added_p99_ms: number;
  req_s: number;
  cpu_pct: number;
  req_s_per_core: number;
  /** The load client's CPU per request beside the gateway's: the client must be the cheaper. */
  client_us_per_req: number;
  server_us_per_req: number;
  /** Requests per CPU-second of each round (a palindrome) alone, for the spread of a ratio between variants. */
  perCoreByRound: number[];
}

/**
 * Every variant measured in the same stretch of time, so a burst of another process lands on all of them:
 *   - latency: rounds of one request to the node directly and one to each variant, one at a time over one
 *     keep-alive connection each, the first of a round rotating (LAT_WARMUP rounds of warm-up, then LAT_N);
 *   - throughput: phases of THRU_MS against one variant at a time in palindromes (A B C D D C B A, THRU_ROUNDS of
 *     them: every variant's phases have the same mean position in a round, so a drift of the machine's speed
 *     cancels), the variant's own CPU read before and after each phase.
 */
async function interleaved(load: ClientDriver, chainUrl: string, variants: Variant[], body: Buffer): Promise<{ figures: Map<string, VariantFigures>; direct: { p50: number; p99: number; req_s: number }; warmupNote: string }> {
  const targets = [chainUrl, ...variants.map((v) => v.child.http)];
  const warm = await load.lat(targets, body, LAT_WARMUP);
  const steady = await load.lat(targets, body, LAT_N);
  const d = summarize(steady[0]!);
  const dt = await load.thru(chainUrl, body, THRU_MS);
  const acc = new Map(variants.map((v) => [v.key, { n: 0, wallMs: 0, cpuMs: 0, clientMs: 0, rounds: Array.from({ length: THRU_ROUNDS }, () => ({ n: 0, cpuMs: 0 })) }]));
  // Unmeasured: every variant's code for this body compiled under load before any phase counts.
  for (const v of variants) await load.thru(v.child.http, body, Math.max(1_000, THRU_MS));
  const palindrome = [...variants, ...[...variants].reverse()];
  const order = Array.from({ length: THRU_ROUNDS }, (_r, round) => palindrome.map((v) => ({ v, round }))).flat();
  for (const { v, round } of order) {
    const c0 = (await v.child.cpu()).usage;
    const t = await load.thru(v.child.http, body, THRU_MS);
    const c1 = (await v.child.cpu()).usage;
    const a = acc.get(v.key)!;
    a.n += t.ok;
    a.wallMs += t.wallMs;
    const cpuMs = (c1.user - c0.user + c1.system - c0.system) / 1000;
    a.cpuMs += cpuMs;
    a.clientMs += t.cpuMs;
    a.rounds[round]!.n += t.ok;
    a.rounds[round]!.cpuMs += cpuMs;
  }
  const figures = new Map<string, VariantFigures>();
  variants.forEach((v, i) => {
    const g = summarize(steady[i + 1]!);
    const paired = steady[i + 1]!.map((x, r) => x - steady[0]![r]!);
    const a = acc.get(v.key)!;
    const cpuPct = (a.cpuMs / a.wallMs) * 100;
    figures.set(v.key, {
      added_p50_ms: g.p50 - d.p50,
      added_p99_ms: g.p99 - d.p99,
      paired_added_p99_ms: summarize(paired).p99,
      req_s: (a.n / a.wallMs) * 1000,
      cpu_pct: cpuPct,
      req_s_per_core: (a.n / a.cpuMs) * 1000,
      client_us_per_req: (a.clientMs * 1000) / a.n,
      server_us_per_req: (a.cpuMs * 1000) / a.n,
      perCoreByRound: a.rounds.map((r) => (r.n / r.cpuMs) * 1000),
    });
  });
  const wd = summarize(warm[0]!);
  const warmupNote = `warm-up (${fmt(LAT_WARMUP)} rounds before): direct p99 ${fmt(wd.p99)} ms, ${variants.map((v, i) => `${v.key} p99 ${fmt(summarize(warm[i + 1]!).p99)}`).join(', ')}`;
  return { figures, direct: { p50: d.p50, p99: d.p99, req_s: (dt.ok / dt.wallMs) * 1000 }, warmupNote };
}

/** What drives the load: the compiled client (default when Go is on PATH), or undici in this process. */
interface ClientDriver {
  name: string;
  lat(urls: string[], body: Buffer, n: number): Promise<Float64Array[]>;
  thru(url: string, body: Buffer, ms: number): Promise<{ ok: number; wallMs: number; cpuMs: number }>;
  close(): Promise<void>;
}

async function goDriver(): Promise<ClientDriver> {
  const load = await HttpLoad.start();
  return {
    name: 'compiled load client (test/bench/httpload, Go, raw HTTP/1.1 keep-alive)',
    lat: async (urls, body, n) => (await load.lat(urls.map(targetOf), body, n)).ms,
    thru: async (url, body, ms) => {
      const t = await load.thru(targetOf(url), body, ms, CONCURRENCY);
      if (t.failed > 0) throw new Error(`${t.failed} requests failed during the throughput run`);
      return t;
    },
    close: () => load.close(),
  };
}

function nodeDriver(): ClientDriver {
  return {
    name: 'undici in the bench process (RPC_BENCH_CLIENT=node)',
    lat: async (urls, body, n) => {
      const cs = urls.map((u) => client(u, 1));
      const out = urls.map(() => new Float64Array(n));
      for (let r = 0; r < n; r++) {
        for (let j = 0; j < cs.length; j++) {
          const t = (r + j) % cs.length;
          const t0 = performance.now();
          const res = await cs[t]!.post(body);
          out[t]![r] = performance.now() - t0;
          if (!res.ok || res.status !== 200) throw new Error('bench request failed');
        }
      }
      await Promise.all(cs.map((c) => c.close()));
      return out;
    },
    thru: async (url, body, ms) => {
      const c = client(url, CONCURRENCY);
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const end = t0 + ms;
      let ok = 0;
      let failed = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (performance.now() < end) {
            const r = await c.post(body);
            if (r.ok && r.status === 200) ok++;
            else failed++;
          }
        }),
      );
      const wallMs = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      await c.close();
      if (failed > 0) throw new Error(`${failed} requests failed during the throughput run`);
      return { ok, wallMs, cpuMs: (cpu.user + cpu.system) / 1000 };
    },
    close: async () => {},
  };
}

const ratio = (a: number, b: number): number => a / b;

/** The per-core ratio round by round: "rounds 0.91–1.02 (median 0.97)". */
function spread(x: VariantFigures, y: VariantFigures): string {
  const r = x.perCoreByRound.map((v, i) => v / y.perCoreByRound[i]!).sort((a, b) => a - b);
  const med = r.length % 2 === 1 ? r[(r.length - 1) / 2]! : (r[r.length / 2 - 1]! + r[r.length / 2]!) / 2;
  return `per-core ratio by round ${fmt(r[0]!)}–${fmt(r[r.length - 1]!)} (median ${fmt(med)}, ${r.length} rounds)`;
}

export async function benchRpc(): Promise<BenchResult[]> {
  const want = process.env.RPC_BENCH_CLIENT ?? (goAvailable() === null ? 'node' : 'go');
  const load = want === 'go' ? await goDriver() : nodeDriver();
  const load0 = os.loadavg();
  const chain = await startChild({ RPC_BENCH_ROLE: 'chain', RPC_BENCH_SLOT_MS: '50' });
  const upstream = JSON.stringify({ http: chain.http, ws: chain.ws });
  const children: Child[] = [];
  const out: BenchResult[] = [];
  try {
    const start = async (key: string, label: string, env: Record<string, string>): Promise<Variant> => {
      const child = await startChild({ RPC_BENCH_UPSTREAM: upstream, ...env });
      children.push(child);
      return { key, label, child };
    };
    // A: the gateway as deployed (metering and usage events on, produced to an embedded bus in its process);
    // B: the same with fleet-wide limits on (the usage exchange on its bus); C: usage events off; R: a bare
    // node:http + undici proxy (no gateway logic: what the extra hop alone costs on this machine). All four run at
    // once, idle but for the one under load.
    const variants = [
      await start('A', 'gateway: metering + usage events (as deployed)', { RPC_BENCH_ROLE: 'gateway' }),
      await start('B', 'gateway: fleet limits on', { RPC_BENCH_ROLE: 'gateway', RPC_BENCH_FLEET: '1' }),
      await start('C', 'gateway: usage events off', { RPC_BENCH_ROLE: 'gateway', RPC_BENCH_NO_USAGE: '1' }),
      await start('R', 'bare proxy (reference)', { RPC_BENCH_ROLE: 'bare' }),
    ];
    if (process.env.RPC_BENCH_BASELINE !== undefined) {
      // A build from before (its dist/test/bench/rpc-child.js), as deployed, interleaved with the rest.
      variants.push(await start('base', `gateway as deployed, build ${process.env.RPC_BENCH_BASELINE_NAME ?? 'before'}`, { RPC_BENCH_ROLE: 'gateway', RPC_BENCH_CHILD: path.join(process.env.RPC_BENCH_BASELINE, 'test', 'bench', 'rpc-child.js') }));
    }
    for (const [name, body] of BODIES) {
      const { figures, direct, warmupNote } = await interleaved(load, chain.http, variants, body);
      for (const v of variants) {
        const f = figures.get(v.key)!;
        const { perCoreByRound: _rounds, ...shown } = f;
        out.push({ bench: 'rpc', case: `${name}: [${v.key}] ${v.label}`, figures: { ...shown } });
      }
      const A = figures.get('A')!;
      const B = figures.get('B')!;
      const C = figures.get('C')!;
      out.push({
        bench: 'rpc',
        case: `${name}: fleet limits on ÷ off (B ÷ A)`,
        figures: { per_core_ratio: ratio(B.req_s_per_core, A.req_s_per_core), req_s_ratio: ratio(B.req_s, A.req_s), added_p99_ratio: ratio(B.added_p99_ms, A.added_p99_ms), paired_added_p99_ratio: ratio(B.paired_added_p99_ms, A.paired_added_p99_ms) },
        note: `${spread(B, A)}; aim: per core ≥ 0.9×, added p99 within 10%. Direct to the node in the same run: p50 ${fmt(direct.p50)} ms, p99 ${fmt(direct.p99)} ms, ${fmt(direct.req_s)} req/s; ${warmupNote}`,
      });
      out.push({
        bench: 'rpc',
        case: `${name}: usage events on ÷ off (A ÷ C)`,
        figures: { per_core_ratio: ratio(A.req_s_per_core, C.req_s_per_core), req_s_ratio: ratio(A.req_s, C.req_s), added_p99_ratio: ratio(A.added_p99_ms, C.added_p99_ms), paired_added_p99_ratio: ratio(A.paired_added_p99_ms, C.paired_added_p99_ms) },
        note: `${spread(A, C)}${name.startsWith('batch') ? '; aim: per core ≥ 0.8× (0.44× before usage events were one per method and request)' : ''}`,
      });
      const base = figures.get('base');
      if (base !== undefined) {
        out.push({ bench: 'rpc', case: `${name}: this build ÷ the build before, as deployed (A ÷ base)`, figures: { per_core_ratio: ratio(A.req_s_per_core, base.req_s_per_core), req_s_ratio: ratio(A.req_s, base.req_s), added_p99_ratio: ratio(A.added_p99_ms, base.added_p99_ms) }, note: spread(A, base) });
      }
    }
    const gw = variants[0]!.child;
    const ws = summarize(await wsLatency(chain.ws, gw.ws));
    out.push({
      bench: 'rpc',
      case: 'WS slotNotification, gateway − direct',
      figures: { added_p50_ms: ws.p50, added_p99_ms: ws.p99, notifications: ws.count },
      note: ws.count < 20 ? `only ${ws.count} notifications paired` : undefined,
    });
    const { events, skipped } = await gw.cpu();
    const load1 = os.loadavg();
    out[0]!.note = `load: ${load.name}, ${CONCURRENCY} connections × 1 in flight, ${THRU_MS} ms phases in ${THRU_ROUNDS} palindromes, ${fmt(LAT_N)} latency rounds; usage events of [A] read back from its bus: ${fmt(events)} (${fmt(skipped)} lost to retention); node, gateways and load client share this machine's ${os.cpus().length} cores, 1-min load average ${load0[0]!.toFixed(1)} at the start, ${load1[0]!.toFixed(1)} at the end`;
  } finally {
    for (const c of children) await c.close();
    await chain.close();
    await load.close();
  }
  return out;
}
