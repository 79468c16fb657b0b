import type { StartFrom } from './bus';
import type { BatchHandler, Cursor } from './embedded-cursor';
import type { PartitionLog } from './embedded-log';

// A consumer group of the embedded bus. The group, not its members, owns the cursors: a cursor's position is
// the group's committed offset for that partition, so a member that joins later resumes where the last one
// stopped. Every join or leave reassigns all partitions round-robin over the live members subscribed to each
// topic (kafkajs's default assigner does the same). A partition that changes hands mid-batch is safe: its
// cursor runs one batch at a time, so the new owner's first batch waits for the old owner's to finish.

export interface Member {
  topics: readonly string[];
  from: StartFrom;
  onBatch: BatchHandler;
  owned: Cursor[];
}

export class Group {
  private members: Member[] = [];
  private readonly cursors = new Map<string, Cursor>();

  constructor(
    readonly id: string,
    private readonly logsOf: (topic: string) => PartitionLog[],
    private readonly newCursor: (log: PartitionLog, next: number) => Cursor,
  ) {}

  join(m: Member): void {
    this.members.push(m);
    this.rebalance();
  }

  /** Leaves the group; resolves once the batches this member was handling are done (and so committed). */
  async leave(m: Member): Promise<void> {
    const owned = m.owned;
    this.members = this.members.filter((x) => x !== m);
    m.owned = [];
    this.rebalance();
    await Promise.all(owned.map((c) => c.idle()));
  }

  /** Committed offsets, for tests and diagnostics: "topic/partition" → next offset. */
  committed(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [k, c] of this.cursors) if (c.committed) out.set(k, c.next);
    return out;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.cursors.values()].map((c) => c.stop()));
  }

  private rebalance(): void {
    for (const m of this.members) m.owned = [];
    const assigned = new Set<Cursor>();
    const topics = [...new Set(this.members.flatMap((m) => m.topics))].sort();
    let turn = 0;
    for (const topic of topics) {
      const subscribers = this.members.filter((m) => m.topics.includes(topic));
      for (const log of this.logsOf(topic)) {
        const owner = subscribers[turn++ % subscribers.length]!;
        const key = `${topic}/${log.partition}`;
        let cursor = this.cursors.get(key);
        if (cursor === undefined) {
          // No committed offset: `from` decides, as auto.offset.reset does in Kafka.
          cursor = this.newCursor(log, owner.from === 'beginning' ? log.start : log.end);
          this.cursors.set(key, cursor);
        }
        cursor.handler = owner.onBatch;
        owner.owned.push(cursor);
        assigned.add(cursor);
        cursor.wake();
      }
    }
    for (const [key, cursor] of this.cursors) {
      if (assigned.has(cursor)) continue;
      cursor.handler = null;
      // A position nobody committed is not an offset Kafka would remember either.
      if (cursor.pristine) {
        void cursor.stop();
        this.cursors.delete(key);
      }
    }
  }
}
