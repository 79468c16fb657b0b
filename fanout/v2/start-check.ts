import { TopicTag, type Position } from './cursor';
import type { SlotMark, SlotTimeline } from './slot-timeline';

// Is a start still retained, and what is the oldest one that is? Judged per topic, on the topics the stream reads
// only: a stream without entries is not refused because stream.entries (ticks included, the fastest topic) has
// rolled over while its transactions are still held. A topic the stream does not read is raised to its first
// retained offset instead (nothing of it would have been sent to the stream). The oldest point an OUT_OF_RANGE
// names is one the same check accepts: for a cursor, the cursor raised to the first retained offsets where it is
// below, and nowhere moved back; the slot, the oldest one whose start is retained on the topics the stream reads.
// It is the retained edge when the check ran: sent back at once it is accepted (the hub checks against first
// offsets it refreshes every second), and what retention drops meanwhile comes as a retention Gap.

/** The topics a stream reads, as its Start and its filters at start say. */
export interface StreamReads {
  /** A filter delivered DECODED, or no filter yet (filters added later read from the start point on). */
  transactions: boolean;
  /** Start.slots: stream.slots and stream.slot-status. */
  slots: boolean;
  /** Start.entries, or a filter delivered RAW. */
  entries: boolean;
}

export const READS_ALL: StreamReads = { transactions: true, slots: true, entries: true };

export function readsTag(r: StreamReads, tag: TopicTag): boolean {
  if (tag === TopicTag.transactions) return r.transactions;
  if (tag === TopicTag.entries) return r.entries;
  return r.slots;
}

/** The first partition of a topic the stream reads where `pos` is below the first retained offset, or null. */
export function firstDropped(pos: Position, starts: Position, reads: StreamReads): { tag: TopicTag; partition: number } | null {
  for (const [tag, offs] of pos) {
    if (!readsTag(reads, tag)) continue;
    const st = starts.get(tag);
    if (st === undefined) continue;
    for (let p = 0; p < offs.length; p++) if (offs[p]! < (st[p] ?? 0)) return { tag, partition: p };
  }
  return null;
}

/** `pos` (in place) raised to `starts` on the topics the stream does not read. */
export function raiseUnread(pos: Position, starts: Position, reads: StreamReads): void {
  for (const [tag, offs] of pos) {
    if (readsTag(reads, tag)) continue;
    const st = starts.get(tag);
    if (st !== undefined) for (let p = 0; p < offs.length; p++) offs[p] = Math.max(offs[p]!, st[p] ?? 0);
  }
}

/** A copy of `pos` raised to `floor` wherever it is below (never moved back). */
export function raisedTo(pos: Position, floor: Position): Position {
  const out: Position = new Map();
  for (const [tag, offs] of pos) {
    const f = floor.get(tag);
    out.set(
      tag,
      offs.map((o, p) => Math.max(o, f?.[p] ?? 0)),
    );
  }
  return out;
}

/**
 * The oldest mark of `timeline` whose slot start `retained` accepts. Slot starts later in time are accepted if an
 * earlier one is (retention drops from the front), so a binary search over the marks in slot order (their append
 * times are nearly in order), then a few steps forward where the order is not exact.
 */
export async function oldestRetainedMark(timeline: SlotTimeline, retained: (m: SlotMark) => Promise<boolean>): Promise<SlotMark | undefined> {
  let lo = 0;
  let hi = timeline.size;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (await retained(timeline.at(mid)!)) hi = mid;
    else lo = mid + 1;
  }
  for (let i = lo; i < Math.min(timeline.size, lo + 8); i++) if (await retained(timeline.at(i)!)) return timeline.at(i);
  return undefined;
}
