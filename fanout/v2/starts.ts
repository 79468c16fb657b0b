import type { Bus } from '../../bus/bus';
import { streamError, type StreamError } from '../errors';
import { clonePosition, cursorText, decodeCursor, marksFor, TopicTag, type Marks, type Position } from './cursor';
import type { V2Start } from './request';
import type { ResolvedStart } from './session';
import type { SlotMark, SlotTimeline } from './slot-timeline';
import { firstDropped, oldestRetainedMark, raisedTo, raiseUnread, READS_ALL, readsTag, type StreamReads } from './start-check';
import type { StreamLogs } from './stream-logs';
import { toArray } from './to-array';

// Where a v2 start (cursor, slot, time) begins on the bus, and whether the bus still holds it: judged per topic on
// the topics the stream reads (start-check.ts), against the first retained offsets (cached, refreshed in the
// background), the slot timeline and the logs the cursors name (stream-logs.ts). A start the bus no longer holds
// gets OUT_OF_RANGE naming the oldest start that would work; a cursor of another log, FAILED_PRECONDITION.

/** What start resolution reads of the live hub (hub.ts). */
export interface StartView {
  readonly bus: Bus;
  readonly topics: { readonly slotStatus: string; readonly entries: string };
  /** The hub's live position and its markers. */
  readonly position: Position;
  readonly marks: Marks;
  readonly logs: StreamLogs;
  readonly timeline: SlotTimeline;
  /** Why stream.entries is not read (null when it is). */
  entriesOff(): string | null;
  /** The stream topics the hub reads, in tag order. */
  tags(): TopicTag[];
  topicOf(tag: TopicTag): string;
  livePosition(): Position;
  newest(): bigint;
  /** A cursor of `p` on the hub's logs, with the markers `marks` (default: from the hub's position). */
  cursorOf(p: Position, marks?: Marks): Buffer;
  now(): number;
  /** A start was refused OUT_OF_RANGE (the hub counts them). */
  onOutOfRange(): void;
}

/**
 * A transaction of slot S can reach stream.transactions before the stream.slots record of S's first shred only by
 * the two produce calls racing; a slot start begins this much earlier on the transaction topic and drops what is
 * older than S by its slot.
 */
const SLOT_START_MARGIN_MS = 2000;
/** How old the cached first retained offsets may be when a start is checked against them. */
const STARTS_MAX_AGE_MS = 10_000;

export class StartResolver {
  constructor(private readonly h: StartView) {}

  private async fetchOffsets(which: 'start' | 'end'): Promise<Position> {
    const tags = this.h.tags();
    const got = await Promise.all(tags.map((t) => (which === 'start' ? this.h.bus.startOffsets(this.h.topicOf(t)) : this.h.bus.endOffsets(this.h.topicOf(t)))));
    return new Map(tags.map((t, i) => [t, toArray(got[i]!)]));
  }

  /**
   * The first retained offsets, at most STARTS_MAX_AGE_MS old (a refresher keeps them so; a Kafka round trip per
   * start would cost most of the 100 ms OUT_OF_RANGE promises). Stale by up to that much, a start just past the
   * retention edge is accepted, and its replay then meets the missing records and says so with a retention Gap.
   */
  private async starts(): Promise<Position> {
    const c = this.startsCache;
    if (c !== null && this.h.now() - c.at < STARTS_MAX_AGE_MS) return c.starts;
    const starts = await this.fetchOffsets('start');
    this.startsCache = { at: this.h.now(), starts };
    return starts;
  }

  private startsCache: { at: number; starts: Position } | null = null;

  refresh(): void {
    if (this.refreshing) return;
    this.refreshing = true;
    this.fetchOffsets('start').then(
      (starts) => {
        this.refreshing = false;
        this.startsCache = { at: this.h.now(), starts };
      },
      () => void (this.refreshing = false),
    );
  }

  private refreshing = false;

  /** Forgets slot marks the bus no longer holds (the slots topic's first retained offsets). */
  private pruneTimeline(starts: Position): void {
    const slotStarts = starts.get(TopicTag.slots)!;
    for (let m = this.h.timeline.oldest; m !== undefined; ) {
      if (m.offset >= (slotStarts[m.partition] ?? 0)) return;
      this.h.timeline.dropBefore(m.partition, slotStarts[m.partition] ?? 0);
      m = this.h.timeline.oldest;
    }
  }

