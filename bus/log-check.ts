import type { Bus, LogIdentity } from './bus';

// Do offsets kept outside the bus still belong to the log a topic carries now? Whoever keeps offsets (billing
// ledgers, stream v2 cursors) asks before it trusts one: the embedded bus starts its logs at offset 0 on every
// start, and on Kafka a topic deleted and recreated (or a new cluster behind the same brokers) does too.
//
// The caller compares log ids first (on an exact bus, embedded, a different id settles it). What is left, for an
// offset N > 0 of partition p kept against a log with the topic's id (checkOffsets):
//   1. the log must reach N (end offset ≥ N): offsets are never reused, so a log that ends below N started over.
//   2. not exact (Kafka: the id is the cluster and the topic name, a recreated topic keeps it) — the marker: a record
//      below N, at offset O, and an append time T no earlier than that record's. Append times only grow along a
//      partition (LogAppendTime, bus/kafka.ts), so in the same log the first record appended after T comes after O.
//      A log created after T holds only records appended after T, from its own start: if the first offset with
//      append time > T is ≤ O, the records there are not the ones the offsets were read from. This is wrong only if
//      the broker's clock stepped back past T: the same log is then taken for a new one.
//      Without a marker only the end offset can tell.

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

/** A record below the kept offset and a time no earlier than its append time (see the header, step 2). */
export interface LogMarker {
  offset: bigint;
  timestamp: number;
  /** How a verdict names it, e.g. "the ledger's last one (offset 19, <time>)". */
  describe: string;
}

/**
 * Steps 1 and 2 of the header for `next` (the kept next offset of `partition`), once the ids agree. `whose` names
 * the keeper in a verdict ("the ledger's", "the cursor's").
 */
export async function checkOffsets(probe: LogProbe, partition: number, next: bigint, marker: LogMarker | undefined, whose: string): Promise<LogVerdict> {
  if (next === 0n) return { same: true };
  const id = probe.identity;
  const end = await probe.endOf(partition);
  if (end < next) return { same: false, why: `log ${id.id} partition ${partition} ends at offset ${end}, below ${whose} next offset ${next}: its offsets started over` };
  if (!id.exact && marker !== undefined) {
    const first = await probe.firstAfter(partition, marker.timestamp);
    if (first <= marker.offset) {
      return { same: false, why: `partition ${partition}: the first record appended after ${marker.describe} is at offset ${first}; the topic was recreated` };
    }
  }
  return { same: true };
}
