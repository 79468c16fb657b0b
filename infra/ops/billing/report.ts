import path from 'node:path';
import { mergeRows, type BillingRow, type PartitionLedger } from './ledger';
import { loadAllLedgers, loadArchives, writeDurable, type ArchivedLog } from './store';

// The combined report of a billing directory, from its partition ledgers: report.json (rows plus where each
// partition stands) and report.csv (the rows), both written atomically. `billing report` prints the table.
// Ledgers archived because their log is gone (log-check.ts) count in the rows and totals like the current ones:
// that usage happened. `logs` gives the totals per log, so a restart of the embedded bus or a recreated topic shows
// as two logs whose totals add up to the whole.

export interface ReportLog {
  /** The log's id (the bus's LogIdentity), '' when a ledger predates recorded logs. */
  log: string;
  /** The archive folder its ledgers are in; null for the ledgers being counted now. */
  archive: string | null;
  ledgers: number;
  units: number;
  events: number;
}

export interface Report {
  generatedAt: string;
  /** The current ledgers. */
  partitions: Array<{ topic: string; partition: number; log: string; nextOffset: string; counted: number; duplicates: number; invalid: number }>;
  logs: ReportLog[];
  /** Every ledger's rows, archived ones included. */
  rows: BillingRow[];
  totals: { units: number; events: number };
}

function sums(ledgers: PartitionLedger[]): { units: number; events: number } {
  let units = 0;
  let events = 0;
  for (const l of ledgers) {
    for (const r of Object.values(l.rows)) {
      units += r.units;
      events += r.events;
    }
  }
  return { units, events };
}

export function buildReport(ledgers: PartitionLedger[], archives: ArchivedLog[] = []): Report {
  const rows = mergeRows([...archives.flatMap((a) => a.ledgers), ...ledgers]);
  const logs: ReportLog[] = archives.map((a) => ({ log: a.log, archive: a.name, ledgers: a.ledgers.length, ...sums(a.ledgers) }));
  for (const log of [...new Set(ledgers.map((l) => l.log))].sort()) {
    const of = ledgers.filter((l) => l.log === log);
    logs.push({ log, archive: null, ledgers: of.length, ...sums(of) });
  }
  return {
    generatedAt: new Date().toISOString(),
    partitions: ledgers.map((l) => ({ topic: l.topic, partition: l.partition, log: l.log, nextOffset: l.nextOffset, counted: l.counted, duplicates: l.duplicates, invalid: l.invalid })),
    logs,
    rows,
    totals: { units: rows.reduce((s, r) => s + r.units, 0), events: rows.reduce((s, r) => s + r.events, 0) },
  };
}

/** The report of a billing directory: its current ledgers and its archives. */
export function reportOf(dir: string): Report {
  return buildReport(loadAllLedgers(dir), loadArchives(dir));
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
  const report = reportOf(dir);
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
  // Which logs the totals come from: one line each, and their sum (the TOTAL above).
  const logRows = report.logs.map((l) => [l.log === '' ? '(not recorded)' : l.log, l.archive === null ? 'current' : `archived ${l.archive}`, String(l.ledgers), String(l.units), String(l.events)]);
  logRows.push(['ALL LOGS', '', '', String(report.totals.units), String(report.totals.events)]);
  const logHead = ['LOG', 'STATE', 'LEDGERS', 'UNITS', 'EVENTS'];
  const lw = logHead.map((h, i) => Math.max(h.length, ...logRows.map((r) => r[i]!.length)));
  const logLine = (c: string[]): string => c.map((x, i) => (i >= 2 ? x.padStart(lw[i]!) : x.padEnd(lw[i]!))).join('  ').trimEnd();
  return [line(head), ...rows.map(line), '', logLine(logHead), ...logRows.map(logLine)].join('\n') + '\n';
}
