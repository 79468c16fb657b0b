import type { Bus, LogIdentity } from '../../../bus/bus';
import type { PartitionLedger } from './ledger';

// Does a ledger's offsets belong to the log the topic carries now? A job asks before it skips anything below a
// ledger's nextOffset: the embedded bus starts its logs at offset 0 on every start, and on Kafka a topic deleted
// and recreated (or a new cluster behind the same brokers) does too. Skipping there would drop real usage.
//
// In order, for a ledger of partition p with nextOffset N > 0 (a ledger at 0 skips nothing):
//   1. its log id must be the topic's (on an exact bus, embedded, a different id settles it). A ledger written
//      before logs were recorded ('') is of another log on an exact bus; elsewhere it goes on to the checks below
//      (it has no marker either, so only the end offset can tell; one that passes is adopted).
//   2. the log must reach N (end offset ≥ N): offsets are never reused, so a log that ends below N started over.
//   3. not exact (Kafka: the id is the cluster and the topic name, a recreated topic keeps it) — the marker. The
//      ledger keeps the last record it read, offset O = N − 1 and append time T. Append times only grow along a
//      partition (LogAppendTime, bus/kafka.ts), so in the same log the first record appended after T comes after O.
//      A log created after T holds only records appended after T, from its own start (offset 0 ≤ O): if the first
//      offset with append time > T is ≤ O, the records there are not the ones the ledger read. This is wrong only
//      if the broker's clock stepped back past T: the same log is then taken for a new one and its retained records
//      are read again, of which the ids the new ledger keeps (ledger.ts ledgerForNewLog) still skip the latest
//      RECENT_IDS.

export type LogVerdict = { same: true } | { same: false; why: string };

/** What the checks read from the bus for one topic: one call each, shared by its partitions. */
export class LogProbe {
  private ends: Promise<Map<number, string>> | undefined;
  private readonly after = new Map<number, Promise<Map<number, string>>>();

  constructor(
    private readonly bus: Bus,
    readonly topic: string,
    readonly identity: LogIdentity,
  ) {}

  static async of(bus: Bus, topic: string): Promise<LogProbe> {
    return new LogProbe(bus, topic, await bus.logIdentity(topic));
  }

  endOf(partition: number): Promise<bigint> {
    this.ends ??= this.bus.endOffsets(this.topic);
    return this.ends.then((m) => BigInt(m.get(partition) ?? '0'));
  }

  /** The first offset of the partition appended after timeMs (its end offset when none). */
  firstAfter(partition: number, timeMs: number): Promise<bigint> {
    let p = this.after.get(timeMs);
    if (p === undefined) {
      p = this.bus.offsetsForTime(this.topic, timeMs + 1);
      this.after.set(timeMs, p);
    }
    return p.then((m) => BigInt(m.get(partition) ?? '0'));
  }
}

export async function checkLedgerLog(l: PartitionLedger, probe: LogProbe): Promise<LogVerdict> {
  const next = BigInt(l.nextOffset);
  if (next === 0n) return { same: true };
  const id = probe.identity;
  if (l.log !== id.id && (l.log !== '' || id.exact)) {
    return { same: false, why: `the ledger's offsets are of log ${l.log === '' ? '(not recorded)' : l.log}; ${probe.topic} is now log ${id.id}` };
  }
  const end = await probe.endOf(l.partition);
  if (end < next) return { same: false, why: `log ${id.id} partition ${l.partition} ends at offset ${end}, below the ledger's next offset ${next}: its offsets started over` };
  if (!id.exact && l.last !== undefined) {
    const first = await probe.firstAfter(l.partition, l.last.timestamp);
    if (first <= BigInt(l.last.offset)) {
      return {
        same: false,
        why: `partition ${l.partition}: the first record appended after the ledger's last one (offset ${l.last.offset}, ${new Date(l.last.timestamp).toISOString()}) is at offset ${first}; the topic was recreated`,
      };
    }
  }
  return { same: true };
}
