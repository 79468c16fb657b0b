import type { Rental } from '../../bus/topics/rentals';
import { frameHead, encodeFilterAck, encodeFilterIds, encodeGap, encodeHeartbeat, encodePong, encodeReplayComplete, FilterAckStatus, GapReason, stampSeq } from '../../proto/wire-v2';
import { streamError, type StreamError, type StreamErrorKind } from '../errors';
import { compileFilters, specKeyCount, type CompiledFilterSet, type FilterSpec } from '../filter/compile';
import { isEmptyExtra, isLimitError, type FilterPartLimits } from '../filter/compile-extra';
import type { FilterIndex } from '../filter/filter-index';
import type { QueueBudget } from '../queue-budget';
import type { StreamOrigin } from '../stream-limits';
import { SubscriberQueue, type Overflow, type Sink } from '../subscriber-queue';
import { UpdateRate } from '../update-rate';
import { clonePosition, cursorText, marksFor, TopicTag, type Marks, type Position } from './cursor';
import { Replay, type ReplayRecord, type ReplaySource, type ReplayTarget } from './replay';
import type { StreamReads } from './start-check';
import type { MessageEncoding } from '../../proto/grpc-compression';
import type { UpdateCompression } from './compression';
import type { V2Request } from './request';
import { SlotStatusOrder } from './slot-order';
import type { SlotStatusCode } from '../../bus/topics/stream-slot-status';

// One v2 Subscribe stream (proto/stream_v2.proto). Its rules:
//   - nothing but acknowledgements and pongs before `start`; filters added before it apply from the start point;
//   - each filter request is acknowledged by id, OK or a reason; a refused one changes nothing and the stream goes on;
//   - every update gets `seq` when it is handed to the transport (stampSeq), so updates dropped from the queue
//     never leave a hole; what was dropped is announced by a Gap before anything after it;
//   - replay (replay.ts): a bus reader of its own from the start position, paced by this stream's queue and a
//     rate, matched against this stream's filters only; the stream hands over to the hub's live records at the
//     first moment the replay's position has reached the hub's, with no record twice and none missed (per
//     partition, by offset);
//   - lag policy close: DATA_LOSS naming the cursor of the last update written; skip: Gap and carry on.

/** What the stream writes to and how it ends; the transport's call. */
export interface V2Port extends Sink {
  end(e?: StreamError): void;
}

/** A start as the hub resolved it: bus positions per topic, and a slot floor for slot starts. */
export interface ResolvedStart {
  /** Where to begin; null = live. */
  position: Position | null;
  /** The markers of `position` (cursor.ts Marks), where known. */
  marks?: Marks;
  minSlot: bigint;
}

/** What a session needs from its hub (hub.ts). */
export interface V2Context extends ReplaySource {
  readonly index: FilterIndex<V2Session>;
  limits: { maxFilters: number; maxKeysPerList: number; maxFilterNameLen: number; parts?: FilterPartLimits; maxKeysPerStream: number; maxFilterUpdatesPerSec: number; maxKeysTotal: number };
  readonly queueLimits: { maxBytes: number; maxMessages: number; maxLagMs: number };
  budget: QueueBudget;
  /** The hub's live position (next offset per partition of each topic) and its encoding. */
  hubPosition(): Position;
  hubCursor(): Buffer;
  /** The markers of the hub's position. */
  hubMarks(): Marks;
  /** Where a live start begins (the hub's position; the slots topic past the history read at start). */
  livePosition(): Position;
  newestSlot(): bigint;
  /**
   * `entries`: the stream reads stream.entries (Entry updates or RAW filters), so a cursor must name it. `reads`:
   * the topics the stream reads, the only ones retention is judged on (start-check.ts).
   */
  resolveStart(req: NonNullable<V2Request['start']>, entries: boolean, reads: StreamReads): Promise<ResolvedStart | StreamError>;
  /** Why this server serves no entries and no RAW (stream.entries is not read); null when it does. */
  readonly entriesUnavailable: string | null;
  /** This stream now has (true) or no longer has (false) a filter delivered RAW. */
  rawFilters(s: V2Session, on: boolean): void;
  /** The session now replays: the hub checks its hand-over after each live record. */
  watch(s: V2Session): void;
  /** Admits one more replay (process cap) and releases it. */
  admitReplay(): boolean;
  readonly maxReplays: number;
  releaseReplay(): void;
  /** This stream now has (true) or no longer has (false) a filter with match_loaded_addresses. */
  loadedFilters(s: V2Session, on: boolean): void;
  onWrite(bytes: number, isTx: boolean): void;
  /** Compresses shared parts once per encoding for the streams that negotiated one (compression.ts). */
  readonly compression: UpdateCompression;
  onEnd(s: V2Session, reason: StreamErrorKind | 'client' | 'server_close'): void;
}

