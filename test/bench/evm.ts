import net from 'node:net';
import { Writable } from 'node:stream';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { rentalsFromList } from '../../bus/rental-registry';
import { parseRental } from '../../bus/topics/rentals';
import { startAnvil } from '../../infra/local/anvil/anvil';
import { createLogger } from '../../infra/base/log';
import { Registry } from '../../infra/base/metrics';
import { parseEvmConfig } from '../../gateways/evm/config';
import { startEvmGateway } from '../../gateways/evm/gateway';
import { summarize, type BenchResult } from './stats';

// The EVM endpoint's cost: the same requests to anvil directly and through the gateway, in one run.
//   - anvil (chain 56, quiet) is the upstream; the gateway runs in this process's main thread with IP auth on
//     (a rental lookup per request) and usage events off (no bus here);
//   - the load generator runs in a worker thread (its own event loop): raw HTTP/1.1 keep-alive on net sockets,
//     request bytes built once, replies framed by content-length and not parsed — cheaper per request than
//     the gateway it drives (its event-loop utilisation is printed beside the gateway's);
//   - latency: one request at a time, direct and proxied alternating in rounds so both see the same machine;
//     added = proxied − direct at the same percentile;
//   - throughput: CONNS keep-alive connections in a closed loop for THROUGHPUT_MS each way.
// Cases: eth_chainId (cheap: anvil answers from memory) and a batch of 10 eth_chainId.

const ROUNDS = 6;
const PER_ROUND = 1_500;
const CONNS = 16;
const THROUGHPUT_MS = 3_000;

interface LoadJob {
  host: string;
  port: number;
  body: string;
  /** Requests in flight (one per connection). */
  conns: number;
  /** Stop after this many replies in total, or after durationMs, whichever first. */
  count: number;
  durationMs: number;
}

interface LoadResult {
  latenciesMs: Float64Array;
  done: number;
  errors: number;
  elapsedMs: number;
  /** Event-loop utilisation of the load generator's thread (0..1). */
  elu: number;
}

// ---- the load generator (worker side) ----

