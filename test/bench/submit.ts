import { fork, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import dgram from 'node:dgram';
import http from 'node:http';
import net from 'node:net';
import bs58 from 'bs58';
import { Keypair } from '@solana/web3.js';
import { parseEmbeddedLimits } from '../../bus/config';
import { EmbeddedBus } from '../../bus/embedded';
import { rentalsFromList } from '../../bus/rental-registry';
import { EventProducer } from '../../bus/event-producer';
import { TOPIC, defaultTopicSpecs } from '../../bus/topics';
import { encodeTraceEvent, type TraceEvent } from '../../bus/topics/submit-traces';
import { UsageProducer } from '../../bus/usage-producer';
import { uuidToRaw } from '../../gateways/submit/api-key';
import { parseSubmitConfig } from '../../gateways/submit/config';
import type { ForwardOpening, Forwarder } from '../../gateways/submit/forwarder';
import { SubmitMetrics } from '../../gateways/submit/metrics';
import { SubmitPipeline } from '../../gateways/submit/pipeline';
import { startSubmit } from '../../gateways/submit/service';
import { tipRule } from '../../gateways/submit/tip';
import { createLogger } from '../../infra/base/log';
import { Registry } from '../../infra/base/metrics';
import { decodeTransaction } from '../../proto/txn/decode';
import { legacyTx, MIN_TIP, TIP_ACCOUNTS } from '../gateways/submit/support';
import type { BenchResult } from './stats';

// Submission on one core. The service runs in a child process with everything on (API key lookup, rate limit,
// size, parse, signature verification, tip rule, signature cache, usage events on an embedded bus) and a sink
// Forwarder (counts, sends nothing), so the figures are the service's own cost. Load comes from this process:
// pre-built raw HTTP/1.1 requests pipelined over a few keep-alive sockets (no HTTP client library), and pre-built
// UDP datagrams — far cheaper per request than the server's work. "Per core" = accepted transactions divided by
// the child's CPU seconds (user + system) over the phase, so other load on the machine does not skew it.
// Same-run references: bare ed25519 verifications/s (crypto.verify with a cached KeyObject over the very same
// messages; taken right before and after every phase, as this shared machine's speed drifts) and the pipeline
// called directly (no transport), both on one core in this process.
// BENCH_SUBMIT_SECONDS sets each phase's length (default 3).

const SECONDS = Number(process.env.BENCH_SUBMIT_SECONDS ?? 3);
/** Bare verification measured right before and after each phase, seconds each. */
const BARE_AROUND_S = 1.5;
const TXS = 2_000;
const PAYERS = 64;
const CONNECTIONS = Number(process.env.BENCH_SUBMIT_CONNECTIONS ?? 4);
const WINDOW = Number(process.env.BENCH_SUBMIT_WINDOW ?? 32);
/** Off/on rounds of the tracing comparison (each a phase per child); more rounds steady the ratio on a busy machine. */
const TRACE_ROUNDS = Number(process.env.BENCH_SUBMIT_TRACE_ROUNDS ?? 2);
const CHILD_ENV = 'MERIDIAN_SUBMIT_BENCH_CHILD';
const TIPS_ENV = 'MERIDIAN_SUBMIT_BENCH_TIPS';
/** `off` = the child runs with gateways.submit.traces.enabled false (the tracing-cost comparison). */
const TRACES_ENV = 'MERIDIAN_SUBMIT_BENCH_TRACES';
/** The status node the traces-on child polls (statusNode below, in this process). */
const STATUS_ENV = 'MERIDIAN_SUBMIT_BENCH_STATUS_URL';
const API_KEY = '5d0c0b7e-3f7e-4b1a-9d2c-6a1b2c3d4e5f';

class SinkForwarder implements Forwarder {
  n = 0;
  /** Reports each dispatch as a route's success at once, so traces record a forward step as with a real route. */
  forward(_tx: Buffer, opening?: ForwardOpening): boolean {
    this.n++;
    opening?.open()('sink', { ok: true, ms: 0 });
    return true;
  }
  async close(): Promise<void> {}
}

function makeTxs(): Buffer[] {
  const payers = Array.from({ length: PAYERS }, () => Keypair.generate());
  return Array.from({ length: TXS }, (_, i) => legacyTx({ payer: payers[i % PAYERS]!, amount: 1000 + i }));
}

// ---------------------------------------------------------------- child: the service under load
interface Stats {
  cpuUs: number;
  sysUs: number;
  binary: number;
  jsonrpc: number;
  udp: number;
  forwarded: number;
}

async function serve(): Promise<void> {
  // With the bounds the service's embedded bus gets from its settings (bus/config.ts; BENCH_SUBMIT_BUS_BOUNDS=0:
  // the bus's own, 200k records per partition): without them the traces-on child kept every event of the run on
  // its heap, a growing cost no deployment has (Kafka keeps none in process; one machine bounds submit.traces).
  const limits = parseEmbeddedLimits(undefined);
  const bus = process.env.BENCH_SUBMIT_BUS_BOUNDS === '0' ? new EmbeddedBus() : new EmbeddedBus({ maxMessagesPerPartition: limits.maxMessagesPerPartition, maxBytesPerPartition: limits.maxBytesPerPartition, topicLimits: limits.topics });
  await bus.createTopics(defaultTopicSpecs());
  const log = createLogger({ level: 'warn' });
  const registry = new Registry();
  const usage = new UsageProducer(bus, { registry, log });
  const sink = new SinkForwarder();
  const cfg = parseSubmitConfig({
    enabled: true, listen: '127.0.0.1:0', udp: { listen: '127.0.0.1:0' },
    // The parent's tip accounts (support.ts makes fresh ones per process).
    tips: { accounts: (process.env[TIPS_ENV] ?? '').split(','), minLamports: MIN_TIP }, forwardUrls: ['http://127.0.0.1:1/'],
    // Traces on (the default) poll the parent's status node, which answers every call and never finds a
    // status: every trace stays pending, so the poller spends its whole per-tick budget (4 × 256 signatures and
    // 8 blockhash checks per 500 ms) on real answers — its most, whatever the load. With the rest, what traces
    // cost per accepted transaction: the trace, its accepted + forward events and their production on the
    // (embedded) bus.
    traces: { enabled: process.env[TRACES_ENV] !== 'off', statusUrl: process.env[STATUS_ENV] ?? 'http://127.0.0.1:1/' },
  });
  const rentals = rentalsFromList([{ id: 'bench', rps: 0, tps: 1e12, region: 'local', ips: [], apiKeys: [API_KEY], tokens: [], dedicatedPaths: [], pps: 0, evmIps: [], status: 'active' }]);
  const svc = await startSubmit(cfg, { bus, rentals, usage, log, registry, forwarder: sink });
  const m = svc.pipeline.metrics;
  const stats = (): Stats => {
    const c = process.cpuUsage();
    return { cpuUs: c.user + c.system, sysUs: c.system, binary: m.value('binary', 'accepted'), jsonrpc: m.value('jsonrpc', 'accepted'), udp: m.value('udp', 'accepted'), forwarded: sink.n };
  };
  process.on('message', (msg: { cmd: string }) => {
    if (msg.cmd === 'stats') process.send!({ stats: stats() });
    if (msg.cmd === 'stop') void svc.close().then(() => usage.close()).then(() => bus.close()).then(() => process.exit(0));
  });
  process.send!({ ready: { http: svc.http.port, udp: svc.udp!.port } });
}

// ---------------------------------------------------------------- parent: load and references
function ask(child: ChildProcess): Promise<Stats> {
  return new Promise((resolve) => {
    const on = (m: { stats?: Stats }): void => {
      if (m.stats === undefined) return;
      child.off('message', on);
      resolve(m.stats);
    };
    child.on('message', on);
    child.send({ cmd: 'stats' });
  });
}

/** Pipelined HTTP/1.1 over raw sockets: W requests in flight per connection; counts 200 responses. */
export async function httpLoad(port: number, requests: Buffer[], seconds: number, connections = CONNECTIONS, window = WINDOW): Promise<{ ok: number; other: number }> {
  let ok = 0;
  let other = 0;
  let stop = false;
  let next = 0;
  const run = (): Promise<void> => new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    s.setNoDelay(true);
    let buf: Buffer = Buffer.alloc(0);
    let inFlight = 0;
    const send = (n: number): void => {
      const batch: Buffer[] = [];
      for (let i = 0; i < n; i++) batch.push(requests[next++ % requests.length]!);
      inFlight += n;
      s.write(Buffer.concat(batch));
    };
    s.on('connect', () => send(window));
    s.on('error', reject);
    s.on('data', (d: Buffer) => {
      buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
      let off = 0;
      let done = 0;
      for (;;) {
        const end = buf.indexOf('\r\n\r\n', off);
        if (end < 0) break;
        const cl = buf.indexOf('content-length: ', off);
        const len = cl >= 0 && cl < end ? parseInt(buf.toString('latin1', cl + 16, buf.indexOf('\r\n', cl)), 10) : 0;
        if (end + 4 + len > buf.length) break;
        if (buf[off + 9] === 0x32 && buf[off + 10] === 0x30 && buf[off + 11] === 0x30) ok++;
        else other++;
        off = end + 4 + len;
        done++;
      }
      buf = buf.subarray(off);
      inFlight -= done;
      if (stop) {
        if (inFlight === 0) {
          s.end();
          resolve();
        }
        return;
      }
      if (done > 0) send(done);
    });
  });
  const runs = Array.from({ length: connections }, run);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  stop = true;
  await Promise.all(runs);
  return { ok, other };
}

