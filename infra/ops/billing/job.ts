import fs from 'node:fs';
import type { Bus, BusMessage, Consumer } from '../../../bus/bus';
import { TOPIC } from '../../../bus/topics';
import { metrics as defaultRegistry, type Counter, type Gauge, type Registry } from '../../base/metrics';
import type { Log } from '../../base/log';
import { LedgerState, ledgerForNewLog, type PartitionLedger } from './ledger';
import { checkLedgerLog, LogProbe } from './log-check';
import { writeReport } from './report';
import { archiveLedger, ledgerFile, loadAllLedgers, loadLedger, saveLedger, stampOf } from './store';

// A billing job: a member of a consumer group on usage.events. Each batch (one partition) is applied to that
// partition's ledger and the ledger is written durably *before* the batch handler returns — the bus commits
// the group's offset only after that — so the ledger always holds at least what was committed, and its own
// nextOffset says exactly what it holds. Replays (a restart after SIGKILL, a rebalance) skip what the
// ledger already has; the producer's duplicates are skipped by id. Jobs that share one directory hand
// partitions over exactly; jobs with separate directories split the totals between them.
// A ledger's offsets are positions in one log. Before anything is skipped as already counted — when the job
// starts, when it loads a ledger, and whenever a batch starts below the ledger's nextOffset — the ledger is checked
// against the log the topic carries now (log-check.ts). A ledger of another log (the embedded bus restarted, a
// Kafka topic recreated) is archived beside the report and counting starts over at the new log's offset 0.

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
  /**
   * Waits until the ledgers hold everything on the topic now (lag 0), at most `timeoutMs`; false when time ran out.
   * A service stopping calls it after its usage producer has flushed, so the embedded bus's last events are billed
   * before the log goes with the process.
   */
  drain(timeoutMs: number): Promise<boolean>;
  /** Stops consuming (the running batch finishes and is committed) and writes the final report. */
  close(): Promise<void>;
}

/** How often drain() looks at the lag (a stop waits at most this much longer than needed). */
const DRAIN_POLL_MS = 50;
/** How often the lag gauge is refreshed: lag() asks the bus for end offsets and reads the ledgers. */
const LAG_GAUGE_MS = 5_000;

interface Held {
  state: LedgerState;
  /** mtime and size of the file as this job last wrote it: anything else means another job wrote it since. */
  mtimeMs: number;
  size: number;
  /** The ledger's nextOffset when it was last found to belong to the topic's log; null: not checked yet. */
  checkedAt: string | null;
}