export type { ReplayRecord };

type State = 'new' | 'resolving' | 'replaying' | 'live' | 'ended';

const MAX_FILTER_ID_BYTES = 128;

export class V2Session implements ReplayTarget {
  state: State = 'new';
  slots = false;
  /** Start.entries: Entry updates. */
  entries = false;
  minSlot = 0n;
  /** Statuses sent per slot, for once-each-in-order (slot-order.ts). */
  private readonly slotOrder = new SlotStatusOrder();
  filters: CompiledFilterSet | null = null;
  /** Bits (of a match mask over `filters`) of the filters with match_loaded_addresses. */
  loadedMask = 0;
  /** Bits of the filters delivered RAW (from stream.entries): RAW ones, and DEFAULT ones on a RAW stream. */
  rawMask = 0;
  private streamRaw = false;
  /** The filters as sent, options included (FilterSpec.options): what the next change is compiled from. */
  private readonly specs = new Map<string, FilterSpec>();
  private readonly idsCache = new Map<number, Buffer>();
  private readonly queue: SubscriberQueue;
  private readonly rate: UpdateRate;
  private seq = 0;
  /** Cursors of the updates pushed and not yet written (null for updates without one), oldest first. */
  private pending: Array<Buffer | null> = [];
  private pendingHead = 0;
  /** Cursor of the last update written that carried one (where a gap starts). */
  private lastWritten: Buffer | null = null;
  private skipPolicy = false;
  /** Live: records below these offsets were delivered by the replay (or precede a live start). */
  private floor: Position | null = null;
  /** The floor's markers (null: the hub's, for a live start). */
  private floorMarks: Marks | null = null;
  /** While replaying (replay.ts); null before and after. */
  private replay: Replay | null = null;
  /** Updates the replay delivered (ReplayComplete's count). */
  private replayed = 0;
  private replayAdmitted = false;
  /** Transactions written (usage metering). */
  private delivered = 0;

  constructor(
    readonly id: number,
    private readonly port: V2Port,
    private readonly ctx: V2Context,
    readonly rental?: Rental,
    readonly origin?: StreamOrigin,
    /** The response encoding the transport negotiated (grpc-accept-encoding) and announced in grpc-encoding. */
    readonly encoding: MessageEncoding = 'identity',
  ) {
    this.rate = new UpdateRate(ctx.limits.maxFilterUpdatesPerSec);
    this.queue = new SubscriberQueue(
      port,
      ctx.queueLimits,
      {
        onWrite: (bytes, tag, buf) => {
          stampSeq(buf, ++this.seq);
          const c = this.pending[this.pendingHead];
          this.pending[this.pendingHead++] = null;
          if (this.pendingHead > 1024 && this.pendingHead * 2 > this.pending.length) {
            this.pending = this.pending.slice(this.pendingHead);
            this.pendingHead = 0;
          }
          if (c !== null && c !== undefined) this.lastWritten = c;
          if (tag === GAP_TAG) this.unsentGap = null;
          if (tag === 1) this.delivered++;
          ctx.onWrite(bytes, tag === 1);
        },
        onOverflow: (o) => this.closeLagged(o),
        skipOnOverflow: (o) => this.skipLagged(o),
        afterSkip: () => this.afterSkip(),
      },
      ctx.budget,
      ctx.now,
    );
  }

  get isEnded(): boolean {
    return this.state === 'ended';
  }

  get isLive(): boolean {
    return this.state === 'live';
  }

  get isReplaying(): boolean {
    return this.state === 'replaying';
  }

  get queueDepth(): number {
    return this.queue.depth;
  }

