import type { Consumer } from '../../bus/bus';
import { decodeEntryRecord } from '../../bus/topics/stream-entries';
import { decodeSlotRecord } from '../../bus/topics/stream-slots';
import { decodeSlotStatusRecord, SlotStatusCode } from '../../bus/topics/stream-slot-status';
import { decodeTxRecord } from '../../bus/topics/stream-transactions';
import { withBlockRef } from '../../bus/topics/block-ref';
import { encodeEntryShared, encodeLoadedAddresses, encodeSlotShared, SlotStatus } from '../../proto/wire-v2';
import type { CompiledFilterSet } from '../filter/compile';
import { FilterIndex } from '../filter/filter-index';
import type { LoadedAddresses, LoadedAddressResolver, TableLookup } from '../filter/loaded-addresses';
import { recordLookups } from '../lookup-tables/read-lookups';
import { clonePosition, cloneMarks, TopicTag, type Marks, type Position } from './cursor';
import { beforeTicks, deliverTicks } from './entry-ticks';
import { matchRaw, matchTx, rawShared, txShared, withEntryOffset, type MatchTarget } from './record-updates';

// One stream's replay, from the bus position its start resolved to up to the hub's live position: a bus reader of
// its own, paced by the stream's queue and a rate, each record matched against this stream's filters only (an index
// of its own) and turned into the updates the live hub would have sent for it (record-updates.ts, the same code).
// The stream (session.ts) decides when it has caught up and hands over to live; everything between the start
// position and that moment is here.

/** One bus record as the replay reader hands it over. */
export interface ReplayRecord {
  tag: TopicTag;
  partition: number;
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
  timestamp: number;
  /** The record's headers (the `blk` block reference, bus/topics/block-ref.ts; a transaction's `lookups`,
   *  stream-transactions-lookups.ts). */
  headers?: Readonly<Record<string, Buffer>>;
}

/** What a replay needs of its hub (hub.ts). */
export interface ReplaySource {
  /** Opens a bus reader from `from` (independent, explicit offsets). */
  openReplay(from: Position, onBatch: (records: ReplayRecord[]) => Promise<void>): Promise<Consumer>;
  readonly resolver: LoadedAddressResolver;
  now(): number;
  /** A cursor of `p` with its markers `marks`, naming the hub's logs. */
  encodeCursor(p: Position, marks: Marks): Buffer;
  /** Whether slot statuses come from the status topic (then the slots topic gives none; hub.ts processSlot). */
  readonly statusTopic: boolean;
  readonly replayRatePerSec: number;
  readonly queueLimits: { maxBytes: number; maxMessages: number };
}

/** The stream a replay delivers to (session.ts): its start options, its queue, its deliver methods. */
export interface ReplayTarget extends MatchTarget {
  readonly minSlot: bigint;
  readonly slots: boolean;
  readonly entries: boolean;
  readonly queueDepth: number;
  readonly queueBytes: number;
  deliverTx(mask: number, set: CompiledFilterSet, shared: Buffer, cursor: Buffer, fromReplay: boolean): void;
  deliverSlot(shared: Buffer, cursor: Buffer, fromReplay: boolean): void;
  deliverEntry(shared: Buffer, cursor: Buffer, fromReplay: boolean): void;
  admitSlotStatus(slot: bigint, status: SlotStatusCode): boolean;
  /** Bus records [fromCursor, cursor) were lost to retention before the replay reached them. */
  gap(fromCursor: Buffer, cursor: Buffer, count: number): void;
  /** After each record: true when the stream has handed over to live (the replay is over). */
  checkCaughtUp(): boolean;
}

/** A replay waits while the stream's queue holds more than this (messages / bytes). */
const REPLAY_QUEUE_MESSAGES = 512;
const REPLAY_QUEUE_BYTES = 1 << 20;
const REPLAY_WAIT_MS = 2;

export class Replay {
  /** The next offset per partition of each topic: where the replay is. */
  readonly position: Position;
  /** The position's markers (cursor.ts Marks). */
  readonly marks: Marks;
  /** The marker the last record replaced: of the position before that record (a RAW transaction's cursor). */
  private prevMark = 0;
  private readonly index = new FilterIndex<ReplayTarget>();
  private consumer: Consumer | null = null;
  private stopped = false;
  /** A record is waiting for its lookup tables: no hand-over to live until it is delivered. */
  private waitingFlag = false;
  private tokens = 0;
  private tokensAt: number;

