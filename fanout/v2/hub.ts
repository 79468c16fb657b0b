import type { Bus, BusMessage, Consumer } from '../../bus/bus';
import type { Rental } from '../../bus/topics/rentals';
import { decodeSlotStatusRecord, SlotStatusCode, type SlotStatusRecord } from '../../bus/topics/stream-slot-status';
import { decodeEntryRecord, type EntryRecord } from '../../bus/topics/stream-entries';
import { decodeSlotRecord } from '../../bus/topics/stream-slots';
import { decodeTxRecord, type TxRecord } from '../../bus/topics/stream-transactions';
import { withBlockRef } from '../../bus/topics/block-ref';
import type { UsageSink } from '../../bus/usage-producer';
import type { Log } from '../../infra/base/log';
import { encodeEntryShared, encodeLoadedAddresses, encodeSlotShared, SlotStatus } from '../../proto/wire-v2';
import type { FanoutConfig } from '../config';
import { streamError, type StreamError, type StreamErrorKind } from '../errors';
import { FilterIndex, type Match, type SplitMatch } from '../filter/filter-index';
import { noResolution, type LoadedAddresses, type LoadedAddressResolver, type TableLookup } from '../filter/loaded-addresses';
import type { LookupTables } from '../lookup-tables/lookup-tables';
import { recordLookups } from '../lookup-tables/read-lookups';
import { TableHits } from '../lookup-tables/table-hits';
import { fanoutMetrics } from '../metrics';
import type { QueueBudget } from '../queue-budget';
import type { StreamLimits, StreamOrigin } from '../stream-limits';
import { StreamUsage } from '../stream-usage';
import { clonePosition, cloneMarks, encodeCursor, marksFor, TopicTag, type Marks, type Position } from './cursor';
import type { MessageEncoding } from '../../proto/grpc-compression';
import { UpdateCompression } from './compression';
import { beforeTicks, deliverTicks, type TickUpdates } from './entry-ticks';
import { InOrderHold, type Held } from './hold';
import { LiveDelivery, type LiveUpdate } from './live-delivery';
import { mergeSplit } from './loaded-match';
import { matchRaw, matchTx, rawShared, txShared, withEntryOffset, type RawMatch } from './record-updates';
import type { ReplayRecord } from './replay';
import { V2Session, type V2Context, type V2Port } from './session';
import { SlotTimeline } from './slot-timeline';
import { StartResolver } from './starts';
import { StreamLogs } from './stream-logs';
import { toArray } from './to-array';

// The v2 hub: between the bus reader the fanout already runs and the v2 streams. It keeps the live bus position
// (next offset per partition of each stream topic: every update's cursor), matches each transaction once through
// its own filter index, encodes a record's shared part once (proto/wire-v2.ts) and hands it to every matching live
// stream through one delivery loop (live-delivery.ts). Beside it: start resolution (starts.ts), each stream's
// replay (replay.ts, owned by the stream), the in-order hold (hold.ts), what a record gives a stream, live or
// replayed alike (record-updates.ts).
//
// Transactions are not de-duplicated by signature here, unlike v1: a cursor names bus records, and a replay that
// starts mid-stream cannot know which signatures came before it, so deduplication would make a resumed stream
// differ from an uninterrupted one. Redundant ingest's duplicates arrive with distinct cursors; clients drop them
// by Transaction.signature.
//
// Lookup tables (TransactionFilter.match_loaded_addresses). While some stream holds a flagged filter, each
// transaction record with lookups is resolved once, here, before it is matched: through the process's resolver
// (the table cache; noResolution without one, which names every table unresolved). Held tables answer at once and
// the record goes through as before. A record naming a table not held yet waits for it — at most the resolver's
// bound (fanout.lookupTables.waitMs) — and so do the records that come after it (transactions and slots alike,
// hold.ts):
// the hub processes records strictly in bus order, so the position, every cursor and every stream's seq follow the
// bus exactly as without resolution, and a resumed stream sees the records in the order an uninterrupted one did.
// Resolution is started for each record as it arrives, not when it reaches the head, so a record is held at most
// the bound after its own arrival, however many wait before it. (v1 does otherwise: it delivers the waiting
// transaction after later ones; v1 has no cursor to keep.) The held records are capped (HOLD_MAX_*): past the cap,
// the oldest waiting record stops waiting and is matched on its static keys with every table marked unresolved.
// Without a flagged filter anywhere, nothing of this runs: no decode of lookups, no allocation, no hold.
//
// A replay resolves the records it reads the same way, against the cache as it is at replay time (the chain's rules
// are applied at the transaction's own slot, so a table extended or deactivated since gives the same answer). What
// can differ from the live stream is only a record whose table was unresolved live (the miss flag said so) and is
// held by the time of the replay, or the reverse (a table closed since, no longer fetchable).
//
// Entries and RAW. stream.entries records (one per entry, with its transactions' wire bytes) advance the position
// like the other topics, through the same in-order hold. Streams with Start.entries get one Entry update per
// record. Filters delivered RAW are matched here against each entry transaction's static keys (a view into the
// record: no decode), only while some stream holds one; the DECODED path skips their bits. A RAW transaction's
// update carries the cursor after its entry record when it is the last one of that entry the stream gets, else
// the cursor before the record (the same offsets with this partition at the record itself): a resume never skips
// the rest of an entry, and may repeat its earlier transactions (proto/stream_v2.proto's header says so).
// Without the entries topic (absent on the bus when the fanout started), entries and RAW are refused with the
// reason, and cursors name transactions and slots only.

