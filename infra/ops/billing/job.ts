import fs from 'node:fs';
import type { Bus, BusMessage, Consumer } from '../../../bus/bus';
import { TOPIC } from '../../../bus/topics';
import { metrics as defaultRegistry, type Counter, type Registry } from '../../base/metrics';
import type { Log } from '../../base/log';
import { LedgerState, type PartitionLedger } from './ledger';
import { writeReport } from './report';
import { ledgerFile, loadAllLedgers, loadLedger, saveLedger } from './store';

// A billing job: a member of a consumer group on usage.events. Each batch (one partition) is applied to that
// partition's ledger and the ledger is written durably *before* the batch handler returns — the bus commits
// the group's offset only after that — so the ledger always holds at least what was committed, and its own
// nextOffset says exactly what it holds. Replays (a restart after SIGKILL, a rebalance) skip what the
// ledger already has; the producer's duplicates are skipped by id. Jobs that share one directory hand
// partitions over exactly; jobs with separate directories split the totals between them.

export interface BillingJobOptions {
  group: string;
  outDir: string;
  topic?: string;
  log: Log;
  /** How often the combined report.json/.csv is rewritten while events arrive; default 1 s. */
  reportEveryMs?: number;
  registry?: Registry;
}

export interface BillingStats {
  counted: number;
  duplicates: number;
  invalid: number;
  batches: number;
}

export interface BillingJob {
  readonly ready: Promise<void>;
  stats(): BillingStats;
  /** Records on the topic not yet in this directory's ledgers. */
  lag(): Promise<number>;
  /** Stops consuming (the running batch finishes and is committed) and writes the final report. */
  close(): Promise<void>;
}

interface Held {
  state: LedgerState;
  /** mtime and size of the file as this job last wrote it: anything else means another job wrote it since. */
  mtimeMs: number;
  size: number;
}

export async function startBillingJob(bus: Bus, o: BillingJobOptions): Promise<BillingJob> {
  const topic = o.topic ?? TOPIC.usageEvents;
  fs.mkdirSync(o.outDir, { recursive: true });
  const registry = o.registry ?? defaultRegistry;
  const counted: Counter = registry.counter('meridian_billing_events_counted_total', 'Usage events added to billing ledgers');
  const dupes: Counter = registry.counter('meridian_billing_events_duplicate_total', 'Usage events skipped as duplicates (same id)');
  const invalid: Counter = registry.counter('meridian_billing_events_invalid_total', 'Usage records that did not decode');
  const held = new Map<number, Held>();
  const stats: BillingStats = { counted: 0, duplicates: 0, invalid: 0, batches: 0 };
  let dirty = false;

  const current = (partition: number): LedgerState => {
    const file = ledgerFile(o.outDir, topic, partition);
    const h = held.get(partition);
    let st: fs.Stats | undefined;
    try {
      st = fs.statSync(file);
    } catch {
      st = undefined;
    }
    if (h !== undefined && st !== undefined && st.mtimeMs === h.mtimeMs && st.size === h.size) return h.state;
    // First batch of this partition here, or another job of the group wrote it since (a rebalance): reload.
    const state = new LedgerState(loadLedger(o.outDir, topic, partition));
    held.set(partition, { state, mtimeMs: -1, size: -1 });
    return state;
  };

  const onBatch = (messages: BusMessage[]): void => {
    const first = messages[0];
    if (first === undefined) return;
    const state = current(first.partition);
    const before = { d: state.ledger.duplicates, i: state.ledger.invalid };
    const n = state.apply(messages);
    saveLedger(o.outDir, state.ledger);
    const st = fs.statSync(ledgerFile(o.outDir, topic, first.partition));
    held.set(first.partition, { state, mtimeMs: st.mtimeMs, size: st.size });
    const d = state.ledger.duplicates - before.d;
    const i = state.ledger.invalid - before.i;
    stats.counted += n;
    stats.duplicates += d;
    stats.invalid += i;
    stats.batches++;
    counted.inc(n);
    dupes.inc(d);
    invalid.inc(i);
    dirty = true;
  };

  const consumer: Consumer = await bus.consume({ topics: [topic], groupId: o.group, from: 'beginning', onBatch });
  const timer = setInterval(() => {
    if (!dirty) return;
    dirty = false;
    try {
      writeReport(o.outDir);
    } catch (err) {
      o.log.warn({ err }, 'billing report write failed; the ledgers are intact and it is retried');
      dirty = true;
    }
  }, o.reportEveryMs ?? 1_000);
  timer.unref();

  return {
    ready: consumer.ready,
    stats: () => ({ ...stats }),
    lag: async () => {
      const ends = await bus.endOffsets(topic);
      const at = new Map<number, PartitionLedger>(loadAllLedgers(o.outDir).filter((l) => l.topic === topic).map((l) => [l.partition, l]));
      for (const [p, h] of held) at.set(p, h.state.ledger);
      let lag = 0n;
      for (const [p, end] of ends) {
        const d = BigInt(end) - BigInt(at.get(p)?.nextOffset ?? '0');
        if (d > 0n) lag += d;
      }
      return Number(lag);
    },
    close: async () => {
      clearInterval(timer);
      await consumer.close();
      writeReport(o.outDir);
    },
  };
}