function request(host: string, body: string): Buffer {
  return Buffer.from(`POST / HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

const CRLF2 = Buffer.from('\r\n\r\n');
const CL = /content-length:\s*(\d+)/i;

function runLoad(job: LoadJob): Promise<LoadResult> {
  const req = request(job.host, job.body);
  const lat = new Float64Array(job.count);
  let done = 0;
  let errors = 0;
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  const deadline = t0 + job.durationMs;
  return new Promise((resolve) => {
    let open = job.conns;
    const finishOne = (): void => {
      if (--open > 0) return;
      resolve({ latenciesMs: lat.subarray(0, Math.min(done, job.count)), done, errors, elapsedMs: performance.now() - t0, elu: performance.eventLoopUtilization(elu0).utilization });
    };
    for (let c = 0; c < job.conns; c++) {
      const sock = net.connect({ host: job.host, port: job.port, noDelay: true });
      let buf: Buffer = Buffer.alloc(0);
      let sent = 0;
      const send = (): void => {
        if (done >= job.count || performance.now() >= deadline) {
          sock.end();
          return;
        }
        sent = performance.now();
        sock.write(req);
      };
      sock.on('connect', send);
      sock.on('data', (chunk: Buffer) => {
        buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
        for (;;) {
          const h = buf.indexOf(CRLF2);
          if (h < 0) return;
          const m = CL.exec(buf.subarray(0, h).toString('latin1'));
          if (m === null) {
            errors++;
            sock.destroy();
            return;
          }
          const end = h + 4 + Number(m[1]);
          if (buf.length < end) return;
          if (buf[9] !== 0x32) errors++; // "HTTP/1.1 2xx": byte 9 is the status's first digit
          const i = done++;
          if (i < job.count) lat[i] = performance.now() - sent;
          buf = buf.subarray(end);
          send();
        }
      });
      sock.on('error', () => {
        errors++;
      });
      sock.on('close', finishOne);
    }
  });
}

if (!isMainThread && (workerData as { evmLoad?: boolean } | null)?.evmLoad === true) {
  parentPort!.on('message', (job: LoadJob) => {
    void runLoad(job).then((r) => parentPort!.postMessage(r, [r.latenciesMs.buffer as ArrayBuffer]));
  });
}

// ---- the bench (main thread) ----

class LoadWorker {
  private readonly w = new Worker(__filename, { workerData: { evmLoad: true } });

  run(job: LoadJob): Promise<LoadResult> {
    return new Promise((resolve, reject) => {
      const onMessage = (r: LoadResult): void => {
        this.w.off('error', onError);
        resolve(r);
      };
      const onError = (e: Error): void => {
        this.w.off('message', onMessage);
        reject(e);
      };
      this.w.once('message', onMessage);
      this.w.once('error', onError);
      this.w.postMessage(job);
    });
  }

  close(): Promise<number> {
    return this.w.terminate();
  }
}

function hostPortOf(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
}

export async function benchEvm(): Promise<BenchResult[]> {
  const log = createLogger({ destination: new Writable({ write: (_c, _e, cb) => cb() }), level: 'warn' });
  const node = await startAnvil({ chainId: 56, quiet: true });
  const cfg = parseEvmConfig({
    enabled: true,
    serve: [56],
    auth: { mode: 'ip' },
    health: { maxStallMs: 0 },
    chains: { 56: { http: '127.0.0.1:0', ws: '127.0.0.1:0', upstreams: [node.httpUrl] } },
  });
  const rentals = rentalsFromList([parseRental({ id: 'bench', ips: ['127.0.0.1'] })]);
  const gw = await startEvmGateway(cfg, { rentals, log, registry: new Registry() });
  const load = new LoadWorker();
  const direct = hostPortOf(node.httpUrl);
  const proxied = hostPortOf(gw.chains[0]!.http);
  const results: BenchResult[] = [];
  try {
    const single = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] });
    const batch = JSON.stringify(Array.from({ length: 10 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_chainId', params: [] })));
    for (const [name, body] of [['eth_chainId', single], ['batch of 10 eth_chainId', batch]] as const) {
      // Warm both paths (connections, JIT).
      await load.run({ ...direct, body, conns: 1, count: 500, durationMs: 10_000 });
      await load.run({ ...proxied, body, conns: 1, count: 500, durationMs: 10_000 });
      const d: number[] = [];
      const p: number[] = [];
      let errors = 0;
      let genElu = 0;
      let gwElu = 0;
      for (let r = 0; r < ROUNDS; r++) {
        const a = await load.run({ ...direct, body, conns: 1, count: PER_ROUND, durationMs: 30_000 });
        const gw0 = performance.eventLoopUtilization();
        const b = await load.run({ ...proxied, body, conns: 1, count: PER_ROUND, durationMs: 30_000 });
        gwElu += performance.eventLoopUtilization(gw0).utilization / ROUNDS;
        genElu += b.elu / ROUNDS;
        errors += a.errors + b.errors;
        d.push(...a.latenciesMs);
        p.push(...b.latenciesMs);
      }
      const sd = summarize(d);
      const sp = summarize(p);
      results.push({
        bench: 'evm',
        case: `${name}: latency, 1 in flight`,
        figures: {
          direct_p50_ms: sd.p50,
          proxied_p50_ms: sp.p50,
          added_p50_ms: sp.p50 - sd.p50,
          direct_p99_ms: sd.p99,
          proxied_p99_ms: sp.p99,
          added_p99_ms: sp.p99 - sd.p99,
          samples: sp.count,
          errors,
          gateway_elu: gwElu,
          loadgen_elu: genElu,
        },
        note: 'elu = event-loop utilisation of the gateway thread and of the load-generator thread while proxied (1.0 = one core busy)',
      });

      const td = await load.run({ ...direct, body, conns: CONNS, count: 10_000_000, durationMs: THROUGHPUT_MS });
      const gw0 = performance.eventLoopUtilization();
      const tp = await load.run({ ...proxied, body, conns: CONNS, count: 10_000_000, durationMs: THROUGHPUT_MS });
      const gwT = performance.eventLoopUtilization(gw0).utilization;
      const st = summarize(tp.latenciesMs);
      const sdt = summarize(td.latenciesMs);
      results.push({
        bench: 'evm',
        case: `${name}: throughput, ${CONNS} connections`,
        figures: {
          direct_req_per_s: (td.done / td.elapsedMs) * 1000,
          proxied_req_per_s: (tp.done / tp.elapsedMs) * 1000,
          direct_p50_ms: sdt.p50,
          proxied_p50_ms: st.p50,
          proxied_p99_ms: st.p99,
          errors: td.errors + tp.errors,
          gateway_elu: gwT,
          loadgen_elu: tp.elu,
        },
        note: 'closed loop; anvil, the gateway and the load generator share the same 2 cores, so proxied req/s is bounded by all three',
      });
    }
  } finally {
    await load.close();
    await gw.close();
    await node.stop();
  }
  return results;
}
