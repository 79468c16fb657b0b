import { setOwn } from '../../base/set-own';

// Reads the Prometheus text exposition format (version 0.0.4) that /metrics serves: one sample per line,
// `name{label="value",…} value`, with # HELP / # TYPE comments. Enough for `meridian status` and the monitoring
// tests; timestamps after the value are ignored.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/g;

function unescape(v: string): string {
  return v.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

function number(v: string): number {
  if (v === '+Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  return Number(v);
}

export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.length === 0 || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (m === null) continue;
    const labels: Record<string, string> = {};
    if (m[2] !== undefined) {
      LABEL.lastIndex = 0;
      for (let l = LABEL.exec(m[2]); l !== null; l = LABEL.exec(m[2])) setOwn(labels, l[1]!, unescape(l[2]!));
    }
    out.push({ name: m[1]!, labels, value: number(m[3]!) });
  }
  return out;
}

/** Every sample name (histograms' _bucket, _sum and _count series each count as one). */
export function sampleNames(samples: readonly Sample[]): Set<string> {
  return new Set(samples.map((s) => s.name));
}
