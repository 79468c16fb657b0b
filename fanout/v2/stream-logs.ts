import type { Bus, LogIdentity } from '../../bus/bus';
import { checkOffsets, LogProbe } from '../../bus/log-check';
import { logHash, TopicTag, type CursorLogs, type CursorStamp, type Marks, type Position } from './cursor';

// The logs behind the stream topics a hub reads, for its cursors: each topic's log (bus.logIdentity, hashed as a
// cursor carries it), and whether the log's id changes when the topic starts over (embedded: a new id per start)
// or not (Kafka: the cluster and the topic name). Where it does not, a cursor carries per partition the append time
// of the record just below its offset (Marks, cursor.ts): the marker bus/log-check.ts — the billing ledgers'
// check — reads to tell a recreated topic. Where the marker is not known (a partition the hub has read nothing from
// since it started, a slot or time start before its first record), only the end offset can tell.

interface TopicLogOf {
  identity: LogIdentity;
  hash: number;
}

/** Why a cursor's offsets are not of the logs this hub reads, or null when they are. */
export type LogMismatch = { topic: string; why: string } | null;

export class StreamLogs {
  private readonly logs = new Map<TopicTag, TopicLogOf>();

  /** Reads each topic's log; called once before the hub's reader starts (cursors made before name log 0). */
  async init(bus: Bus, topics: ReadonlyMap<TopicTag, string>): Promise<void> {
    for (const [tag, topic] of topics) {
      const identity = await bus.logIdentity(topic);
      this.logs.set(tag, { identity, hash: logHash(identity.id) });
      this.hashes[tag] = logHash(identity.id);
      this.marked[tag] = !identity.exact;
    }
  }

  /** The stamp of a position whose markers are `marks` (ignored on exact logs, whose cursors need none). */
  stamp(marks: Marks): CursorStamp {
    return {
      log: (tag) => this.hashes[tag] ?? 0,
      mark: (tag, p) => (this.marked[tag] === true ? (marks.get(tag)?.[p] ?? 0) : 0),
    };
  }

  /** By tag: the log hash, and whether cursors carry markers (not exact). Arrays: the stamp runs per record. */
  private readonly hashes: number[] = [];
  private readonly marked: boolean[] = [];

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
      if (theirs === undefined) continue; // a topic the cursor has no part for: the hub places it on this log
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