export interface V2HubOptions {
  bus: Bus;
  budget: QueueBudget;
  streamLimits: StreamLimits;
  /** Lookup-table resolution (fanout/filter/loaded-addresses.ts) for filters with match_loaded_addresses; default noResolution. */
  resolver?: LoadedAddressResolver;
  /**
   * The process's table cache, when `resolver` is its resolver: live records whose tables are held are then
   * matched against the tables' hit lists (lookup-tables/table-hits.ts) and `loaded` is built only for a record
   * that a stream asking for it receives. Without it, every record is resolved into its loaded lists first.
   */
  tables?: Pick<LookupTables, 'keys' | 'resolver'>;
  usage?: { sink: UsageSink; periodMs: number };
  log: Log;
  now?: () => number;
}


/** Slots remembered for slot starts: 4.6 days at 2.5 slots/s. */
const TIMELINE_MAX = 1_000_000;
const STARTS_REFRESH_MS = 1000;

export class V2Hub {
  readonly index = new FilterIndex<V2Session>();
  /** The live index's hits in each held table (with opts.tables only). */
  private readonly tableHits: TableHits | null;
  private readonly sessions = new Set<V2Session>();
  private readonly replaying = new Set<V2Session>();
  private readonly position: Position = new Map();
  /** The log of each topic read, for the cursors (stream-logs.ts). */
  private readonly logs = new StreamLogs();
  /** The markers of `position` (cursor.ts Marks): the append time of the last record read per partition. */
  private readonly marks: Marks = new Map();
  /** The marker `advance` replaced: of the offset of the record just read (a cursor before that record). */
  private prevMark = 0;
  private readonly stamp = this.logs.stamp(this.marks);
  private cursorCache: Buffer | null = null;
  /** Slots-topic records below these offsets were read as history at start (the timeline), not sent live. */
  private slotsLiveFrom: number[] = [];
  private readonly timeline = new SlotTimeline(TIMELINE_MAX);
  private newest = 0n;
  private replays = 0;
  private nextId = 1;
  private closed = false;
  /** Streams holding a filter with match_loaded_addresses: while 0, no record is resolved. */
  private loadedStreams = 0;
  /** Streams holding a filter delivered RAW: while 0, entry records' transactions are not matched. */
  private rawStreams = 0;
  /** Why stream.entries is not read (null when it is). */
  private entriesOff: string | null = 'this fanout does not read stream.entries';
  private readonly hold = new InOrderHold((e) => this.process(e));
  private readonly live = new LiveDelivery(() => this.cursor());
  private readonly txUpdate: TxUpdate;
  private readonly entryUpdate: EntryUpdate;
  private readonly slotUpdate: SlotUpdate;
  private readonly statusUpdate: StatusUpdate;
  private readonly startResolver: StartResolver;
  private readonly heartbeatTimer: NodeJS.Timeout;
  private readonly startsTimer: NodeJS.Timeout;
  private readonly usage: StreamUsage | undefined;
  private readonly ctx: V2Context;
  private readonly now: () => number;
  readonly resolver: LoadedAddressResolver;
  /** gzip/zstd of shared parts, once per part and encoding, for every stream that negotiated one. */
  readonly compression = new UpdateCompression();
  readonly counts = { delivered: 0, deliveredTransactions: 0, bytes: 0, replaysStarted: 0, outOfRange: 0, resolved: 0, entries: 0 };

