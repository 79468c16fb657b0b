import fs from 'node:fs';
import http from 'node:http';
import { numberOption, noPositionals, parseCommand, UsageError, type CommandSpec } from '../base/args';
import { DEFAULT_ENDPOINTS_FILE, hostPortOf } from '../base/endpoints';
import { splitHostPort } from '../base/host-port';
import { OperatorError } from '../base/operator-error';
import { parseExposition, type Sample } from '../ops/monitoring/exposition';
import { renderStatus, statusReport, type StatusReport } from '../ops/monitoring/status';

// `meridian status`: ask a running instance how it is doing, from its metrics endpoint (the endpoints file a
// `meridian start` writes, key "metrics", or --metrics HOST:PORT). Two scrapes --interval apart give the rates;
// /readyz gives readiness. Prints the metrics HOST:PORT and figures only: never a URL, key or credential.
// Exit 0 when ready and no component is down, 1 when something is down, not ready, or nothing answers.

const SPEC: CommandSpec = {
  command: 'meridian status',
  summary: 'Ask a running instance how it is doing: one line per component (rates over the last seconds, queues and budget, upstream health, landing rate per route).',
  options: [
    { name: 'metrics', value: 'HOST:PORT', help: "the instance's metrics endpoint (metrics.listen)" },
    { name: 'endpoints', value: 'FILE', help: 'find the metrics endpoint in this endpoints file (key "metrics")', default: DEFAULT_ENDPOINTS_FILE },
    { name: 'interval', value: 'SECONDS', help: 'time between the two scrapes the rates come from (and between redraws)', default: '2' },
    { name: 'watch', help: 'redraw every --interval until Ctrl-C' },
    { name: 'json', help: 'print the report as JSON (one object; one per line with --watch)' },
  ],
  notes: 'Exit status: 0 ready and no component down; 1 a component down (no shreds, no healthy upstream), not ready, or nothing answers.',
};

const TIMEOUT_MS = 5_000;

function metricsAddress(flag: string | undefined, endpointsFile: string): { host: string; port: number } {
  let v = flag;
  if (v === undefined) {
    let doc: unknown;
    try {
      doc = JSON.parse(fs.readFileSync(endpointsFile, 'utf8'));
    } catch {
      throw new OperatorError(`no running service found: cannot read ${endpointsFile}; start one with \`npm start\`, or pass --metrics HOST:PORT or --endpoints FILE`);
    }
    const m = (doc as { metrics?: unknown }).metrics;
    if (typeof m !== 'string') throw new OperatorError(`${endpointsFile} has no "metrics" endpoint; is metrics.enabled off?`);
    v = hostPortOf(m);
  }
  const hp = splitHostPort(v, '127.0.0.1');
  if (hp === null) throw new UsageError(`--metrics: expected HOST:PORT, got ${JSON.stringify(v)}`);
  return hp;
}

function get(addr: { host: string; port: number }, path: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: addr.host, port: addr.port, path, timeout: TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    const where = `${addr.host}:${addr.port}`;
    req.on('timeout', () => req.destroy(new OperatorError(`the metrics endpoint ${where} did not answer within ${TIMEOUT_MS / 1000} s`)));
    req.on('error', (e: NodeJS.ErrnoException) =>
      reject(e instanceof OperatorError ? e : new OperatorError(`nothing answers at the metrics endpoint ${where}${e.code === undefined ? '' : ` (${e.code})`}: is \`meridian start\` running?`)),
    );
  });
}

async function scrape(addr: { host: string; port: number }): Promise<Sample[]> {
  const r = await get(addr, '/metrics');
  if (r.status !== 200) throw new OperatorError(`the metrics endpoint ${addr.host}:${addr.port} answered /metrics with HTTP ${r.status}`);
  return parseExposition(r.text);
}

async function readiness(addr: { host: string; port: number }): Promise<{ ready: boolean; failing: string[] }> {
  const r = await get(addr, '/readyz');
  if (r.status === 200) return { ready: true, failing: [] };
  const m = /^not ready: (.*)$/m.exec(r.text);
  return { ready: false, failing: m === null ? [`HTTP ${r.status}`] : m[1]!.split(',').map((s) => s.trim()) };
}

function print(r: StatusReport, json: boolean, redraw: boolean): void {
  if (json) process.stdout.write(JSON.stringify(r) + '\n');
  else process.stdout.write((redraw ? '\x1b[H\x1b[2J' : '') + renderStatus(r));
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });
}

export async function run(argv: string[]): Promise<number> {
  const args = parseCommand(argv, SPEC);
  noPositionals(args);
  const addr = metricsAddress(args.get('metrics'), args.get('endpoints') ?? DEFAULT_ENDPOINTS_FILE);
  const seconds = numberOption(args, 'interval', { min: 0.2, max: 600 }) ?? 2;
  const json = args.bool('json');
  const target = `${addr.host.includes(':') ? `[${addr.host}]` : addr.host}:${addr.port}`;
  const once = async (first: Sample[], signal?: AbortSignal): Promise<{ report: StatusReport; last: Sample[] } | null> => {
    const t0 = performance.now();
    if (signal === undefined) await new Promise((r) => setTimeout(r, seconds * 1000));
    else await delay(seconds * 1000, signal);
    if (signal?.aborted === true) return null;
    const [second, ready] = await Promise.all([scrape(addr), readiness(addr)]);
    return { report: statusReport(target, first, second, (performance.now() - t0) / 1000, ready), last: second };
  };

  if (!args.bool('watch')) {
    const r = await once(await scrape(addr));
    print(r!.report, json, false);
    return r!.report.healthy ? 0 : 1;
  }

  // --watch: each redraw's rates run from the previous scrape; a service that stops answering is one line, and the
  // watch goes on until it answers again or Ctrl-C.
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let healthy = false;
  let last: Sample[] | null = null;
  try {
    while (!stop.signal.aborted) {
      try {
        if (last === null) last = await scrape(addr);
        const r = await once(last, stop.signal);
        if (r === null) break;
        last = r.last;
        healthy = r.report.healthy;
        print(r.report, json, !json);
      } catch (e) {
        if (!(e instanceof OperatorError)) throw e;
        last = null;
        healthy = false;
        process.stdout.write(json ? JSON.stringify({ target, error: e.message }) + '\n' : `${e.message}\n`);
        await delay(seconds * 1000, stop.signal);
      }
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  return healthy ? 0 : 1;
}