  /** The topics a slot start is checked on for the stream (the slots topic is judged by the timeline). */
  private slotChecked(reads: StreamReads): TopicTag[] {
    return [TopicTag.transactions, TopicTag.entries].filter((t) => readsTag(reads, t));
  }

  /**
   * The oldest point a start of this stream may name (start-check.ts): a cursor — `base` (a refused cursor) raised
   * to the first retained offsets, else where a start from the oldest retained slot begins, else the first retained
   * offsets — and that slot.
   */
  private async oldest(starts: Position, reads: StreamReads, base: Position | null): Promise<string> {
    this.pruneTimeline(starts);
    const checked = this.slotChecked(reads);
    // Each probe reads only the checked topics (a binary search: ~20 probes over a full timeline, on Kafka a
    // ListOffsets round trip per topic each; this runs on the refusal path only).
    const mark = await oldestRetainedMark(this.h.timeline, async (m) => (await this.retainedAt(m.appendedAtMs - SLOT_START_MARGIN_MS, starts, checked, true)) !== null);
    let pos = base === null ? null : raisedTo(base, starts);
    if (pos === null && mark !== undefined) pos = await this.slotStartAt(mark, starts, checked);
    pos ??= starts;
    return `cursor ${cursorText(this.h.cursorOf(raisedTo(pos, starts)))}${mark === undefined ? '' : `, slot ${mark.slot}`}`;
  }

  private async outOfRange(what: string, starts: Position, reads: StreamReads, base: Position | null = null): Promise<StreamError> {
    this.h.onOutOfRange();
    return streamError('outOfRange', { what, oldest: await this.oldest(starts, reads, base) });
  }

  private async otherLog(why: string, starts: Position, reads: StreamReads): Promise<StreamError> {
    return streamError('cursorOtherLog', { why, oldest: await this.oldest(starts, reads, null) });
  }

  /**
   * Where a start of this stream begins and whether the bus still holds it: judged per topic, on the topics the
   * stream reads (`reads`, start-check.ts); a topic it does not read is raised to its first retained offset.
   */
  async resolveStart(s: V2Start, entries = false, reads: StreamReads = READS_ALL): Promise<ResolvedStart | StreamError> {
    const from = s.from;
    if (from === undefined) return { position: null, minSlot: 0n };
    const starts = await this.starts();
    if ('cursor' in from) {
      const d = decodeCursor(from.cursor);
      if (!d.ok) return streamError('invalidStart', { why: `cursor: ${d.reason}` });
      // A cursor names the logs its offsets are of (cursor.ts); one of another log gets FAILED_PRECONDITION, never
      // data. One made before cursors named logs proves nothing: refused alike (on the embedded bus it is of
      // another log for certain, since a server before this one ran on a bus of its own).
      if (d.logs === null) return this.otherLog('the cursor was made before cursors named their log (version 1): nothing proves its offsets are of this log', starts, reads);
      const mismatch = await this.h.logs.check(this.h.bus, d.position, d.logs, (t) => this.h.topicOf(t));
      if (mismatch !== null) return this.otherLog(mismatch.why, starts, reads);
      const pos = d.position;
      const orig = clonePosition(pos);
      if (!pos.has(TopicTag.slots)) pos.set(TopicTag.slots, this.h.livePosition().get(TopicTag.slots)!);
      if (!this.h.position.has(TopicTag.slotStatus)) {
        // This fanout does not read the status topic: that part of the cursor has nothing to resume here.
        pos.delete(TopicTag.slotStatus);
      } else if (!pos.has(TopicTag.slotStatus)) {
        // A cursor from before the status topic (or from a fanout without it): place the status topic where the
        // cursor's slots position was appended, so the statuses of the slots it has not seen yet are replayed.
        pos.set(TopicTag.slotStatus, await this.statusPositionFor(pos.get(TopicTag.slots)!));
      }
      if (this.h.entriesOff() !== null) pos.delete(TopicTag.entries);
      else if (!pos.has(TopicTag.entries)) {
        // A cursor from before stream.entries was served: it names no point to resume entries from without a gap.
        if (entries) return streamError('invalidStart', { why: `cursor names no position in ${this.h.topics.entries} (made before entries were served): start entries and RAW from a slot or a time` });
        pos.set(TopicTag.entries, this.h.livePosition().get(TopicTag.entries)!);
      }
      // The bus's end offsets only matter for a cursor ahead of this hub (the hub never reads past the end).
      let ahead = false;
      for (const [tag, offs] of pos) offs.forEach((o, p) => (ahead ||= o > (this.h.position.get(tag)?.[p] ?? 0)));
      const ends = ahead ? await this.fetchOffsets('end') : this.h.position;
      for (const [tag, offs] of pos) {
        const st = starts.get(tag)!;
        const en = ends.get(tag)!;
        if (offs.length !== st.length) return streamError('invalidStart', { why: `cursor names ${offs.length} partitions of ${this.h.topicOf(tag)}, which has ${st.length}` });
        for (let p = 0; p < offs.length; p++) {
          if (offs[p]! > en[p]!) return streamError('invalidStart', { why: `cursor is ahead of this bus at ${this.h.topicOf(tag)}/${p} (a cursor of another cluster?)` });
        }
      }
      if (firstDropped(pos, starts, reads) !== null) return this.outOfRange(`cursor ${cursorText(from.cursor)}`, starts, reads, pos);
      raiseUnread(pos, starts, reads);
      const theirs = new Map([...d.logs].map(([t, l]) => [t, l.marks] as const));
      return { position: pos, minSlot: 0n, marks: marksFor(pos, [[orig, theirs], [this.h.position, this.h.marks]]) };
    }
    if ('slot' in from) {
      this.pruneTimeline(starts);
      const oldest = this.h.timeline.oldest;
      if (oldest === undefined || from.slot > this.h.timeline.newest!.slot) {
        // Nothing retained yet, or a slot not seen yet: live, and nothing older than the slot.
        if (oldest !== undefined || from.slot > this.h.newest()) return { position: null, minSlot: from.slot };
        return this.outOfRange(`slot ${from.slot}`, starts, reads);
      }
      if (from.slot < oldest.slot) return this.outOfRange(`slot ${from.slot}`, starts, reads);
      const pos = await this.slotStartAt(this.h.timeline.atOrAfter(from.slot)!, starts, this.slotChecked(reads));
      if (pos === null) return this.outOfRange(`slot ${from.slot}`, starts, reads);
      raiseUnread(pos, starts, reads);
      return { position: pos, minSlot: from.slot };
    }
    const pos = await this.retainedAt(from.timeMs, starts, this.h.tags().filter((t) => readsTag(reads, t)));
    if (pos === null) return this.outOfRange(`time ${new Date(from.timeMs).toISOString()}`, starts, reads);
    raiseUnread(pos, starts, reads);
    return { position: pos, minSlot: 0n };
  }