  constructor(
    private readonly cfg: FanoutConfig,
    private readonly opts: V2HubOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.resolver = opts.resolver ?? noResolution;
    this.tableHits = opts.tables === undefined ? null : new TableHits(this.index);
    this.txUpdate = new TxUpdate(this.now, opts.tables);
    this.entryUpdate = new EntryUpdate(this.now);
    this.slotUpdate = new SlotUpdate(this.now);
    this.statusUpdate = new StatusUpdate(this.now);
    const hub = this;
    this.startResolver = new StartResolver({
      bus: opts.bus,
      topics: cfg.topics,
      position: this.position,
      marks: this.marks,
      logs: this.logs,
      timeline: this.timeline,
      entriesOff: () => this.entriesOff,
      tags: () => this.tags(),
      topicOf: (t) => this.topicOf(t),
      livePosition: () => this.livePosition(),
      newest: () => this.newest,
      cursorOf: (p, marks) => this.cursorOf(p, marks),
      now: this.now,
      onOutOfRange: () => void this.counts.outOfRange++,
    });
    this.ctx = {
      index: this.index,
      limits: {
        maxFilters: cfg.maxFilters,
        maxKeysPerList: cfg.maxKeysPerList,
        maxFilterNameLen: cfg.maxFilterNameLen,
        parts: cfg.v2.filterParts,
        maxKeysPerStream: cfg.maxKeysPerStream,
        maxFilterUpdatesPerSec: cfg.maxFilterUpdatesPerSec,
        maxKeysTotal: cfg.maxKeysTotal,
      },
      queueLimits: { maxBytes: cfg.queueMaxBytes, maxMessages: cfg.queueMaxMessages, maxLagMs: cfg.queueMaxLagMs },
      budget: opts.budget,
      now: this.now,
      hubPosition: () => this.position,
      hubCursor: () => this.cursor(),
      encodeCursor: (p, marks) => this.cursorOf(p, marks),
      hubMarks: () => this.marks,
      livePosition: () => this.livePosition(),
      newestSlot: () => this.newest,
      resolveStart: (s, entries, reads) => this.resolveStart(s, entries, reads),
      get entriesUnavailable() {
        return hub.entriesOff;
      },
      rawFilters: (_s, on) => void (this.rawStreams += on ? 1 : -1),
      openReplay: (from, onBatch) => this.openReplay(from, onBatch),
      resolver: this.resolver,
      get statusTopic() {
        return hub.position.has(TopicTag.slotStatus);
      },
      watch: (s) => void this.replaying.add(s),
      admitReplay: () => {
        if (this.replays >= cfg.v2.maxReplays) return false;
        this.replays++;
        this.counts.replaysStarted++;
        return true;
      },
      get maxReplays() {
        return cfg.v2.maxReplays;
      },
      releaseReplay: () => void this.replays--,
      replayRatePerSec: cfg.v2.replayRecordsPerSec,
      loadedFilters: (_s, on) => void (this.loadedStreams += on ? 1 : -1),
      onWrite: (bytes, isTx) => {
        hub.counts.delivered++;
        hub.counts.bytes += bytes;
        if (isTx) hub.counts.deliveredTransactions++;
        fanoutMetrics.messagesSent.inc();
        fanoutMetrics.bytesSent.inc(bytes);
      },
      compression: this.compression,
      onEnd: (s, reason) => this.onEnd(s, reason),
    };
    this.heartbeatTimer = setInterval(() => {
      for (const s of this.sessions) s.heartbeat();
    }, cfg.heartbeatMs);
    this.heartbeatTimer.unref();
    this.startsTimer = setInterval(() => this.startResolver.refresh(), STARTS_REFRESH_MS);
    this.startsTimer.unref();
    this.usage = opts.usage === undefined ? undefined : new StreamUsage(opts.usage.sink, () => this.sessions, opts.usage.periodMs);
  }

  /**
   * Where the reader starts on stream.entries (its end offsets: live), or null with the reason it is not read.
   * Called once, before init().
   */
  initEntries(ends: Map<number, string> | null, why = 'the topic is absent'): void {
    if (ends === null) {
      this.entriesOff = `${this.cfg.topics.entries}: ${why}`;
      return;
    }
    this.entriesOff = null;
    this.position.set(TopicTag.entries, toArray(ends));
    this.cursorCache = null;
  }