  get queueBytes(): number {
    return this.queue.bytes;
  }

  takeDelivered(): number {
    const n = this.delivered;
    this.delivered = 0;
    return n;
  }

  // ---- requests -----------------------------------------------------------------------------------------------

  handle(r: V2Request): void {
    if (this.state === 'ended') return;
    if (r.ping !== undefined) this.push(encodePong(this.ctx.now(), r.ping), null, 0);
    if (r.add !== undefined) this.addFilter(r.add.id, r.add.spec);
    if (r.remove !== undefined) this.removeFilter(r.remove);
    if (r.start !== undefined) this.start(r.start);
  }

  private ack(id: string, status: FilterAckStatus, reason = '', reasonCode = ''): void {
    this.push(encodeFilterAck(this.ctx.now(), { id, status, reason, reasonCode }), null, 0);
  }

  private addFilter(id: string, spec: FilterSpec): void {
    if (id.length === 0 || Buffer.byteLength(id, 'utf8') > MAX_FILTER_ID_BYTES) return this.ack(id, FilterAckStatus.invalid, `filter id must be 1–${MAX_FILTER_ID_BYTES} bytes`, 'invalid_filter_id');
    const encoding = spec.options?.encoding ?? 'default';
    const matchLoaded = spec.options?.matchLoaded ?? false;
    const raw = encoding === 'raw' || (encoding === 'default' && this.streamRaw);
    const unavailable = this.ctx.entriesUnavailable;
    if (raw && unavailable !== null) return this.ack(id, FilterAckStatus.invalid, `TRANSACTION_ENCODING_RAW is not served here: ${unavailable}`, 'unsupported_encoding');
    // RAW transactions come from entry records, which carry no lookup-table resolution (hub.ts).
    if (raw && matchLoaded) return this.ack(id, FilterAckStatus.invalid, 'match_loaded_addresses is served with DECODED transactions only', 'unsupported_combination');
    if (raw && !isEmptyExtra(spec.extra)) return this.ack(id, FilterAckStatus.invalid, 'instruction, role, signature and vote filters are served with DECODED transactions only', 'unsupported_combination');
    const entries = new Map(this.specs);
    entries.set(id, spec);
    this.apply(id, entries);
  }

  private removeFilter(id: string): void {
    if (!this.specs.has(id)) return this.ack(id, FilterAckStatus.unknownFilter, `no filter with id ${JSON.stringify(id.slice(0, 64))}`, 'unknown_filter');
    const entries = new Map(this.specs);
    entries.delete(id);
    this.apply(id, entries);
  }

  /** Compiles the whole set with the change (unchanged filters are reused), or acknowledges why not. */
  private apply(id: string, entries: Map<string, FilterSpec>): void {
    const now = this.ctx.now();
    const lim = this.ctx.limits;
    if (!this.rate.allow(now)) return this.ack(id, FilterAckStatus.rateLimited, `more than ${lim.maxFilterUpdatesPerSec} filter requests per second`, 'subscribe_rate_limit');
    const list = [...entries];
    const keys = specKeyCount(list);
    if (keys > lim.maxKeysPerStream) return this.ack(id, FilterAckStatus.limitReached, `filters would hold ${keys} keys (at most ${lim.maxKeysPerStream} per stream)`, 'too_many_keys');
    if (this.ctx.index.totalKeys - this.ctx.index.keysOf(this) + keys > lim.maxKeysTotal) return this.ack(id, FilterAckStatus.limitReached, `the server holds its maximum of ${lim.maxKeysTotal} filter keys`, 'filter_capacity');
    if (list.length === 0) {
      this.specs.clear();
      this.setMasks(null);
      this.filters = null;
      this.ctx.index.remove(this);
      this.replay?.setFilters(null);
      this.idsCache.clear();
      return this.ack(id, FilterAckStatus.ok);
    }
    const compiled = compileFilters(list, lim, this.filters);
    if (!compiled.ok) {
      const e = compiled.error;
      const status = isLimitError(e.kind) ? FilterAckStatus.limitReached : FilterAckStatus.invalid;
      return this.ack(id, status, e.details, e.reason);
    }
    this.specs.clear();
    for (const [k, v] of list) this.specs.set(k, v);
    this.setMasks(compiled.set);
    this.filters = compiled.set;
    this.idsCache.clear();
    this.ctx.index.replace(this, compiled.set);
    this.replay?.setFilters(compiled.set);
    this.ack(id, FilterAckStatus.ok);
  }