export async function startBillingJob(bus: Bus, o: BillingJobOptions): Promise<BillingJob> {
  const topic = o.topic ?? TOPIC.usageEvents;
  fs.mkdirSync(o.outDir, { recursive: true });
  const registry = o.registry ?? defaultRegistry;
  const counted: Counter = registry.counter('meridian_billing_events_counted_total', 'Usage events added to billing ledgers');
  const dupes: Counter = registry.counter('meridian_billing_events_duplicate_total', 'Usage events skipped as duplicates (same id)');
  const invalid: Counter = registry.counter('meridian_billing_events_invalid_total', 'Usage records that did not decode');
  const archived: Counter = registry.counter('meridian_billing_ledgers_archived_total', 'Ledgers archived because their offsets were of another log');
  const held = new Map<number, Held>();
  const stats: BillingStats = { counted: 0, duplicates: 0, invalid: 0, batches: 0 };
  let dirty = false;

  // The topic's log as the job starts: what a ledger begun from nothing records (settle() asks again each time).
  const identity = (await LogProbe.of(bus, topic)).identity;

  /**
   * A ledger found to be of another log: archived (its totals stay in the report), replaced by an empty one of the
   * topic's log now. Returns the replacement.
   */
  const retire = (l: PartitionLedger, why: string, log: string, stamp: string): PartitionLedger => {
    const folder = archiveLedger(o.outDir, l, stamp, why);
    archived.inc();
    o.log.warn({ topic, partition: l.partition, ledgerLog: l.log, log, archive: folder, why }, 'billing ledger is of another log: archived; counting starts over on this log');
    const fresh = ledgerForNewLog(l, log);
    saveLedger(o.outDir, fresh);
    return fresh;
  };

  /**
   * Checks the ledger against the topic's log now; a ledger of another log is retired. `stamp`: when, in the archive
   * folder's name (one for every ledger retired together).
   */
  const settle = async (l: PartitionLedger, stamp?: string): Promise<PartitionLedger> => {
    const probe = await LogProbe.of(bus, topic);
    const v = await checkLedgerLog(l, probe);
    if (!v.same) return retire(l, v.why, probe.identity.id, stamp ?? stampOf(new Date()));
    if (l.log !== probe.identity.id) {
      // Empty, or a version 1 ledger that passed the checks a non-exact log allows: it names its log from now on.
      l.log = probe.identity.id;
      saveLedger(o.outDir, l);
    }
    return l;
  };

  const hold = (state: LedgerState, checkedAt: string | null): void => {
    const st = fs.statSync(ledgerFile(o.outDir, topic, state.ledger.partition));
    held.set(state.ledger.partition, { state, mtimeMs: st.mtimeMs, size: st.size, checkedAt });
  };

  /** The partition's ledger, checked against the log when it is (re)loaded or when `first` would replay below it. */
  const current = async (partition: number, first: bigint): Promise<LedgerState> => {
    const file = ledgerFile(o.outDir, topic, partition);
    const h = held.get(partition);
    let st: fs.Stats | undefined;
    try {
      st = fs.statSync(file);
    } catch {
      st = undefined;
    }
    if (h !== undefined && st !== undefined && st.mtimeMs === h.mtimeMs && st.size === h.size) {
      const next = h.state.ledger.nextOffset;
      if (first >= BigInt(next) || h.checkedAt === next) return h.state;
    }
    // First batch of this partition here, another job of the group wrote it since (a rebalance), or a replay:
    // (re)load and check before skipping anything.
    const loaded = loadLedger(o.outDir, topic, partition);
    const state = new LedgerState(BigInt(loaded.nextOffset) === 0n && loaded.log === '' ? { ...loaded, log: identity.id } : await settle(loaded));
    held.set(partition, { state, mtimeMs: -1, size: -1, checkedAt: state.ledger.nextOffset });
    return state;
  };

  // Before reading: ledgers of another log are archived now, so the report and lag() speak of this log from the start.
  const startStamp = stampOf(new Date());
  for (const l of loadAllLedgers(o.outDir).filter((x) => x.topic === topic)) {
    const settled = await settle(l, startStamp);
    hold(new LedgerState(settled), settled.nextOffset);
  }
  writeReport(o.outDir);

  const onBatch = async (messages: BusMessage[]): Promise<void> => {
    const first = messages[0];
    if (first === undefined) return;
    const state = await current(first.partition, BigInt(first.offset));
    const before = { d: state.ledger.duplicates, i: state.ledger.invalid };
    const n = state.apply(messages);
    saveLedger(o.outDir, state.ledger);
    hold(state, held.get(first.partition)?.checkedAt ?? null);
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

  // The consumer lag as a gauge for the alert rules (infra/ops/monitoring/alerts.yml): refreshed off the scrape
  // path, since lag() is a bus round trip; a refresh that fails (the bus going away) keeps the last value.
  let lastLag = 0;
  const lagGauge: Gauge = registry.gauge('meridian_billing_lag_records', `Records on the usage topic not yet in this job's ledgers (refreshed every ${LAG_GAUGE_MS / 1000} s)`, { group: o.group }, () => lastLag);
  let lagRefreshing = false;
  const lagTimer = setInterval(() => {
    if (lagRefreshing) return;
    lagRefreshing = true;
    job.lag().then(
      (n) => {
        lastLag = n;
        lagRefreshing = false;
      },
      () => {
        lagRefreshing = false;
      },
    );
  }, LAG_GAUGE_MS);
  lagTimer.unref();

  const job: BillingJob = {
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
    drain: async (timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if ((await job.lag()) === 0) return true;
        if (Date.now() >= deadline) return false;
        await new Promise((r) => setTimeout(r, DRAIN_POLL_MS));
      }
    },
    close: async () => {
      clearInterval(timer);
      clearInterval(lagTimer);
      registry.remove(lagGauge);
      await consumer.close();
      writeReport(o.outDir);
    },
  };
  return job;
}