  /**
   * Where the fanout's reader starts: transactions at `txEnds` (live), slots at `slotsStarts` (the retained
   * history feeds the slot timeline; live slot updates begin at `slotsEnds`). Called once before any record.
   */
  init(txEnds: Map<number, string>, slotsStarts: Map<number, string>, slotsEnds: Map<number, string>, statusEnds?: Map<number, string>): void {
    this.position.set(TopicTag.transactions, toArray(txEnds));
    this.position.set(TopicTag.slots, toArray(slotsStarts));
    // The status topic, when the fanout reads one (fanout.topics.slotStatus, and the topic exists), from live.
    if (statusEnds !== undefined) this.position.set(TopicTag.slotStatus, toArray(statusEnds));
    this.slotsLiveFrom = toArray(slotsEnds);
    this.cursorCache = null;
    this.startResolver.refresh();
  }

  /**
   * Reads the log behind each topic init() set, which every cursor names (stream-logs.ts). Called once after
   * init(), before the reader starts.
   */
  async initLogs(): Promise<void> {
    await this.logs.init(this.opts.bus, new Map(this.tags().map((t) => [t, this.topicOf(t)])));
    for (const [tag, offs] of this.position) if (!this.marks.has(tag)) this.marks.set(tag, offs.map(() => 0));
    this.cursorCache = null;
  }

  /** A cursor of `p` on the logs this hub reads (what its streams' updates carry), with the markers `marks`. */
  cursorOf(p: Position, marks?: Marks): Buffer {
    if (marks === undefined && p === this.position) return encodeCursor(p, this.stamp);
    return encodeCursor(p, this.logs.stamp(marks ?? marksFor(p, [[this.position, this.marks]])));
  }

  /** Is this slots-topic record history (read at start for the timeline), not to be sent to anyone? */
  isSlotHistory(m: BusMessage): boolean {
    return Number(m.offset) < (this.slotsLiveFrom[m.partition] ?? 0);
  }

  /** Where a start begins and whether the bus still holds it (starts.ts). */
  resolveStart(...args: Parameters<StartResolver['resolveStart']>): ReturnType<StartResolver['resolveStart']> {
    return this.startResolver.resolveStart(...args);
  }

  open(port: V2Port, rental: Rental | undefined, origin: StreamOrigin | undefined, encoding: MessageEncoding = 'identity'): V2Session | StreamError {
    const refusal = this.closed ? null : this.opts.streamLimits.admit(origin);
    if (refusal !== null) {
      fanoutMetrics.streamRefused(refusal.per).inc();
      return streamError('tooManyStreams', refusal);
    }
    const s = new V2Session(this.nextId++, port, this.ctx, rental, origin, encoding);
    if (this.closed) s.shutdown();
    else this.sessions.add(s);
    return s;
  }

  get streams(): number {
    return this.sessions.size;
  }

