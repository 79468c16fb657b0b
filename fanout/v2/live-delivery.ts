import type { TopicTag } from './cursor';
import type { V2Session } from './session';

// The one per-stream delivery loop of the live hub (hub.ts): every kind of live record — a transaction to the
// streams its filters match, an entry, a slot status to every stream that asked — reaches each stream the same
// way. A stream gets an update only while live, past the floor its replay left at this record's partition, and at
// or above its slot floor; the record's shared part is encoded once per variant with the hub's cursor, or, for a
// stream resumed ahead of the hub on some partition (rare, short), with its own.

/** What one live record gives the streams `T` names (a stream, or a filter match naming one). */
export interface LiveUpdate<T> {
  stream(t: T): V2Session;
  /**
   * Which shared part the stream gets (0 or 1: e.g. a transaction without and with its loaded addresses), or -1
   * for none. Called once per eligible stream, after the floors: it may count the update as sent (slot statuses).
   */
  variant(t: T, s: V2Session): number;
  encode(cursor: Buffer, variant: number): Buffer;
  deliver(t: T, s: V2Session, body: Buffer, cursor: Buffer): void;
}

export class LiveDelivery {
  /** `cursor`: the hub's cursor after the record being delivered (the cursor every update of it carries). */
  constructor(private readonly cursor: () => Buffer) {}

  /** Delivers `u` for the record at (`tag`, `partition`, `offset`) of `slot` to each stream `items` names. */
  run<T>(items: Iterable<T>, tag: TopicTag, partition: number, offset: number, slot: bigint, u: LiveUpdate<T>): void {
    let cursor: Buffer | undefined;
    let part0: Buffer | undefined;
    let part1: Buffer | undefined;
    for (const t of items) {
      const s = u.stream(t);
      if (!s.isLive || !s.aboveFloor(tag, partition, offset) || slot < s.minSlot) continue;
      const v = u.variant(t, s);
      if (v < 0) continue;
      cursor ??= this.cursor();
      if (s.hasFloor) {
        const own = s.cursor();
        if (own !== cursor) {
          u.deliver(t, s, u.encode(own, v), own);
          continue;
        }
      }
      const body = v === 0 ? (part0 ??= u.encode(cursor, 0)) : (part1 ??= u.encode(cursor, v));
      u.deliver(t, s, body, cursor);
    }
  }
}