  constructor(
    private readonly target: ReplayTarget,
    private readonly src: ReplaySource,
    from: Position,
    marks: Marks | undefined,
  ) {
    this.position = clonePosition(from);
    this.marks = marks === undefined ? new Map() : cloneMarks(marks);
    this.tokensAt = src.now();
  }

  /** A record is being resolved: the stream may not hand over yet. */
  get waiting(): boolean {
    return this.waitingFlag;
  }

  /** The stream's filters changed (null: it has none). */
  setFilters(set: CompiledFilterSet | null): void {
    if (set === null) this.index.remove(this.target);
    else this.index.replace(this.target, set);
  }

  /** Has the replay reached `hub` on every partition of the topics it reads? */
  reached(hub: Position): boolean {
    for (const [tag, offs] of hub) {
      const m = this.position.get(tag);
      if (m === undefined) continue;
      for (let p = 0; p < offs.length; p++) if ((m[p] ?? 0) < offs[p]!) return false;
    }
    return true;
  }

  /** The replay's cursor (what its updates carry). */
  cursor(): Buffer {
    return this.src.encodeCursor(this.position, this.marks);
  }

  /** Opens the reader; `fail` when it cannot be opened. */
  open(filters: CompiledFilterSet | null, fail: (e: unknown) => void): void {
    this.setFilters(filters);
    this.tokensAt = this.src.now();
    this.src.openReplay(this.position, (records) => this.onBatch(records)).then(
      (c) => {
        if (this.stopped) void c.close();
        else this.consumer = c;
      },
      (e: unknown) => {
        if (!this.stopped) fail(e);
      },
    );
  }

  /** Stops reading (hand-over or end of the stream). */
  close(): void {
    this.stopped = true;
    const c = this.consumer;
    this.consumer = null;
    if (c !== null) void c.close(); // not awaited: we may be inside its handler
  }

  private async onBatch(records: ReplayRecord[]): Promise<void> {
    for (const r of records) {
      if (this.stopped) return;
      const pos = this.position;
      const offs = pos.get(r.tag);
      if (offs === undefined || r.partition >= offs.length) continue;
      const next = offs[r.partition]!;
      if (r.offset < next) continue; // a redelivery (reader restart): already handled
      if (!this.takeRoom()) {
        await this.room();
        if (this.stopped) return;
      }
      if (r.offset > next) this.retentionGap(r, next);
      offs[r.partition] = r.offset + 1;
      let mk = this.marks.get(r.tag);
      if (mk === undefined) this.marks.set(r.tag, (mk = []));
      this.prevMark = r.offset === next ? (mk[r.partition] ?? 0) : r.timestamp;
      mk[r.partition] = r.timestamp;
      const waiting = this.record(r);
      if (waiting !== undefined) {
        this.waitingFlag = true;
        await waiting;
        this.waitingFlag = false;
        if (this.stopped) return;
      }
      if (this.target.checkCaughtUp()) return;
    }
  }

  /** The bus dropped [next, r.offset) before the replay got there (embedded bus retention while we waited). */
  private retentionGap(r: ReplayRecord, next: number): void {
    const before = clonePosition(this.position);
    before.get(r.tag)![r.partition] = next;
    const after = clonePosition(this.position);
    after.get(r.tag)![r.partition] = r.offset;
    // The record below r.offset was lost: r was appended no earlier (a valid marker for that offset).
    const afterMarks = cloneMarks(this.marks);
    (afterMarks.get(r.tag) ?? [])[r.partition] = r.timestamp;
    this.target.gap(this.src.encodeCursor(before, this.marks), this.src.encodeCursor(after, afterMarks), r.offset - next);
  }

  /** One more record now, if the queue has room and the rate allows (no promise on the common path). */
  private takeRoom(): boolean {
    const now = this.src.now();
    const rate = this.src.replayRatePerSec;
    this.tokens = Math.min(rate / 10, this.tokens + ((now - this.tokensAt) * rate) / 1000);
    this.tokensAt = now;
    const q = this.src.queueLimits;
    const t = this.target;
    if (this.tokens >= 1 && t.queueDepth < Math.min(REPLAY_QUEUE_MESSAGES, q.maxMessages >> 1) && t.queueBytes < Math.min(REPLAY_QUEUE_BYTES, q.maxBytes >> 1)) {
      this.tokens -= 1;
      return true;
    }
    return false;
  }

  /** Waits until takeRoom() grants a record (or the replay is over). */
  private async room(): Promise<void> {
    while (!this.stopped && !this.takeRoom()) await new Promise((r) => setTimeout(r, REPLAY_WAIT_MS));
  }