  /** Where a start from the slot of `mark` begins, or null when the bus no longer holds it on `checked`. */
  private async slotStartAt(mark: SlotMark, starts: Position, checked: readonly TopicTag[]): Promise<Position | null> {
    const pos = await this.retainedAt(mark.appendedAtMs - SLOT_START_MARGIN_MS, starts, checked);
    if (pos === null) return null;
    pos.get(TopicTag.slots)![mark.partition] = Math.min(pos.get(TopicTag.slots)![mark.partition]!, mark.offset);
    return pos;
  }

  /**
   * Offsets of the first records appended at or after `ms`, or null when a topic of `checked` no longer holds them:
   * when that is a partition's first retained record and the bus has dropped records before it, some of the dropped
   * ones may have been at or after `ms` (never a silent gap: the caller answers OUT_OF_RANGE).
   */
  private async retainedAt(ms: number, starts: Position, checked: readonly TopicTag[], checkedOnly = false): Promise<Position | null> {
    const pos: Position = new Map();
    for (const tag of checkedOnly ? checked : this.h.tags()) {
      const offs = toArray(await this.h.bus.offsetsForTime(this.h.topicOf(tag), ms));
      const st = starts.get(tag)!;
      if (checked.includes(tag)) for (let p = 0; p < offs.length; p++) if (offs[p]! <= st[p]! && st[p]! > 0) return null;
      pos.set(tag, offs);
    }
    return pos;
  }

  /**
   * Status-topic offsets for a cursor that has none: those of the first status records appended at or after the
   * first slots record the cursor had not been sent yet (less the slot start margin), from the slot timeline; live
   * when the cursor's slots position is the live one (or the timeline no longer holds it).
   */
  private async statusPositionFor(slotOffs: readonly number[]): Promise<number[]> {
    const live = this.h.livePosition().get(TopicTag.slotStatus)!;
    const at = this.h.timeline.appendedAtOffset(slotOffs);
    if (at === undefined) return live;
    const offs = toArray(await this.h.bus.offsetsForTime(this.h.topics.slotStatus, at - SLOT_START_MARGIN_MS));
    return offs.map((o, p) => Math.min(o, live[p] ?? o));
  }
}