  get activeReplays(): number {
    return this.replays;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeatTimer);
    clearInterval(this.startsTimer);
    this.usage?.close();
    this.hold.close();
    for (const s of [...this.sessions]) s.shutdown();
  }

  // ---- live records ---------------------------------------------------------------------------------------------

  /** A stream.transactions record, with its decoded form when the caller has it (the stream feed decodes once). */
  onTransaction(m: BusMessage, decoded?: TxRecord): void {
    if (this.loadedStreams === 0 && this.hold.empty) return this.processTx(m, decoded ?? null, null, null);
    const e: Held = { m, kind: 'tx', record: decoded ?? null, lookups: null, loaded: null, ready: true };
    if (this.loadedStreams > 0 && m.value !== null) {
      let r = decoded ?? null;
      if (r === null) {
        const d = decodeTxRecord(m.value, m.headers);
        if (d.ok) r = withBlockRef(d.record, m.headers);
      }
      if (r !== null) {
        e.record = r;
        const lookups = recordLookups(r);
        e.lookups = lookups;
        if (lookups !== null && lookups.length > 0) {
          if (this.tableHits !== null && this.hold.empty && this.matchAgainstTables(m, r, lookups)) return;
          e.ready = false;
          let sync = true;
          this.counts.resolved++;
          this.resolver.resolve(lookups, r.slot, (loaded) => {
            if (e.ready) return; // stopped waiting (the hold cap) or the hub closed
            e.loaded = loaded;
            e.ready = true;
            if (!sync) this.hold.drain();
          });
          sync = false;
        }
      }
    }
    if (e.ready && this.hold.empty) return this.processTx(m, e.record, e.lookups, e.loaded);
    this.hold.push(e);
  }

  onEntry(m: BusMessage): void {
    if (this.entriesOff !== null) return;
    if (this.hold.empty) return this.processEntry(m);
    this.hold.push({ m, kind: 'entry', record: null, lookups: null, loaded: null, ready: true });
  }

  onSlot(m: BusMessage): void {
    if (this.hold.empty) return this.processSlot(m);
    this.hold.push({ m, kind: 'slot', record: null, lookups: null, loaded: null, ready: true });
  }

  /** A stream.slot-status record (bus/topics/stream-slot-status.ts), read only when the fanout has the topic. */
  onSlotStatus(m: BusMessage): void {
    if (this.hold.empty) return this.processStatus(m);
    this.hold.push({ m, kind: 'status', record: null, lookups: null, loaded: null, ready: true });
  }

  /** A record the hold releases, in bus order. */
  private process(e: Held): void {
    if (e.kind === 'tx') this.processTx(e.m, e.record, e.lookups, e.loaded);
    else if (e.kind === 'status') this.processStatus(e.m);
    else if (e.kind === 'entry') this.processEntry(e.m);
    else this.processSlot(e.m);
  }

  /**
   * A record with lookups when nothing is held: matched against the held tables' hit lists (no loaded lists made)
   * when every table it names is known. false: some table is not (resolve through the resolver, which may wait).
   */
  private matchAgainstTables(m: BusMessage, r: TxRecord, lookups: readonly TableLookup[]): boolean {
    const t = this.opts.tables!;
    const pre = t.keys.matchSplitRecord(this.index, this.tableHits!, r);
    if (pre === null) return false;
    this.counts.resolved++;
    this.processTx(m, r, lookups, null, pre);
    return true;
  }

  private processTx(m: BusMessage, decoded: TxRecord | null, lookups: readonly TableLookup[] | null, loadedIn: LoadedAddresses | null, pre: SplitMatch<V2Session>[] | null = null): void {
    if (!this.advance(this.position.get(TopicTag.transactions)!, TopicTag.transactions, m)) return;
    if (m.value === null) return;
    let r = decoded;
    if (r === null) {
      const d = decodeTxRecord(m.value, m.headers);
      if (!d.ok) return;
      r = withBlockRef(d.record, m.headers);
    }
    if (r.slot > this.newest) this.newest = r.slot;
    if (this.index.size.subscribers === 0) return this.afterRecord();
    // Matched against the tables (matchAgainstTables): `loaded` is built when a stream that asked for it receives
    // the record, from the tables as they are now (nothing has changed them since the match).
    const matched = pre !== null ? { matches: mergeSplit(pre), loaded: null } : matchTx(this.index, this.resolver, r, lookups, loadedIn, this.loadedStreams > 0);
    const u = this.txUpdate;
    u.set(m.key, r, lookups, matched.loaded, pre !== null);
    this.live.run(matched.matches, TopicTag.transactions, m.partition, Number(m.offset), r.slot, u);
    u.clear();
    this.afterRecord();
  }

  private processEntry(m: BusMessage): void {
    const p = m.partition;
    const o = Number(m.offset);
    if (!this.advance(this.position.get(TopicTag.entries)!, TopicTag.entries, m)) return;
    if (m.value === null) return;
    const d = decodeEntryRecord(m.value);
    if (!d.ok) return this.afterRecord();
    const r = withBlockRef(d.record, m.headers);
    this.counts.entries++;
    if (r.slot > this.newest) this.newest = r.slot;
    this.entryUpdate.set(r, p, o, this.prevMark);
    this.live.run(this.sessions, TopicTag.entries, p, o, r.slot, this.entryUpdate);
    this.entryUpdate.clear();
    if (this.rawStreams > 0 && this.index.size.subscribers > 0) this.deliverRaw(r, p, o);
    this.afterRecord();
  }

  /**
   * The RAW transactions of a live entry record (the position has moved past it). Not the one delivery loop: each
   * stream gets several updates of one record, the last with the cursor after it and the others with the cursor
   * before it.
   */
  private deliverRaw(r: EntryRecord, p: number, o: number): void {
    const perStream = matchRaw(this.index, r, (s) => s.isLive && s.aboveFloor(TopicTag.entries, p, o) && r.slot >= s.minSlot);
    if (perStream === null) return;
    const after = this.cursor();
    const beforePos = clonePosition(this.position);
    beforePos.get(TopicTag.entries)![p] = o;
    const beforeMarks = cloneMarks(this.marks);
    beforeMarks.get(TopicTag.entries)![p] = this.prevMark;
    const before = this.cursorOf(beforePos, beforeMarks);
    const now = this.now();
    // Shared parts per transaction, for the two cursors (most entries are matched by one stream or the same few).
    const cache = new Map<number, Buffer>();
    for (const [s, list] of perStream) {
      let own: { after: Buffer; before: Buffer } | null = null;
      if (s.hasFloor) {
        const a = s.cursor();
        if (a !== after) own = { after: a, before: withEntryOffset(a, p, o, this.prevMark) };
      }
      for (let k = 0; k < list.length; k++) {
        const { i, mask, set } = list[k]! as RawMatch;
        const last = k === list.length - 1;
        if (own !== null) {
          const c = last ? own.after : own.before;
          s.deliverTx(mask, set, rawShared(now, c, r, i), c, false);
          continue;
        }
        const key = i * 2 + (last ? 1 : 0);
        let sh = cache.get(key);
        if (sh === undefined) {
          sh = rawShared(now, last ? after : before, r, i);
          cache.set(key, sh);
        }
        s.deliverTx(mask, set, sh, last ? after : before, false);
      }
    }
  }

  private processSlot(m: BusMessage): void {
    const p = m.partition;
    const o = Number(m.offset);
    if (!this.advance(this.position.get(TopicTag.slots)!, TopicTag.slots, m, this.slotsLiveFrom[p] ?? 0)) return;
    if (m.value === null) return;
    const r = decodeSlotRecord(m.value);
    if (r === null) return;
    this.timeline.add({ slot: r.slot, partition: p, offset: o, appendedAtMs: m.timestamp });
    if (o < (this.slotsLiveFrom[p] ?? 0)) return;
    if (r.slot > this.newest) this.newest = r.slot;
    // With the status topic, every status comes from there (ingest writes the first shred there too): one
    // partition in the order ingest derived them, so a resume reproduces exactly what an uninterrupted stream got.
    if (this.position.has(TopicTag.slotStatus)) return this.afterRecord();
    const u = this.slotUpdate;
    u.slot = r.slot;
    u.firstSeenMs = r.firstSeenMs;
    this.live.run(this.sessions, TopicTag.slots, p, o, r.slot, u);
    this.afterRecord();
  }

  private processStatus(m: BusMessage): void {
    const offs = this.position.get(TopicTag.slotStatus);
    if (offs === undefined || !this.advance(offs, TopicTag.slotStatus, m)) return;
    if (m.value === null) return;
    const r = decodeSlotStatusRecord(m.value);
    if (r === null) return;
    if (r.slot > this.newest) this.newest = r.slot;
    this.statusUpdate.record = r;
    this.live.run(this.sessions, TopicTag.slotStatus, m.partition, Number(m.offset), r.slot, this.statusUpdate);
    this.statusUpdate.record = null;
    this.afterRecord();
  }

  /**
   * Moves `offs` (the position on `tag`) past m; false when a reader restart redelivered it. A jump past the
   * position is records lost under the hub's reader: a gap notice, from `liveFrom` on (records before it are
   * history the reader was not sent live).
   */
  private advance(offs: number[], tag: TopicTag, m: BusMessage, liveFrom = 0): boolean {
    const p = m.partition;
    const o = Number(m.offset);
    const at = offs[p] ?? 0;
    if (o < at) return false;
    if (o > at && o > liveFrom) this.liveGap(tag, p, Math.max(at, liveFrom), o, m.timestamp);
    offs[p] = o + 1;
    let mk = this.marks.get(tag);
    if (mk === undefined) this.marks.set(tag, (mk = []));
    this.prevMark = o === at ? (mk[p] ?? 0) : m.timestamp;
    mk[p] = m.timestamp;
    this.cursorCache = null;
    return true;
  }

  /**
   * The hub's own reader lost [from, to) to retention (the embedded bus drops what a reader that far behind has
   * not read). Every live stream is told, with the range, before anything after it.
   */
  private liveGap(tag: TopicTag, p: number, from: number, to: number, toTime: number): void {
    const before = clonePosition(this.position);
    before.get(tag)![p] = from;
    const fromCursor = this.cursorOf(before);
    const after = clonePosition(this.position);
    after.get(tag)![p] = to;
    // The record below `to` was lost: the one at `to` was appended no earlier (a valid marker for the offset).
    const afterMarks = marksFor(after, [[this.position, this.marks]]);
    (afterMarks.get(tag) ?? [])[p] = toTime;
    const cursor = this.cursorOf(after, afterMarks);
    for (const s of this.sessions) if (s.isLive) s.gap(fromCursor, cursor, to - from);
  }

  /** Replays whose position the hub has just reached hand over now. */
  private afterRecord(): void {
    if (this.replaying.size === 0) return;
    for (const s of [...this.replaying]) if (s.checkCaughtUp() || !s.isReplaying) this.replaying.delete(s);
  }

  private cursor(): Buffer {
    return (this.cursorCache ??= encodeCursor(this.position, this.stamp));
  }

  private livePosition(): Position {
    const p = clonePosition(this.position);
    const slots = p.get(TopicTag.slots)!;
    for (let i = 0; i < this.slotsLiveFrom.length; i++) slots[i] = Math.max(slots[i] ?? 0, this.slotsLiveFrom[i]!);
    return p;
  }

  // ---- bus topics and replay readers --------------------------------------------------------------------------

  private topicOf(tag: TopicTag): string {
    if (tag === TopicTag.slotStatus) return this.cfg.topics.slotStatus;
    if (tag === TopicTag.entries) return this.cfg.topics.entries;
    return tag === TopicTag.transactions ? this.cfg.topics.transactions : this.cfg.topics.slots;
  }

  private tagOf(topic: string): TopicTag {
    if (topic === this.cfg.topics.transactions) return TopicTag.transactions;
    if (topic === this.cfg.topics.slots) return TopicTag.slots;
    return topic === this.cfg.topics.entries ? TopicTag.entries : TopicTag.slotStatus;
  }

  /**
   * The stream topics this hub reads, in tag order: the status topic only when the fanout has it, entries only when
   * the bus has them.
   */
  private tags(): TopicTag[] {
    const tags: TopicTag[] = [TopicTag.transactions, TopicTag.slots];
    if (this.position.has(TopicTag.slotStatus)) tags.push(TopicTag.slotStatus);
    if (this.entriesOff === null) tags.push(TopicTag.entries);
    return tags;
  }

  private async openReplay(from: Position, onBatch: (records: ReplayRecord[]) => Promise<void>): Promise<Consumer> {
    const offsets = new Map<string, Map<number, string>>();
    for (const [tag, offs] of from) offsets.set(this.topicOf(tag), new Map(offs.map((o, p) => [p, String(o)])));
    const c = await this.opts.bus.consume({
      topics: [...offsets.keys()],
      from: { offsets },
      maxBytes: 1 << 20,
      onBatch: (messages) =>
        onBatch(
          messages.map((m) => ({
            tag: this.tagOf(m.topic),
            partition: m.partition,
            offset: Number(m.offset),
            key: m.key,
            value: m.value,
            timestamp: m.timestamp,
            headers: m.headers,
          })),
        ),
    });
    return c;
  }

  private onEnd(s: V2Session, _reason: StreamErrorKind | 'client' | 'server_close'): void {
    if (this.sessions.delete(s)) this.opts.streamLimits.release(s.origin);
    this.replaying.delete(s);
    this.usage?.ended(s);
  }
}

