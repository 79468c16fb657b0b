// What every bench shares: results, percentiles, a plain-text table, and CPU/memory of this process.

/** One measured case of a bench; `figures` become table columns (union over the rows of a table). */
export interface BenchResult {
  /** Which bench, e.g. "bus". */
  bench: string;
  /** What was measured, e.g. "embedded: latency at 5000 msg/s". */
  case: string;
  /** Named figures with units in the name, e.g. { p50_ms: 0.05, msgs_per_s: 5000 }. */
  figures: Record<string, number | string>;
  /** Why a case was skipped, or anything a reader must know to trust the numbers. */
  note?: string;
}

export interface Summary {
  count: number;
  min: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

/** Nearest-rank percentile of an ascending array (p in 0..100); NaN when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function summarize(samples: ArrayLike<number>): Summary {
  const sorted = Float64Array.from(samples).sort(); // typed-array sort is numeric, unlike Array's default
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    min: sorted.length === 0 ? NaN : sorted[0]!,
    mean: sorted.length === 0 ? NaN : sum / sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    p999: percentile(sorted, 99.9),
    max: sorted.length === 0 ? NaN : sorted[sorted.length - 1]!,
  };
}

/** Three significant digits for small numbers, thousands separators for large ones. */
export function fmt(v: number | string): string {
  if (typeof v === 'string') return v;
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1000 || Number.isInteger(v)) return Math.round(v).toLocaleString('en-US');
  return v.toPrecision(3);
}

/** A left-aligned text table with a rule under the header. */
export function formatTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** The results of one bench as a table: a row per case, a column per figure name, notes under it. */
export function formatResults(title: string, results: BenchResult[]): string {
  const names: string[] = [];
  for (const r of results) for (const k of Object.keys(r.figures)) if (!names.includes(k)) names.push(k);
  const rows = results.map((r) => [r.case, ...names.map((n) => (r.figures[n] === undefined ? '' : fmt(r.figures[n]!)))]);
  const notes = results.filter((r) => r.note !== undefined).map((r) => `  note (${r.case}): ${r.note}`);
  return [`== ${title} ==`, formatTable(['case', ...names], rows), ...notes].join('\n');
}

export interface ProcessUsage {
  wallMs: number;
  /** User + system CPU over wall time; 100 = one core busy. */
  cpuPct: number;
  rssPeakMb: number;
  heapPeakMb: number;
}

/**
 * CPU and memory of this process between start() and stop(). Memory is sampled on a timer (and at stop), so a
 * peak between samples can be missed; the timer is unref'd and never keeps a bench alive.
 */
export class ProcessSampler {
  private cpu0 = process.cpuUsage();
  private t0 = performance.now();
  private rssPeak = 0;
  private heapPeak = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly intervalMs = 100) {}

  start(): this {
    this.cpu0 = process.cpuUsage();
    this.t0 = performance.now();
    this.rssPeak = 0;
    this.heapPeak = 0;
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
    return this;
  }

  stop(): ProcessUsage {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.sample();
    const wallMs = performance.now() - this.t0;
    const cpu = process.cpuUsage(this.cpu0);
    return {
      wallMs,
      cpuPct: wallMs > 0 ? ((cpu.user + cpu.system) / 1000 / wallMs) * 100 : 0,
      rssPeakMb: this.rssPeak / 1048576,
      heapPeakMb: this.heapPeak / 1048576,
    };
  }

  private sample(): void {
    const m = process.memoryUsage();
    this.rssPeak = Math.max(this.rssPeak, m.rss);
    this.heapPeak = Math.max(this.heapPeak, m.heapUsed);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
