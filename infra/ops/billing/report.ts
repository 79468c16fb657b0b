import path from 'node:path';
import { mergeRows, type BillingRow, type PartitionLedger } from './ledger';
import { loadAllLedgers, writeDurable } from './store';

// The combined report of a billing directory, from its partition ledgers: report.json (rows plus where each
// partition stands) and report.csv (the rows), both written atomically. `billing report` prints the table.

export interface Report {
  generatedAt: string;
  partitions: Array<{ topic: string; partition: number; nextOffset: string; counted: number; duplicates: number; invalid: number }>;
  rows: BillingRow[];
  totals: { units: number; events: number };
}

export function buildReport(ledgers: PartitionLedger[]): Report {
  const rows = mergeRows(ledgers);
  return {
    generatedAt: new Date().toISOString(),
    partitions: ledgers.map((l) => ({ topic: l.topic, partition: l.partition, nextOffset: l.nextOffset, counted: l.counted, duplicates: l.duplicates, invalid: l.invalid })),
    rows,
    totals: { units: rows.reduce((s, r) => s + r.units, 0), events: rows.reduce((s, r) => s + r.events, 0) },
  };
}

function csvCell(v: string | number | undefined): string {
  const s = v === undefined ? '' : String(v);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function toCsv(rows: BillingRow[]): string {
  const lines = ['hour,rental,surface,method,chain,units,events'];
  for (const r of rows) lines.push([r.hour, r.rental, r.surface, r.method, r.chain, r.units, r.events].map(csvCell).join(','));
  return lines.join('\n') + '\n';
}

export function writeReport(dir: string): Report {
  const report = buildReport(loadAllLedgers(dir));
  writeDurable(path.join(dir, 'report.json'), JSON.stringify(report, null, 2) + '\n');
  writeDurable(path.join(dir, 'report.csv'), toCsv(report.rows));
  return report;
}

/** Totals per rental × surface × method (all hours), as a terminal table. */
export function formatReport(report: Report): string {
  const sums = new Map<string, { rental: string; surface: string; method: string; units: number; events: number }>();
  for (const r of report.rows) {
    const method = r.chain === undefined ? r.method : `${r.method} (chain ${r.chain})`;
    const k = `${r.rental}|${r.surface}|${method}`;
    const s = sums.get(k) ?? { rental: r.rental, surface: r.surface, method, units: 0, events: 0 };
    s.units += r.units;
    s.events += r.events;
    sums.set(k, s);
  }
  const rows = [...sums.values()].map((s) => [s.rental, s.surface, s.method, String(s.units), String(s.events)]);
  rows.push(['TOTAL', '', '', String(report.totals.units), String(report.totals.events)]);
  const head = ['RENTAL', 'SURFACE', 'METHOD', 'UNITS', 'EVENTS'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (c: string[]): string => c.map((x, i) => (i >= 3 ? x.padStart(widths[i]!) : x.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(head), ...rows.map(line)].join('\n') + '\n';
}