  /**
   * Decodes and matches one record, delivering its updates to the stream. Returns a promise when the record waits
   * for its lookup tables (at most the resolver's bound): the replay reads nothing further, and the stream does not
   * hand over to live, until it settles.
   */
  private record(r: ReplayRecord): Promise<void> | undefined {
    if (r.value === null) return;
    const s = this.target;
    let cursor: Buffer | null = null;
    const at = (): Buffer => (cursor ??= this.cursor());
    if (r.tag === TopicTag.transactions) return this.transaction(r, at);
    if (r.tag === TopicTag.entries) return void this.entry(r, at);
    if (!s.slots) return;
    const now = this.src.now();
    if (r.tag === TopicTag.slotStatus) {
      const st = decodeSlotStatusRecord(r.value);
      if (st === null || st.slot < s.minSlot || !s.admitSlotStatus(st.slot, st.status)) return;
      const c = at();
      return void s.deliverSlot(encodeSlotShared(c, now, st.slot, st.status, st.observedAtMs, st.reason, st.block), c, true);
    }
    if (this.src.statusTopic) return; // statuses come from the status topic (hub.ts processSlot)
    const sr = decodeSlotRecord(r.value);
    if (sr === null || sr.slot < s.minSlot || !s.admitSlotStatus(sr.slot, SlotStatusCode.firstShredReceived)) return;
    const c = at();
    s.deliverSlot(encodeSlotShared(c, now, sr.slot, SlotStatus.firstShredReceived, sr.firstSeenMs), c, true);
  }

  private transaction(r: ReplayRecord, at: () => Buffer): Promise<void> | undefined {
    const d = decodeTxRecord(r.value!, r.headers);
    const s = this.target;
    if (!d.ok || d.record.slot < s.minSlot) return;
    const rec = withBlockRef(d.record, r.headers);
    const deliver = (lookups: readonly TableLookup[] | null, loaded: LoadedAddresses | null): void => {
      const { matches, loaded: l } = matchTx(this.index, this.src.resolver, rec, lookups, loaded, s.loadedMask !== 0);
      for (const x of matches) {
        const c = at();
        const withLoaded = l !== null && (x.mask & s.loadedMask) !== 0;
        s.deliverTx(x.mask, x.set, txShared(this.src.now(), c, r.key, rec, withLoaded ? encodeLoadedAddresses(l) : null), c, true);
      }
    };
    if (s.loadedMask === 0) return void deliver(null, null);
    const lookups = recordLookups(rec);
    if (lookups === null || lookups.length === 0) return void deliver(null, null);
    // One record of one stream at a time (the replay awaits it), so one resolution per replayed record.
    let sync = true;
    let now: LoadedAddresses | null = null;
    let wake: (() => void) | undefined;
    this.src.resolver.resolve(lookups, rec.slot, (loaded) => {
      if (sync) now = loaded;
      else {
        if (!this.stopped) deliver(lookups, loaded);
        wake?.();
      }
    });
    sync = false;
    const got: LoadedAddresses | null = now;
    if (got !== null) return void deliver(lookups, got);
    return new Promise<void>((resolve) => (wake = resolve));
  }

  /** One entry record: its Entry update, and its RAW transactions for this stream's filters. */
  private entry(rec: ReplayRecord, at: () => Buffer): void {
    const d = decodeEntryRecord(rec.value!);
    const s = this.target;
    if (!d.ok || d.record.slot < s.minSlot) return;
    const r = withBlockRef(d.record, rec.headers);
    if (s.entries) {
      const c = at();
      // The ticks the record carries come first, with the cursor before the record (entry-ticks.ts).
      if (r.ticks.length > 0) deliverTicks(s, beforeTicks(r, withEntryOffset(c, rec.partition, rec.offset, this.prevMark), this.src.now()), true);
      s.deliverEntry(encodeEntryShared(c, this.src.now(), r), c, true);
    }
    if (s.rawMask === 0) return;
    const list = matchRaw(this.index, r, () => true)?.get(s);
    if (list === undefined) return;
    const after = at();
    const before = withEntryOffset(after, rec.partition, rec.offset, this.prevMark);
    for (let k = 0; k < list.length; k++) {
      const c = k === list.length - 1 ? after : before;
      s.deliverTx(list[k]!.mask, list[k]!.set, rawShared(this.src.now(), c, r, list[k]!.i), c, true);
    }
  }
}
