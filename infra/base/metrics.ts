import http from 'node:http';
import Koa from 'koa';

// Prometheus text exposition without a dependency. Hot paths hold a Counter and call inc(); nothing is
// formatted until a scrape. Labels are fixed at registration so inc() never builds strings.

type Labels = Record<string, string>;

function labelText(labels: Labels | undefined): string {
  if (labels === undefined) return '';
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

export class Counter {
  value = 0;
  constructor(readonly labels?: Labels) {}
  inc(n = 1): void {
    this.value += n;
  }
}

export class Gauge {
  value = 0;
  constructor(readonly labels?: Labels, private readonly read?: () => number) {}
  set(v: number): void {
    this.value = v;
  }
  inc(n = 1): void {
    this.value += n;
  }
  dec(n = 1): void {
    this.value -= n;
  }
  current(): number {
    return this.read === undefined ? this.value : this.read();
  }
}

/** Fixed buckets, cumulative at render time. */
export class Histogram {
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(readonly buckets: number[], readonly labels?: Labels) {
    this.counts = new Array<number>(buckets.length).fill(0);
  }
  observe(v: number): void {
    this.sum += v;
    this.count++;
    const b = this.buckets;
    for (let i = 0; i < b.length; i++) {
      if (v <= b[i]!) {
        this.counts[i]!++;
        return;
      }
    }
  }
}

export const LATENCY_MS_BUCKETS = [0.25, 0.5, 1, 2, 5, 10, 20, 50, 100, 250, 500, 1000, 5000];

interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  series: Array<Counter | Gauge | Histogram>;
}

export class Registry {
  private readonly families = new Map<string, Family>();
  private readonly remotes = new Set<() => Promise<FamilyLines[][]>>();
  private readonly locals = new Set<(extra?: Labels) => Promise<FamilyLines[]>>();

  private family(name: string, help: string, type: Family['type']): Family {
    let f = this.families.get(name);
    if (f === undefined) {
      f = { name, help, type, series: [] };
      this.families.set(name, f);
    } else if (f.type !== type) {
      throw new Error(`metric ${name} registered as ${f.type} and ${type}`);
    }
    return f;
  }

  counter(name: string, help: string, labels?: Labels): Counter {
    const f = this.family(name, help, 'counter');
    const want = labelText(labels);
    const found = f.series.find((s) => labelText(s.labels) === want);
    if (found !== undefined) return found as Counter;
    const c = new Counter(labels);
    f.series.push(c);
    return c;
  }

  gauge(name: string, help: string, labels?: Labels, read?: () => number): Gauge {
    const g = new Gauge(labels, read);
    this.family(name, help, 'gauge').series.push(g);
    return g;
  }

  histogram(name: string, help: string, buckets: number[] = LATENCY_MS_BUCKETS, labels?: Labels): Histogram {
    const h = new Histogram(buckets, labels);
    this.family(name, help, 'histogram').series.push(h);
    return h;
  }

  /** Drops series (e.g. a gauge whose owner is gone). */
  remove(metric: Counter | Gauge | Histogram): void {
    for (const f of this.families.values()) f.series = f.series.filter((s) => s !== metric);
  }

  /** Every family's series as text lines; `extra` labels go on every series (another process's identity). */
  lines(extra?: Labels): FamilyLines[] {
    const out: FamilyLines[] = [];
    for (const f of this.families.values()) {
      const lines: string[] = [];
      for (const s of f.series) {
        const labels = extra === undefined ? s.labels : { ...s.labels, ...extra };
        if (s instanceof Histogram) {
          let cum = 0;
          for (let i = 0; i < s.buckets.length; i++) {
            cum += s.counts[i]!;
            lines.push(`${f.name}_bucket${labelText({ ...labels, le: String(s.buckets[i]) })} ${cum}`);
          }
          lines.push(`${f.name}_bucket${labelText({ ...labels, le: '+Inf' })} ${s.count}`);
          lines.push(`${f.name}_sum${labelText(labels)} ${s.sum}`, `${f.name}_count${labelText(labels)} ${s.count}`);
        } else {
          const v = s instanceof Gauge ? s.current() : s.value;
          lines.push(`${f.name}${labelText(labels)} ${v}`);
        }
      }
      out.push({ name: f.name, help: f.help, type: f.type, lines });
    }
    return out;
  }

