import type { Bus, LogIdentity } from '../../bus/bus';
import { checkOffsets, LogProbe } from '../../bus/log-check';
import { logHash, TopicTag, type CursorLogs, type CursorStamp, type Position } from './cursor';

// The logs behind the stream topics a hub reads, for its cursors: each topic's log (bus.logIdentity, hashed as a
// cursor carries it) and, on a bus whose log ids survive a recreated topic (Kafka), the append time of the last
// record the hub read on each partition — the marker a cursor carries (cursor.ts) so that a resume can tell a
// recreated topic (bus/log-check.ts, the billing ledgers' check).
//
// A marker is valid for any offset up to the hub's own position on that partition (every record below was
// appended no later than the last one the hub read there); past it (a stream resumed ahead of the hub) and on a
// partition the hub has read nothing from since it started, a cursor carries none, and only the end offset can
// tell a recreated topic there.

interface TopicLogOf {
  identity: LogIdentity;
  hash: number;
}

/** Why a cursor's offsets are not of the logs this hub reads, or null when they are. */
export type LogMismatch = { topic: string; why: string } | null;

export class StreamLogs implements CursorStamp {
  private readonly logs = new Map<TopicTag, TopicLogOf>();
  /** Per topic, the append time of the last record read on each partition (only on non-exact logs). */
  private readonly last = new Map<TopicTag, number[]>();

  constructor(private readonly position: Position) {}

  /** Reads each topic's log; called once before the hub's reader starts (cursors made before name log 0). */
  async init(bus: Bus, topics: ReadonlyMap<TopicTag, string>): Promise<void> {
    for (const [tag, topic] of topics) {
      const identity = await bus.logIdentity(topic);
      this.logs.set(tag, { identity, hash: logHash(identity.id) });
      if (!identity.exact) this.last.set(tag, []);
    }
  }

  /** A record of `tag` read at partition p (in order), appended at `timestamp`. */
  read(tag: TopicTag, p: number, timestamp: number): void {
    const l = this.last.get(tag);
    if (l !== undefined) l[p] = timestamp;
  }

  log(tag: TopicTag): number {
    return this.logs.get(tag)?.hash ?? 0;
  }

  mark(tag: TopicTag, p: number, offset: number): number {
    const l = this.last.get(tag);
    if (l === undefined || offset === 0 || offset > (this.position.get(tag)?.[p] ?? 0)) return 0;
    return l[p] ?? 0;
  }

  /**
   * Are the offsets of `pos` (a cursor's, with its `logs`) positions in the logs this hub reads? Each topic of
   * `pos` this hub reads: the log must be the same (by hash), and where log ids survive recreation, every partition
   * passes bus/log-check.ts's checks (end offset, marker).
   */
  async check(bus: Bus, pos: Position, logs: CursorLogs, topicOf: (tag: TopicTag) => string): Promise<LogMismatch> {
    for (const [tag, offs] of pos) {
      const mine = this.logs.get(tag);
      if (mine === undefined) continue;
      const topic = topicOf(tag);
      const theirs = logs.get(tag);
      if (theirs === undefined) continue; // a topic the cursor has no part for: the hub placed it on this log
      if (theirs.log !== mine.hash) {
        return { topic, why: `the cursor's offsets in ${topic} are of log ${hex(theirs.log)}, and ${topic} is now log ${hex(mine.hash)} (${mine.identity.id}): the bus was restarted or replaced, or the topic recreated` };
      }
      if (mine.identity.exact) continue;
      const probe = new LogProbe(bus, topic, mine.identity);
      for (let p = 0; p < offs.length; p++) {
        const m = theirs.marks[p] ?? 0;
        const marker = m === 0 || offs[p]! === 0 ? undefined : { offset: BigInt(offs[p]! - 1), timestamp: m, describe: `the cursor's marker (offset ${offs[p]! - 1}, ${new Date(m).toISOString()})` };
        const v = await checkOffsets(probe, p, BigInt(offs[p]!), marker, "the cursor's");
        if (!v.same) return { topic, why: `${topic} ${v.why}` };
      }
    }
    return null;
  }
}

const hex = (h: number): string => (h >>> 0).toString(16).padStart(8, '0');