  /**
   * Takes the option bits of `set` (compiled with it: filter/compile.ts FilterMasks); tells the hub when the stream
   * starts or stops needing tables, and having RAW filters.
   */
  private setMasks(set: CompiledFilterSet | null): void {
    const wasLoaded = this.loadedMask !== 0;
    const wasRaw = this.rawMask !== 0;
    const m = set?.masks;
    this.loadedMask = m?.loaded ?? 0;
    this.rawMask = m === undefined ? 0 : m.raw | (this.streamRaw ? m.default : 0);
    if (wasLoaded !== (this.loadedMask !== 0)) this.ctx.loadedFilters(this, this.loadedMask !== 0);
    if (wasRaw !== (this.rawMask !== 0)) this.ctx.rawFilters(this, this.rawMask !== 0);
  }

  private start(s: NonNullable<V2Request['start']>): void {
    if (this.state !== 'new') return this.fail(streamError('invalidStart', { why: 'already_started: a stream takes one Start' }));
    this.slots = s.slots;
    this.entries = s.entries ?? false;
    this.skipPolicy = s.lagPolicy === 'skip';
    const unavailable = this.ctx.entriesUnavailable;
    if ((s.raw || this.entries) && unavailable !== null) return this.fail(streamError('invalidStart', { why: `entries and TRANSACTION_ENCODING_RAW are not served here: ${unavailable}` }));
    if (s.raw) {
      const set = this.filters;
      const clash = set === null ? 0 : set.masks.loaded & set.masks.default;
      if (clash !== 0) {
        const id = set!.filters.find((f) => (clash & (1 << f.slot)) !== 0)!.name;
        return this.fail(streamError('invalidStart', { why: `filter ${JSON.stringify(id.slice(0, 64))} sets match_loaded_addresses, which is served with DECODED only: give it encoding DECODED` }));
      }
      const parts = set?.filters.find((f) => f.extra !== undefined && ((set.masks.default >>> f.slot) & 1) === 1);
      if (parts !== undefined) return this.fail(streamError('invalidStart', { why: `filter ${JSON.stringify(parts.name.slice(0, 64))} has instruction, role, signature or vote parts, which are served with DECODED only: give it encoding DECODED` }));
      this.streamRaw = true;
      this.setMasks(set);
    }
    if (s.from === undefined) {
      this.floor = this.ctx.livePosition();
      this.floorMarks = null;
      this.state = 'live';
      return;
    }
    this.state = 'resolving';
    this.ctx.resolveStart(s, this.entries || this.rawMask !== 0, this.reads()).then(
      (r) => this.begin(r),
      (e: unknown) => this.fail(streamError('replayFailed', { why: e instanceof Error ? e.message : String(e) })),
    );
  }

  /** The topics this stream reads as it starts (start-check.ts StreamReads). */
  private reads(): StreamReads {
    const fs = this.filters?.filters ?? [];
    return {
      transactions: fs.length === 0 || fs.some((f) => (this.rawMask & (1 << f.slot)) === 0),
      slots: this.slots,
      entries: this.entries || this.rawMask !== 0,
    };
  }

  private begin(r: ResolvedStart | StreamError): void {
    if (this.state !== 'resolving') return;
    if ('code' in r) return this.fail(r);
    this.minSlot = r.minSlot;
    if (r.position === null) {
      this.floor = this.ctx.livePosition();
      this.floorMarks = null;
      this.state = 'live';
      return;
    }
    this.replay = new Replay(this, this.ctx, r.position, r.marks);
    this.state = 'replaying';
    if (this.checkCaughtUp()) return;
    this.ctx.watch(this); // nothing to replay: ReplayComplete at once, no reader opened
    if (!this.ctx.admitReplay()) return this.fail(streamError('tooManyReplays', { max: this.ctx.maxReplays }));
    this.replayAdmitted = true;
    this.replay.open(this.filters, (e) => this.fail(streamError('replayFailed', { why: e instanceof Error ? e.message : String(e) })));
  }

