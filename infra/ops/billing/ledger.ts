import type { BusMessage } from '../../../bus/bus';
import { decodeUsageEvent } from '../../../bus/topics/usage-events';

// What billing knows about one partition of usage.events: units summed per rental × surface × method × hour
// (EVM rows also by chain), the next offset to read, and the ids seen lately. Pure: the job decides when it
// is made durable. Offsets make replays exact (a record below nextOffset is already counted); ids catch the
// producer's own duplicates (at-least-once delivery writes a retried record twice, close together in the log).
// Offsets are positions in one log: a ledger names its log (the bus's LogIdentity id) and keeps the last record
// it read as a marker, so a job can tell a replay of its own log from a new log under the same topic name
// (log-check.ts) before it skips anything.

/** 2: `log` and `last` (version 1 ledgers are read as of an unrecorded log, store.ts). */
export const LEDGER_VERSION = 2;
/** Ids remembered per partition for deduplication; a producer's retry lands well inside this distance. */
export const RECENT_IDS = 20_000;

export interface BillingRow {
  hour: string;
  rental: string;
  surface: string;
  method: string;
  chain?: number;
  units: number;
  /** Calls metered (each usage event counts `calls` of them: 1 in version 1 records). */
  events: number;
}

export interface PartitionLedger {
  version: number;
  topic: string;
  partition: number;
  /** The log the offsets belong to (the bus's LogIdentity id); '' for a ledger written before logs were recorded. */
  log: string;
  /** Kafka-style: the offset of the next record to count, as a decimal string. */
  nextOffset: string;
  /** The last record read (offset nextOffset - 1): its offset and append time, the marker log-check.ts checks. */
  last?: { offset: string; timestamp: number };
  rows: Record<string, BillingRow>;
  /** Oldest first; at most RECENT_IDS. */
  recentIds: string[];
  /** Records counted, duplicates skipped, undecodable records skipped. */
  counted: number;
  duplicates: number;
  invalid: number;
}

export function emptyLedger(topic: string, partition: number, log = ''): PartitionLedger {
  return { version: LEDGER_VERSION, topic, partition, log, nextOffset: '0', rows: {}, recentIds: [], counted: 0, duplicates: 0, invalid: 0 };
}

export function hourOf(time: string): string {
  const d = new Date(time);
  d.setUTCMinutes(0, 0, 0);
  return d.toISOString().replace('.000Z', 'Z');
}

export function rowKey(e: { rental: string; surface: string; method: string; chain?: number }, hour: string): string {
  return `${hour}|${e.rental}|${e.surface}|${e.method}|${e.chain ?? ''}`;
}

/**
 * The ledger that replaces one found to belong to another log: counting starts over at offset 0 of `log`. The ids
 * seen lately stay: usage event ids are unique whatever log carries them, so an event read again is still skipped
 * (the safety net should a log be taken for another when it is not).
 */
export function ledgerForNewLog(old: PartitionLedger, log: string): PartitionLedger {
  return { ...emptyLedger(old.topic, old.partition, log), recentIds: [...old.recentIds] };
}

/** Working state of a ledger: the id set beside the persisted list. */
export class LedgerState {
  private readonly ids: Set<string>;

  constructor(readonly ledger: PartitionLedger) {
    this.ids = new Set(ledger.recentIds);
  }

  /** Applies messages of this ledger's partition, in order; returns how many were counted. */
  apply(messages: readonly BusMessage[]): number {
    const l = this.ledger;
    let next = BigInt(l.nextOffset);
    let counted = 0;
    for (const m of messages) {
      const offset = BigInt(m.offset);
      if (offset < next) continue; // already in the durable ledger (a replay after a crash or a rebalance)
      next = offset + 1n;
      l.last = { offset: m.offset, timestamp: m.timestamp };
      const e = m.value === null ? { error: 'tombstone' } : decodeUsageEvent(m.value);
      if ('error' in e) {
        l.invalid++;
        continue;
      }
      if (this.ids.has(e.id)) {
        l.duplicates++;
        continue;
      }
      this.remember(e.id);
      const hour = hourOf(e.time);
      const key = rowKey(e, hour);
      let row = l.rows[key];
      if (row === undefined) {
        row = { hour, rental: e.rental, surface: e.surface, method: e.method, units: 0, events: 0 };
        if (e.chain !== undefined) row.chain = e.chain;
        l.rows[key] = row;
      }
      row.units += e.units;
      row.events += e.calls; // calls, not records: a version 2 event counts its request's calls of one method
      counted++;
    }
    l.counted += counted;
    l.nextOffset = next.toString();
    return counted;
  }

  private remember(id: string): void {
    const l = this.ledger;
    this.ids.add(id);
    l.recentIds.push(id);
    if (l.recentIds.length > RECENT_IDS * 1.25) {
      // Trim in chunks so the array is not shifted on every event.
      for (const old of l.recentIds.splice(0, l.recentIds.length - RECENT_IDS)) this.ids.delete(old);
    }
  }
}

/** Totals over ledgers, sorted by hour, rental, surface, method, chain. */
export function mergeRows(ledgers: Iterable<PartitionLedger>): BillingRow[] {
  const out = new Map<string, BillingRow>();
  for (const l of ledgers) {
    for (const [k, r] of Object.entries(l.rows)) {
      const o = out.get(k);
      if (o === undefined) out.set(k, { ...r });
      else {
        o.units += r.units;
        o.events += r.events;
      }
    }
  }
  return [...out.values()].sort((a, b) => rowKey(a, a.hour).localeCompare(rowKey(b, b.hour)));
}