  render(): string {
    return renderFamilies([this.lines()]);
  }

  /**
   * Adds series other processes hold (fanout workers) to every scrape through renderAll(); they arrive as
   * lines() of those processes, labelled by the caller. Returns the function that removes the source.
   */
  addRemote(collect: () => Promise<FamilyLines[][]>): () => void {
    this.remotes.add(collect);
    return () => this.remotes.delete(collect);
  }

  /**
   * Adds series this process holds elsewhere and reads asynchronously (runtime metrics, infra/base/runtime-metrics.ts)
   * to linesAll() and renderAll().
   */
  addLocal(collect: (extra?: Labels) => Promise<FamilyLines[]>): void {
    this.locals.add(collect);
  }

  /** lines() and the asynchronous local sources: what a fanout worker hands to the process that serves /metrics. */
  async linesAll(extra?: Labels): Promise<FamilyLines[]> {
    const out = this.lines(extra);
    for (const l of this.locals) out.push(...(await l(extra)));
    return out;
  }

  /** This registry and every remote source, one HELP/TYPE per family (a family may span processes). */
  async renderAll(): Promise<string> {
    const all: FamilyLines[][] = [await this.linesAll()];
    for (const r of this.remotes) all.push(...(await r()));
    return renderFamilies(all);
  }
}

/** One family's rendered series, as a process sends them to the one that serves /metrics. */
export interface FamilyLines {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  lines: string[];
}

function renderFamilies(sources: FamilyLines[][]): string {
  const merged = new Map<string, FamilyLines>();
  for (const src of sources) {
    for (const f of src) {
      const m = merged.get(f.name);
      if (m === undefined) merged.set(f.name, { ...f, lines: [...f.lines] });
      else m.lines.push(...f.lines);
    }
  }
  const out: string[] = [];
  for (const f of merged.values()) out.push(`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`, ...f.lines);
  return out.join('\n') + '\n';
}

/** The process-wide registry. Components register into it; `meridian start` serves it on /metrics. */
export const metrics = new Registry();

export interface HealthCheck {
  name: string;
  check: () => boolean;
}

/** Status with an empty body and no content-type (koa would otherwise answer its status text, or 204 for null). */
function empty(ctx: Koa.Context, status: number): void {
  ctx.status = status;
  ctx.body = '';
  ctx.remove('Content-Type');
}

/**
 * /metrics, /healthz (process up), /readyz (every registered check passes); anything else 404. Routes match the
 * raw request URL (a query string makes it another route) and any method, as scrapers and probes send them.
 */
export function serveMetrics(registry: Registry, host: string, port: number, checks: HealthCheck[]): Promise<http.Server> {
  const app = new Koa();
  app.silent = true; // a failure is answered 500 below; nothing to print
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch {
      empty(ctx, 500);
    }
  });
  app.use(async (ctx) => {
    switch (ctx.url) {
      case '/metrics': {
        const text = await registry.renderAll();
        ctx.set('content-type', 'text/plain; version=0.0.4');
        ctx.body = text;
        return;
      }
      case '/healthz':
        ctx.set('content-type', 'text/plain');
        ctx.body = 'ok\n';
        return;
      case '/readyz': {
        const failing = checks.filter((c) => !c.check()).map((c) => c.name);
        ctx.status = failing.length === 0 ? 200 : 503;
        ctx.set('content-type', 'text/plain');
        ctx.body = failing.length === 0 ? 'ready\n' : `not ready: ${failing.join(', ')}\n`;
        return;
      }
      default:
        empty(ctx, 404);
    }
  });
  const server = http.createServer(app.callback());
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