function httpRequest(path: string, type: string, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`POST ${path}?api-key=${API_KEY} HTTP/1.1\r\nHost: bench\r\nContent-Type: ${type}\r\nContent-Length: ${body.length}\r\n\r\n`, 'latin1'), body]);
}

async function udpLoad(port: number, datagrams: Buffer[], seconds: number): Promise<number> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  let sent = 0;
  const deadline = performance.now() + seconds * 1000;
  // Bursts, yielding between them so the socket drains; the kernel drops what the server cannot take.
  while (performance.now() < deadline) {
    for (let i = 0; i < 64; i++) s.send(datagrams[sent++ % datagrams.length]!, port, '127.0.0.1');
    await new Promise((r) => setImmediate(r));
  }
  await new Promise((r) => setTimeout(r, 300));
  s.close();
  return sent;
}

/** This process's CPU time (user + system): rates per CPU second are per core, whatever else the machine runs. */
function cpuSeconds(): number {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1e6;
}

/** Bare crypto.verify over the same messages with cached KeyObjects: the verification limit. */
function bareVerifyRate(txs: Buffer[], seconds: number): number {
  const spki = Buffer.from('302a300506032b6570032100', 'hex');
  const keys = new Map<string, crypto.KeyObject>();
  const items = txs.map((tx) => {
    const d = decodeTransaction(tx, 0n);
    if (!d.ok) throw new Error('bench tx does not decode');
    const pk = d.tx.accountKeys[0]!;
    let k = keys.get(pk.toString('hex'));
    if (k === undefined) keys.set(pk.toString('hex'), (k = crypto.createPublicKey({ key: Buffer.concat([spki, pk]), format: 'der', type: 'spki' })));
    return { key: k, sig: tx.subarray(1, 65), msg: tx.subarray(65) };
  });
  let n = 0;
  const c0 = cpuSeconds();
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    for (let i = 0; i < 100; i++) {
      const it = items[n++ % items.length]!;
      if (!crypto.verify(null, it.msg, it.key, it.sig)) throw new Error('bench signature does not verify');
    }
  }
  return n / (cpuSeconds() - c0);
}