  // ---- hand-over ------------------------------------------------------------------------------------------------

  /** Hands over to live once the replay's position has reached the hub's on every partition. */
  checkCaughtUp(): boolean {
    const replay = this.replay;
    if (this.state !== 'replaying' || replay === null || replay.waiting || !replay.reached(this.ctx.hubPosition())) return false;
    this.floor = replay.position;
    this.floorMarks = replay.marks;
    this.state = 'live';
    this.endReplay();
    const cursor = this.cursor();
    this.push(encodeReplayComplete(cursor, this.ctx.now(), this.replayed), cursor, 0);
    return true;
  }

  private endReplay(): void {
    this.replay?.close();
    if (this.state === 'live') this.replay = null; // ended streams keep it: their last cursor is the replay's
    if (this.replayAdmitted) {
      this.replayAdmitted = false;
      this.ctx.releaseReplay();
    }
  }

  // ---- delivery (the hub and the replay call these) -------------------------------------------------------------

  /** Live records below the floor were delivered by the replay already. */
  aboveFloor(tag: TopicTag, partition: number, offset: number): boolean {
    const f = this.floor?.get(tag)?.[partition];
    return f === undefined || offset >= f;
  }

  get hasFloor(): boolean {
    return this.floor !== null;
  }

  /** A matched transaction: `shared` is the record's shared part, encoded once for every stream. */
  deliverTx(mask: number, set: CompiledFilterSet, shared: Buffer, cursor: Buffer, fromReplay: boolean): void {
    let ids = this.idsCache.get(mask);
    if (ids === undefined || set !== this.filters) {
      const names: string[] = [];
      for (const f of set.filters) if ((mask & (1 << f.slot)) !== 0) names.push(f.name);
      ids = encodeFilterIds(names);
      if (set === this.filters) this.idsCache.set(mask, ids);
    }
    if (fromReplay) this.replayed++;
    if (this.encoding === 'identity') this.push(frameHead(ids, shared.length), cursor, 1, shared);
    else this.push(this.ctx.compression.frame(this.encoding, ids, shared), cursor, 1);
  }

  /** Whether this stream takes `status` of `slot` now (once per slot, in order); if so it counts as sent. */
  admitSlotStatus(slot: bigint, status: SlotStatusCode): boolean {
    return this.slotOrder.admit(slot, status);
  }

  /** A slot update the caller admitted (admitSlotStatus). */
  deliverSlot(shared: Buffer, cursor: Buffer, fromReplay: boolean): void {
    if (fromReplay) this.replayed++;
    if (this.encoding === 'identity') this.push(frameHead(EMPTY, shared.length), cursor, 0, shared);
    else this.push(this.ctx.compression.frame(this.encoding, EMPTY, shared), cursor, 0);
  }

  /** An Entry update: `shared` is encoded once per entry record for every stream. */
  deliverEntry(shared: Buffer, cursor: Buffer, fromReplay: boolean): void {
    if (fromReplay) this.replayed++;
    this.push(frameHead(EMPTY, shared.length), cursor, 0, shared);
  }

  /** Bus records [fromCursor, cursor) were lost before anyone read them (retention). */
  gap(fromCursor: Buffer, cursor: Buffer, count: number): void {
    this.push(encodeGap(cursor, this.ctx.now(), { fromCursor, reason: GapReason.retention, count, firstSlot: 0n, lastSlot: 0n }), cursor, 0);
  }

  heartbeat(): void {
    if (this.state === 'ended') return;
    const cursor = this.state === 'new' || this.state === 'resolving' ? null : this.cursor();
    this.push(encodeHeartbeat(cursor, this.ctx.now(), this.ctx.newestSlot()), cursor, 0);
  }