/** A transaction record's update for the streams its matches name: without `loaded` (variant 0) and with it (1). */
class TxUpdate implements LiveUpdate<Match<V2Session>> {
  private key: Buffer | null = null;
  private r: TxRecord | null = null;
  private lookups: readonly TableLookup[] | null = null;
  private loaded: LoadedAddresses | null = null;
  /** Matched against the held tables: `loaded` is built only when a stream that asked for it receives the record. */
  private late = false;
  private loadedBody: Buffer | null = null;

  constructor(
    private readonly now: () => number,
    private readonly tables: Pick<LookupTables, 'resolver'> | undefined,
  ) {}

  set(key: Buffer | null, r: TxRecord, lookups: readonly TableLookup[] | null, loaded: LoadedAddresses | null, late: boolean): void {
    this.key = key;
    this.r = r;
    this.lookups = lookups;
    this.loaded = loaded;
    this.late = late;
    this.loadedBody = null;
  }

  /** Lets go of the record (the update object outlives it). */
  clear(): void {
    this.key = this.r = this.lookups = this.loaded = this.loadedBody = null;
  }

  stream(mt: Match<V2Session>): V2Session {
    return mt.sub;
  }

  variant(mt: Match<V2Session>, s: V2Session): number {
    if ((mt.mask & ~s.rawMask) === 0) return -1; // RAW filters take their transactions from stream.entries
    return (this.late || this.loaded !== null) && (mt.mask & s.loadedMask) !== 0 ? 1 : 0;
  }