/** The whole pipeline called directly (no transport), usage events off: what the transports add is the rest. */
function directPipelineRate(txs: Buffer[], seconds: number): number {
  const sink = new SinkForwarder();
  const p = new SubmitPipeline({
    rentals: rentalsFromList([{ id: 'd', rps: 0, tps: 1e12, region: '', ips: [], apiKeys: [API_KEY], tokens: [], dedicatedPaths: [], pps: 0, evmIps: [], status: 'active' }]),
    forwarder: sink,
    tips: tipRule(TIP_ACCOUNTS.map((k) => k.toBase58()), MIN_TIP),
    metrics: new SubmitMetrics(new Registry()),
  });
  let n = 0;
  const c0 = cpuSeconds();
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    for (let i = 0; i < 100; i++) {
      const o = p.submitNow({ apiKey: API_KEY, bytes: txs[n++ % txs.length]!, transport: 'binary' });
      if (!o.ok) throw new Error(`direct pipeline rejected: ${o.reason}`);
    }
  }
  return n / (cpuSeconds() - c0);
}

/**
 * A chain node's two status methods as the poller calls them (one JSON-RPC call per request): no signature has
 * a status, every blockhash is valid, the slot advances every 400 ms. Its cost is this process's, not the child's.
 */
async function statusNode(): Promise<{ url: string; calls: () => number; close: () => Promise<void> }> {
  const t0 = Date.now();
  let calls = 0;
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (b: Buffer) => parts.push(b));
    req.on('end', () => {
      calls++;
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as { id: unknown; method: string; params: unknown[] };
      const context = { slot: 1_000 + Math.floor((Date.now() - t0) / 400) };
      const result = body.method === 'getSignatureStatuses' ? { context, value: (body.params[0] as unknown[]).map(() => null) } : { context, value: true };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/`, calls: () => calls, close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}

function startChild(traces: 'on' | 'off', statusUrl?: string): { child: ChildProcess; ports: Promise<{ http: number; udp: number }> } {
  const child = fork(__filename, [], { execArgv: process.env.BENCH_SUBMIT_PROFILE_DIR === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_SUBMIT_PROFILE_DIR}`], env: { ...process.env, [CHILD_ENV]: '1', [TIPS_ENV]: TIP_ACCOUNTS.map((k) => k.toBase58()).join(','), [TRACES_ENV]: traces, ...(statusUrl === undefined ? {} : { [STATUS_ENV]: statusUrl }) }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ports = new Promise<{ http: number; udp: number }>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`bench server exited (${code})`)));
    child.on('message', (m: { ready?: { http: number; udp: number } }) => m.ready !== undefined && resolve(m.ready));
  });
  return { child, ports };
}