  /** This stream's position: the replay's while replaying, else the hub's (raised to the floor where it is ahead). */
  cursor(): Buffer {
    if (this.state === 'replaying') return this.replay!.cursor();
    const hub = this.ctx.hubPosition();
    const f = this.floor;
    if (f === null) return this.ctx.hubCursor();
    let ahead = false;
    for (const [tag, offs] of f) {
      const h = hub.get(tag);
      for (let p = 0; p < offs.length; p++) if (offs[p]! > (h?.[p] ?? 0)) ahead = true;
    }
    if (!ahead) {
      this.floor = null; // the hub has passed every floor: its cursor is this stream's from now on
      return this.ctx.hubCursor();
    }
    const merged = clonePosition(hub);
    for (const [tag, offs] of f) {
      const m = merged.get(tag) ?? [];
      for (let p = 0; p < offs.length; p++) m[p] = Math.max(m[p] ?? 0, offs[p]!);
      merged.set(tag, m);
    }
    const hubMarks = this.ctx.hubMarks();
    return this.ctx.encodeCursor(merged, marksFor(merged, this.floorMarks === null ? [[hub, hubMarks]] : [[hub, hubMarks], [f, this.floorMarks]]));
  }

  /** `shared`: the update's body shared with other streams, written after `buf` (frameHead) without a copy here. */
  private push(buf: Buffer, cursor: Buffer | null, tag: number, shared?: Buffer): void {
    if (this.state === 'ended') return;
    this.pending.push(cursor);
    if (!this.queue.push(buf, tag, shared) && this.pending.length > this.pendingHead) {
      // refused (closed): the cursor will never be written
      if (this.queue.isClosed) this.pending.length = this.pendingHead;
    }
  }

  // ---- lag policy -----------------------------------------------------------------------------------------------

  private dropped = 0;
  /** A slow-consumer gap notice queued and not yet written. */
  private unsentGap: { from: Buffer; count: number } | null = null;
  private droppedUntil: Buffer | null = null;
  private gapFrom: Buffer | null = null;

  private closeLagged(o: Overflow): void {
    this.pending = [];
    this.pendingHead = 0;
    const at = this.lastWritten ?? this.startCursor();
    const e = streamError('laggedClose', { limit: o.limit, max: o.max, cursor: cursorText(at) });
    e.metadata.set('x-resume-cursor', cursorText(at));
    this.fail(e);
  }

  private skipLagged(_o: Overflow): boolean {
    if (!this.skipPolicy) return false;
    const waiting = this.pending.slice(this.pendingHead);
    this.pending = [];
    this.pendingHead = 0;
    let last: Buffer | null = null;
    for (const c of waiting) if (c !== null) last = c;
    if (this.unsentGap !== null) {
      // The previous gap notice was still queued and is dropped with the rest: one notice covers both ranges.
      this.dropped = this.unsentGap.count + waiting.length - 1;
      this.gapFrom = this.unsentGap.from;
    } else {
      this.dropped = waiting.length;
      this.gapFrom = this.lastWritten ?? this.startCursor();
    }
    this.droppedUntil = last ?? this.gapFrom;
    return true;
  }

  private afterSkip(): void {
    const until = this.droppedUntil!;
    this.unsentGap = { from: this.gapFrom!, count: this.dropped };
    this.push(encodeGap(until, this.ctx.now(), { fromCursor: this.gapFrom!, reason: GapReason.slowConsumer, count: this.dropped, firstSlot: 0n, lastSlot: 0n }), until, GAP_TAG);
    // The gap's cursor is where delivery resumes; a client resuming from it skips exactly the dropped range.
    this.lastWritten = until;
  }

  private startCursor(): Buffer {
    return this.cursor();
  }

  // ---- ending -----------------------------------------------------------------------------------------------------

  fail(e: StreamError): void {
    this.finish(e.kind, e);
  }

  shutdown(): void {
    this.finish('server_close', streamError('shuttingDown', {}));
  }

  clientGone(): void {
    if (this.state === 'ended') return;
    this.release();
    this.ctx.onEnd(this, 'client');
  }

  private finish(reason: StreamErrorKind | 'server_close', e: StreamError): void {
    if (this.state === 'ended') return;
    this.release();
    this.port.end(e);
    this.ctx.onEnd(this, reason);
  }

  private release(): void {
    this.endReplay();
    this.state = 'ended';
    this.queue.close();
    this.ctx.index.remove(this);
    this.setMasks(null);
    this.filters = null;
  }
}

const EMPTY = Buffer.alloc(0);
/** Queue tags: 1 = a transaction (metered), GAP_TAG = a slow-consumer gap notice, 0 = anything else. */
const GAP_TAG = 2;
