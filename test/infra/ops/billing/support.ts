import { spawn, type ChildProcess } from 'node:child_process';
import { mergeRows } from '../../../../infra/ops/billing/ledger';
import { loadAllLedgers, loadArchives } from '../../../../infra/ops/billing/store';
import { cliCommand } from '../../../support/paths';

// What the billing tests share: the real `meridian billing run` in a child process (so it can be SIGKILLed),
// and the totals its ledgers hold.

export interface BillingChild {
  proc: ChildProcess;
  stderr(): string;
  exited(): Promise<number | null>;
}

export function startBillingChild(o: { brokers: string[]; group: string; outDir: string; topic: string }): BillingChild {
  const { cmd, args } = cliCommand();
  let err = '';
  const proc = spawn(cmd, [...args, 'billing', 'run', '--group', o.group, '--out', o.outDir, '--topic', o.topic], {
    env: { ...process.env, KAFKA_BROKERS: o.brokers.join(',') },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return {
    proc,
    stderr: () => err,
    exited: () => new Promise((r) => (proc.exitCode !== null || proc.signalCode !== null ? r(proc.exitCode) : proc.once('exit', (code) => r(code)))),
  };
}

/**
 * Units per "rental|method" and the number of events, over the ledgers of `dirs` (archived ones included: what was
 * billed), for rentals starting with `prefix`.
 */
export function totalsIn(dirs: string[], prefix: string): { byKey: Map<string, number>; events: number } {
  const rows = mergeRows(dirs.flatMap((d) => [...loadArchives(d).flatMap((a) => a.ledgers), ...loadAllLedgers(d)])).filter((r) => r.rental.startsWith(prefix));
  const byKey = new Map<string, number>();
  let events = 0;
  for (const r of rows) {
    byKey.set(`${r.rental}|${r.method}`, (byKey.get(`${r.rental}|${r.method}`) ?? 0) + r.units);
    events += r.events;
  }
  return { byKey, events };
}