async function stopChild(child: ChildProcess): Promise<void> {
  child.send({ cmd: 'stop' });
  await new Promise((r) => {
    const t = setTimeout(() => {
      child.kill('SIGKILL');
      r(undefined);
    }, 5000);
    child.once('exit', () => {
      clearTimeout(t);
      r(undefined);
    });
  });
}

/** Trace events through the bounded producer onto the embedded bus, one core: what the bus side sustains. */
async function traceEventsRate(seconds: number): Promise<{ perS: number; perCore: number }> {
  const bus = new EmbeddedBus({ topicLimits: { [TOPIC.submitTraces]: { maxMessagesPerPartition: 50_000 } } });
  await bus.createTopics(defaultTopicSpecs().filter((t) => t.name === TOPIC.submitTraces));
  const log = createLogger({ level: 'warn' });
  const producer = new EventProducer<TraceEvent>(bus, { topic: TOPIC.submitTraces, encode: encodeTraceEvent, metricPrefix: 'bench_trace_events', registry: new Registry(), log, maxBuffered: 20_000 });
  const sigs = makeTxs().slice(0, 256).map((tx) => bs58.encode(tx.subarray(1, 65)));
  let n = 0;
  const c0 = cpuSeconds();
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  while (performance.now() < end) {
    for (let i = 0; i < 2_000; i++, n++) {
      const sig = sigs[n % sigs.length]!;
      producer.emit({ id: `${sig}:${n}`, time: new Date().toISOString(), signature: sig, rental: 'bench', step: 'forward', sinceAcceptedMs: 1, route: 'rpc-0', outcome: 'ok', ms: 0.5 });
    }
    await producer.flush(); // the producer's loop runs between bursts; waiting keeps the buffer from dropping
  }
  const wall = (performance.now() - t0) / 1000;
  const cpu = cpuSeconds() - c0;
  await producer.close();
  await bus.close();
  return { perS: n / wall, perCore: n / cpu };
}