  encode(cursor: Buffer, variant: number): Buffer {
    if (variant === 0) return txShared(this.now(), cursor, this.key, this.r!, null);
    this.loadedBody ??= encodeLoadedAddresses((this.loaded ??= this.tables!.resolver.loadedNow(this.lookups!, this.r!.slot)));
    return txShared(this.now(), cursor, this.key, this.r!, this.loadedBody);
  }

  deliver(mt: Match<V2Session>, s: V2Session, body: Buffer, cursor: Buffer): void {
    s.deliverTx(mt.mask & ~s.rawMask, mt.set, body, cursor, false);
  }
}

/**
 * An entry record's Entry update, for the streams that asked for entries, after the updates of the ticks it carries
 * (entry-ticks.ts: with the cursor before the record, made once per cursor).
 */
class EntryUpdate implements LiveUpdate<V2Session> {
  private record: EntryRecord | null = null;
  private partition = 0;
  private offset = 0;
  /** The marker of the position before the record (its ticks' cursor). */
  private prevMark = 0;
  private ticks: TickUpdates | null = null;
  private ticksAfter: Buffer | null = null;
  constructor(private readonly now: () => number) {}

  set(r: EntryRecord, partition: number, offset: number, prevMark: number): void {
    this.record = r;
    this.partition = partition;
    this.offset = offset;
    this.prevMark = prevMark;
  }

  clear(): void {
    this.record = null;
    this.ticks = this.ticksAfter = null;
  }

  stream(s: V2Session): V2Session {
    return s;
  }
  variant(s: V2Session): number {
    return s.entries ? 0 : -1;
  }
  encode(cursor: Buffer): Buffer {
    return encodeEntryShared(cursor, this.now(), this.record!);
  }
  deliver(_t: V2Session, s: V2Session, body: Buffer, cursor: Buffer): void {
    const r = this.record!;
    if (r.ticks.length > 0) {
      if (this.ticksAfter !== cursor) {
        this.ticks = beforeTicks(r, withEntryOffset(cursor, this.partition, this.offset, this.prevMark), this.now());
        this.ticksAfter = cursor;
      }
      deliverTicks(s, this.ticks!, false);
    }
    s.deliverEntry(body, cursor, false);
  }
}

/** A slot's first shred from stream.slots (without the status topic), once per slot and stream, in order. */
class SlotUpdate implements LiveUpdate<V2Session> {
  slot = 0n;
  firstSeenMs = 0;
  constructor(private readonly now: () => number) {}
  stream(s: V2Session): V2Session {
    return s;
  }
  variant(s: V2Session): number {
    return s.slots && s.admitSlotStatus(this.slot, SlotStatusCode.firstShredReceived) ? 0 : -1;
  }
  encode(cursor: Buffer): Buffer {
    return encodeSlotShared(cursor, this.now(), this.slot, SlotStatus.firstShredReceived, this.firstSeenMs);
  }
  deliver(_t: V2Session, s: V2Session, body: Buffer, cursor: Buffer): void {
    s.deliverSlot(body, cursor, false);
  }
}

/** A stream.slot-status record's update, once per slot and status and stream, in order. */
class StatusUpdate implements LiveUpdate<V2Session> {
  record: SlotStatusRecord | null = null;
  constructor(private readonly now: () => number) {}
  stream(s: V2Session): V2Session {
    return s;
  }
  variant(s: V2Session): number {
    const r = this.record!;
    return s.slots && s.admitSlotStatus(r.slot, r.status) ? 0 : -1;
  }
  encode(cursor: Buffer): Buffer {
    const r = this.record!;
    return encodeSlotShared(cursor, this.now(), r.slot, r.status, r.observedAtMs, r.reason, r.block);
  }
  deliver(_t: V2Session, s: V2Session, body: Buffer, cursor: Buffer): void {
    s.deliverSlot(body, cursor, false);
  }
}