export async function benchSubmit(): Promise<BenchResult[]> {
  const txs = makeTxs();
  const status = await statusNode();
  const { child, ports: portsP } = startChild('on', status.url);
  const ports = await portsP;
  const results: BenchResult[] = [];
  try {
    // This machine's speed drifts by 20% within a minute (a shared VM), so each phase gets its own bare-verify
    // reference, taken right before and right after it (their mean); the table's reference row is the mean over
    // all of them.
    const bareBefore = bareVerifyRate(txs, SECONDS);
    const directBefore = directPipelineRate(txs, SECONDS);
    const bares: number[] = [];
    interface Measured { name: string; perCore: number; bare: number; kernelUs: number; figures: Record<string, number>; note: string }
    const measured: Measured[] = [];

    const only = process.env.BENCH_SUBMIT_ONLY; // one phase (profiling): binary | jsonrpc | udp
    const phase = async (name: string, load: () => Promise<unknown>, field: 'binary' | 'jsonrpc' | 'udp', note: (sent: unknown) => string): Promise<void> => {
      if (only !== undefined && only !== field) return;
      const bare0 = bareVerifyRate(txs, BARE_AROUND_S);
      const a = await ask(child);
      const t0 = performance.now();
      const p0 = cpuSeconds();
      const sent = await load();
      const loadCpu = cpuSeconds() - p0;
      const b = await ask(child);
      const wall = (performance.now() - t0) / 1000;
      const bare1 = bareVerifyRate(txs, BARE_AROUND_S);
      bares.push(bare0, bare1);
      const accepted = b[field] - a[field];
      const cpu = (b.cpuUs - a.cpuUs) / 1e6;
      const perCore = accepted / cpu;
      const us = (rate: number): number => 1e6 / rate;
      measured.push({
        name,
        perCore,
        bare: (bare0 + bare1) / 2,
        kernelUs: us(perCore) * ((b.sysUs - a.sysUs) / 1e6 / cpu),
        figures: {
          accepted_per_wall_s: Math.round(accepted / wall),
          server_cpu_pct: Math.round((cpu / wall) * 100),
          server_kernel_pct_of_cpu: Math.round(((b.sysUs - a.sysUs) / 1e6 / cpu) * 100),
          loadgen_cpu_pct: Math.round((loadCpu / wall) * 100),
        },
        note: note(sent),
      });
    };
    const us = (rate: number): number => 1e6 / rate;
    const binReqs = txs.map((tx) => httpRequest('/binary', 'application/octet-stream', tx));
    // Warm-up (not measured): JIT, key cache, connections; otherwise the first phase pays for it.
    await httpLoad(ports.http, binReqs, 1);
    await phase('/binary accepted, per server core', () => httpLoad(ports.http, binReqs, SECONDS), 'binary', (r) => `${CONNECTIONS} keep-alive connections × ${WINDOW} pipelined; responses ${JSON.stringify(r)}`);
    // The shape most HTTP clients have: one request in flight per keep-alive connection, so no read carries
    // more than one request and every answer is its own write.
    await phase('/binary accepted, per server core, 64 connections × 1 in flight', () => httpLoad(ports.http, binReqs, SECONDS, 64, 1), 'binary', (r) => `no pipelining; responses ${JSON.stringify(r)}`);
    const rpcReqs = txs.map((tx, i) => httpRequest('/', 'application/json', Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: i, method: 'sendTransaction', params: [bs58.encode(tx)] }))));
    await phase('JSON-RPC sendTransaction (base58) accepted, per server core', () => httpLoad(ports.http, rpcReqs, SECONDS), 'jsonrpc', (r) => `same load shape; responses ${JSON.stringify(r)}`);
    const raw = uuidToRaw(API_KEY);
    const grams = txs.map((tx) => Buffer.concat([raw, tx]));
    await phase('UDP packets accepted, per server core', () => udpLoad(ports.udp, grams, SECONDS), 'udp', (sent) => `${String(sent)} datagrams sent; the kernel drops what the server cannot take (never answered)`);

    const directAfter = directPipelineRate(txs, SECONDS);
    bares.push(bareBefore);
    const bare = bares.reduce((x, y) => x + y, 0) / bares.length;
    // The pipeline's own cost beyond verification, as a fraction of a verification (each direct run against the
    // bare run next to it).
    const pipelineOverBare = (directBefore / bareBefore + directAfter / (bares.length >= 3 ? bares[bares.length - 2]! : bareBefore)) / 2;
    results.push({ bench: 'submit', case: 'reference: bare ed25519 verify, 1 core', figures: { per_s: Math.round(bare), vs_bare: 1 }, note: `mean of ${bares.length} runs, ${Math.round(Math.min(...bares))}–${Math.round(Math.max(...bares))}/s; each phase below is divided by the two taken around it` });
    results.push({ bench: 'submit', case: 'reference: pipeline called directly, 1 core', figures: { per_s: Math.round(bare * pipelineOverBare), vs_bare: pipelineOverBare }, note: `before the phases ${Math.round(directBefore)}/s, after ${Math.round(directAfter)}/s` });
    for (const m of measured) {
      const direct = m.bare * pipelineOverBare;
      const split = `per accepted tx ${us(m.perCore).toFixed(0)} µs of server CPU = ed25519 ${us(m.bare).toFixed(0)} + rest of the pipeline ${(us(direct) - us(m.bare)).toFixed(0)}`
        + ` + kernel (socket syscalls) ${m.kernelUs.toFixed(0)} + transport in user space (parsing, framing, answer, usage event, GC) ${(us(m.perCore) - us(direct) - m.kernelUs).toFixed(0)}`;
      results.push({ bench: 'submit', case: m.name, figures: { per_s: Math.round(m.perCore), vs_bare: m.perCore / m.bare, ...m.figures }, note: `${m.note}; bare verify around it ${Math.round(m.bare)}/s; ${split}` });
    }

    // Tracing's cost: the same /binary load on a second child with traces off, phases interleaved off/on (this
    // machine's speed drifts), per core = accepted / the serving child's CPU seconds.
    if (only === undefined || only === 'traces') {
      const off = startChild('off');
      try {
        const offPorts = await off.ports;
        await httpLoad(offPorts.http, binReqs, 1);
        const perCore = async (c: ChildProcess, port: number): Promise<number> => {
          const a = await ask(c);
          await httpLoad(port, binReqs, SECONDS);
          const b = await ask(c);
          return (b.binary - a.binary) / ((b.cpuUs - a.cpuUs) / 1e6);
        };
        const offs: number[] = [];
        const ons: number[] = [];
        const calls0 = status.calls();
        const t0 = performance.now();
        for (let round = 0; round < TRACE_ROUNDS; round++) {
          offs.push(await perCore(off.child, offPorts.http));
          ons.push(await perCore(child, ports.http));
        }
        const mean = (xs: number[]): number => xs.reduce((x, y) => x + y, 0) / xs.length;
        const callsPerS = (status.calls() - calls0) / ((performance.now() - t0) / 1000);
        results.push({ bench: 'submit', case: 'reference: /binary accepted per core, traces off', figures: { per_s: Math.round(mean(offs)) }, note: `runs ${offs.map((x) => Math.round(x)).join(', ')}/s, interleaved with the row below` });
        results.push({ bench: 'submit', case: '/binary accepted per core, traces on', figures: { per_s: Math.round(mean(ons)), vs_off: mean(ons) / mean(offs) }, note: `runs ${ons.map((x) => Math.round(x)).join(', ')}/s; each accepted tx: a trace, accepted + forward events on submit.traces (embedded bus), status poller at its full budget against a status node that answers (${callsPerS.toFixed(0)} calls/s, no status found) (aim ≥ 0.95× off)` });
      } finally {
        await stopChild(off.child);
      }
      const ev = await traceEventsRate(SECONDS);
      results.push({ bench: 'submit', case: 'trace events produced to submit.traces (embedded bus), 1 core', figures: { per_s: Math.round(ev.perS), per_core_s: Math.round(ev.perCore) }, note: 'EventProducer: JSON encode, bounded FIFO, batches of 500 into the embedded bus; Kafka not measured here' });
    }
  } finally {
    await stopChild(child);
    await status.close();
  }
  return results;
}

if (process.env[CHILD_ENV] === '1' && require.main === module) {
  void serve();
}
