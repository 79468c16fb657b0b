import type { Bus, BusMessage, Consumer } from '../../bus/bus';
import type { Rental } from '../../bus/topics/rentals';
import { decodeSlotStatusRecord, SlotStatusCode } from '../../bus/topics/stream-slot-status';
import { decodeEntryRecord, entryTxKeys, type EntryRecord } from '../../bus/topics/stream-entries';
import { decodeSlotRecord } from '../../bus/topics/stream-slots';
import { decodeTxRecord, SIGNATURE_SZ, type TxRecord } from '../../bus/topics/stream-transactions';
import type { UsageSink } from '../../bus/usage-producer';
import type { Log } from '../../infra/base/log';
import { encodeEntryShared, encodeLoadedAddresses, encodeSlotShared, encodeTxShared, SlotStatus } from '../../proto/wire-v2';
import type { FanoutConfig } from '../config';
import { streamError, type StreamError, type StreamErrorKind } from '../errors';
import type { CompiledFilterSet } from '../filter/compile';
import { FilterIndex, type Match, type SplitMatch } from '../filter/filter-index';
import { noResolution, type LoadedAddresses, type LoadedAddressResolver, type TableLookup } from '../filter/loaded-addresses';
import type { LookupTables } from '../lookup-tables/lookup-tables';
import { readLookups } from '../lookup-tables/read-lookups';
import { TableHits } from '../lookup-tables/table-hits';
import { fanoutMetrics } from '../metrics';
import type { QueueBudget } from '../queue-budget';
import type { StreamLimits, StreamOrigin } from '../stream-limits';
import { StreamUsage } from '../stream-usage';
import { clonePosition, cloneMarks, cursorText, decodeCursor, encodeCursor, marksFor, stampOf, TopicTag, type Marks, type Position } from './cursor';
import type { MessageEncoding } from '../../proto/grpc-compression';
import { UpdateCompression } from './compression';
import { allUnresolved, matchWithLoaded, mergeSplit } from './loaded-match';
import type { V2Start } from './request';
import { V2Session, type ReplayRecord, type ResolvedStart, type V2Context, type V2Port } from './session';
import { SlotTimeline, type SlotMark } from './slot-timeline';
import { firstDropped, oldestRetainedMark, raisedTo, raiseUnread, READS_ALL, readsTag, type StreamReads } from './start-check';
import { StreamLogs } from './stream-logs';

// The v2 hub: between the bus reader the fanout already runs and the v2 streams. It keeps the live bus position
// (next offset per partition of each stream topic: every update's cursor), matches each transaction once through
// its own filter index, encodes a record's shared part once (proto/wire-v2.ts) and hands it to every matching live
// stream; it resolves starts (cursor, slot, time) against the bus, opens replays and bounds them.
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
// bound (fanout.lookupTables.waitMs) — and so do the records that come after it (transactions and slots alike):
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

/**
 * A transaction of slot S can reach stream.transactions before the stream.slots record of S's first shred only by
 * the two produce calls racing; a slot start begins this much earlier on the transaction topic and drops what is
 * older than S by its slot.
 */
const SLOT_START_MARGIN_MS = 2000;
/** Slots remembered for slot starts: 4.6 days at 2.5 slots/s. */
const TIMELINE_MAX = 1_000_000;
/** How old the cached first retained offsets may be when a start is checked against them. */
const STARTS_MAX_AGE_MS = 10_000;
const STARTS_REFRESH_MS = 1000;
/**
 * Records held behind one waiting for its tables, at most. A hold lasts at most waitMs (default 50 ms): at a
 * 4,000 tx/s stream that is ~200 records, so the cap is only reached with a much longer waitMs or a far faster
 * stream; the bytes cap bounds the memory the held records keep alive (records are ≤ 1232-byte transactions plus
 * keys, ~2 KiB).
 */
const HOLD_MAX_RECORDS = 16_384;
const HOLD_MAX_BYTES = 32 << 20;

/** A bus record held in order behind one whose lookup tables are being resolved. */
interface Held {
  m: BusMessage;
  tx: boolean;
  /** A stream.slot-status record (tx false). */
  status?: true;
  /** A stream.entries record (tx is false). */
  entry?: boolean;
  record: TxRecord | null;
  lookups: readonly TableLookup[] | null;
  loaded: LoadedAddresses | null;
  ready: boolean;
}

function toArray(m: Map<number, string>): number[] {
  const out: number[] = [];
  for (const [p, o] of m) out[p] = Number(o);
  for (let i = 0; i < out.length; i++) out[i] ??= 0;
  return out;
}

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
  private held: Array<Held | undefined> = [];
  private heldHead = 0;
  private heldBytes = 0;
  private draining = false;
  private readonly heartbeatTimer: NodeJS.Timeout;
  private readonly startsTimer: NodeJS.Timeout;
  private readonly usage: StreamUsage | undefined;
  private readonly ctx: V2Context;
  private readonly now: () => number;
  readonly resolver: LoadedAddressResolver;
  /** gzip/zstd of shared parts, once per part and encoding, for every stream that negotiated one. */
  readonly compression = new UpdateCompression();
  readonly counts = { delivered: 0, deliveredTransactions: 0, bytes: 0, replaysStarted: 0, outOfRange: 0, resolved: 0, held: 0, heldCapped: 0, entries: 0 };

  constructor(
    private readonly cfg: FanoutConfig,
    private readonly opts: V2HubOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.resolver = opts.resolver ?? noResolution;
    this.tableHits = opts.tables === undefined ? null : new TableHits(this.index);
    const hub = this;
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
      replayRecord: (s, index, r, cursor) => this.replayRecord(s, index, r, cursor),
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
    this.startsTimer = setInterval(() => this.refreshStarts(), STARTS_REFRESH_MS);
    this.startsTimer.unref();
    this.usage = opts.usage === undefined ? undefined : new StreamUsage(opts.usage.sink, () => this.sessions, opts.usage.periodMs);
  }

  /**
   * Where the fanout's reader starts: transactions at `txEnds` (live), slots at `slotsStarts` (the retained
   * history feeds the slot timeline; live slot updates begin at `slotsEnds`). Called once before any record.
   */
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

  init(txEnds: Map<number, string>, slotsStarts: Map<number, string>, slotsEnds: Map<number, string>, statusEnds?: Map<number, string>): void {
    this.position.set(TopicTag.transactions, toArray(txEnds));
    this.position.set(TopicTag.slots, toArray(slotsStarts));
    // The status topic, when the fanout reads one (fanout.topics.slotStatus, and the topic exists), from live.
    if (statusEnds !== undefined) this.position.set(TopicTag.slotStatus, toArray(statusEnds));
    this.slotsLiveFrom = toArray(slotsEnds);
    this.cursorCache = null;
    this.refreshStarts();
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
    this.held = [];
    this.heldHead = 0;
    this.heldBytes = 0;
    for (const s of [...this.sessions]) s.shutdown();
  }

  // ---- live records ---------------------------------------------------------------------------------------------

  /** A stream.transactions record, with its decoded form when the caller has it (the stream feed decodes once). */
  onTransaction(m: BusMessage, decoded?: TxRecord): void {
    if (this.loadedStreams === 0 && this.heldHead === this.held.length) return this.processTx(m, decoded ?? null, null, null);
    const e: Held = { m, tx: true, record: decoded ?? null, lookups: null, loaded: null, ready: true };
    if (this.loadedStreams > 0 && m.value !== null) {
      let r = decoded ?? null;
      if (r === null) {
        const d = decodeTxRecord(m.value);
        if (d.ok) r = d.record;
      }
      if (r !== null) {
        e.record = r;
        const lookups = readLookups(r.message);
        e.lookups = lookups;
        if (lookups !== null && lookups.length > 0) {
          if (this.tableHits !== null && this.heldHead === this.held.length && this.matchAgainstTables(m, r, lookups)) return;
          e.ready = false;
          let sync = true;
          this.counts.resolved++;
          this.resolver.resolve(lookups, r.slot, (loaded) => {
            if (e.ready) return; // stopped waiting (the hold cap) or the hub closed
            e.loaded = loaded;
            e.ready = true;
            if (!sync) this.drain();
          });
          sync = false;
        }
      }
    }
    if (e.ready && this.heldHead === this.held.length) return this.processTx(m, e.record, e.lookups, e.loaded);
    this.hold(e);
  }

  /**
   * A record with lookups when nothing is held: matched against the held tables' hit lists (no loaded lists made)
   * when every table it names is known. false: some table is not (resolve through the resolver, which may wait).
   */
  private matchAgainstTables(m: BusMessage, r: TxRecord, lookups: readonly TableLookup[]): boolean {
    const t = this.opts.tables!;
    const pre = t.keys.matchSplitRecord(this.index, this.tableHits!, r.accountKeys, r.message, r.slot);
    if (pre === null) return false;
    this.counts.resolved++;
    this.processTx(m, r, lookups, null, pre);
    return true;
  }

  /** Queues a record behind a waiting one, within the caps (past them, the oldest waiting record stops waiting). */
  private hold(e: Held): void {
    if (this.closed) return;
    this.held.push(e);
    this.counts.held++;
    this.heldBytes += e.m.value?.length ?? 0;
    while (this.held.length - this.heldHead > HOLD_MAX_RECORDS || this.heldBytes > HOLD_MAX_BYTES) {
      // The head is the waiting record whenever something is held (drain runs up to the first one that waits).
      const w = this.held[this.heldHead];
      if (w === undefined || w.ready) break;
      w.loaded = allUnresolved(w.lookups!);
      w.ready = true;
      this.counts.heldCapped++;
      this.drain();
    }
    this.drain();
  }

  /** Processes held records from the head while they are ready, in bus order. */
  private drain(): void {
    if (this.draining || this.closed) return;
    this.draining = true;
    try {
      while (this.heldHead < this.held.length) {
        const e = this.held[this.heldHead]!;
        if (!e.ready) break;
        this.held[this.heldHead++] = undefined; // processed: not kept alive by the queue
        this.heldBytes -= e.m.value?.length ?? 0;
        if (e.tx) this.processTx(e.m, e.record, e.lookups, e.loaded);
        else if (e.status === true) this.processStatus(e.m);
        else if (e.entry === true) this.processEntry(e.m);
        else this.processSlot(e.m);
      }
      if (this.heldHead === this.held.length) {
        this.held = [];
        this.heldHead = 0;
      } else if (this.heldHead > 1024 && this.heldHead * 2 > this.held.length) {
        this.held = this.held.slice(this.heldHead);
        this.heldHead = 0;
      }
    } finally {
      this.draining = false;
    }
  }

  /**
   * The matches of a record: on its static keys, and — when a stream has filters with match_loaded_addresses and
   * the record has lookups — on what they load as well (loaded-match.ts). `loaded` is null when the record was
   * not resolved on arrival (no flagged filter then): resolved now if the tables are held, else every table is
   * named unresolved (the flagged filter was added while the record was held behind another).
   */
  private matchTx(index: FilterIndex<V2Session>, r: TxRecord, lookups: readonly TableLookup[] | null, loaded: LoadedAddresses | null, flagged: boolean): { matches: Match<V2Session>[]; loaded: LoadedAddresses | null } {
    index.prepare(r.accountKeys, r.message); // filters on instructions, roles, signatures, votes (filter-index.ts)
    if (!flagged) return { matches: index.match(r.accountKeys), loaded: null };
    lookups ??= readLookups(r.message);
    if (lookups === null || lookups.length === 0) return { matches: index.match(r.accountKeys), loaded: null };
    if (loaded === null) {
      let now: LoadedAddresses | null = null;
      this.resolver.resolve(lookups, r.slot, (l) => void (now ??= l));
      const got: LoadedAddresses | null = now;
      loaded = got ?? allUnresolved(lookups);
    }
    return { matches: matchWithLoaded(index, r.accountKeys, loaded), loaded };
  }

  private processTx(m: BusMessage, decoded: TxRecord | null, lookups: readonly TableLookup[] | null, loadedIn: LoadedAddresses | null, pre: SplitMatch<V2Session>[] | null = null): void {
    const p = m.partition;
    const o = Number(m.offset);
    if (!this.advance(this.position.get(TopicTag.transactions)!, TopicTag.transactions, m)) return;
    if (m.value === null) return;
    let r = decoded;
    if (r === null) {
      const d = decodeTxRecord(m.value);
      if (!d.ok) return;
      r = d.record;
    }
    if (r.slot > this.newest) this.newest = r.slot;
    if (this.index.size.subscribers === 0) return this.afterRecord();
    // Matched against the tables (matchAgainstTables): `loaded` is built when a stream that asked for it receives
    // the record, from the tables as they are now (nothing has changed them since the match).
    const matched = pre !== null ? { matches: mergeSplit(pre), loaded: null } : this.matchTx(this.index, r, lookups, loadedIn, this.loadedStreams > 0);
    const matches = matched.matches;
    let loaded = matched.loaded;
    const lateLoaded = pre !== null;
    // Two shared parts at most, each encoded once: without `loaded`, and with it for streams whose matched filters
    // asked for it.
    let shared: Buffer | undefined;
    let sharedLoaded: Buffer | undefined;
    let loadedBody: Buffer | undefined;
    let cursor: Buffer | undefined;
    for (const mt of matches) {
      const s = mt.sub;
      if (!s.isLive || !s.aboveFloor(TopicTag.transactions, p, o) || r.slot < s.minSlot) continue;
      const mask = mt.mask & ~s.rawMask; // RAW filters take their transactions from stream.entries
      if (mask === 0) continue;
      cursor ??= this.cursor();
      const withLoaded = (lateLoaded || loaded !== null) && (mt.mask & s.loadedMask) !== 0;
      if (withLoaded) loadedBody ??= encodeLoadedAddresses((loaded ??= this.opts.tables!.resolver.loadedNow(lookups!, r.slot)));
      if (s.hasFloor) {
        // Resumed ahead of this hub on some partition: its own cursor until the hub passes (rare, short).
        const own = s.cursor();
        if (own !== cursor) {
          s.deliverTx(mask, mt.set, this.txShared(own, m.key, r, withLoaded ? loadedBody! : null), own, false);
          continue;
        }
      }
      const sh = withLoaded ? (sharedLoaded ??= this.txShared(cursor, m.key, r, loadedBody!)) : (shared ??= this.txShared(cursor, m.key, r, null));
      s.deliverTx(mask, mt.set, sh, cursor, false);
    }
    this.afterRecord();
  }

  onEntry(m: BusMessage): void {
    if (this.entriesOff !== null) return;
    if (this.heldHead === this.held.length) return this.processEntry(m);
    this.hold({ m, tx: false, entry: true, record: null, lookups: null, loaded: null, ready: true });
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

  private processEntry(m: BusMessage): void {
    const p = m.partition;
    const o = Number(m.offset);
    if (!this.advance(this.position.get(TopicTag.entries)!, TopicTag.entries, m)) return;
    if (m.value === null) return;
    const d = decodeEntryRecord(m.value);
    if (!d.ok) return this.afterRecord();
    const r = d.record;
    this.counts.entries++;
    if (r.slot > this.newest) this.newest = r.slot;
    let shared: Buffer | undefined;
    let cursor: Buffer | undefined;
    for (const s of this.sessions) {
      if (!s.entries || !s.isLive || !s.aboveFloor(TopicTag.entries, p, o) || r.slot < s.minSlot) continue;
      cursor ??= this.cursor();
      if (s.hasFloor) {
        const own = s.cursor();
        if (own !== cursor) {
          s.deliverEntry(encodeEntryShared(own, this.now(), r), own, false);
          continue;
        }
      }
      shared ??= encodeEntryShared(cursor, this.now(), r);
      s.deliverEntry(shared, cursor, false);
    }
    if (this.rawStreams > 0 && this.index.size.subscribers > 0) this.deliverRaw(r, p, o);
    this.afterRecord();
  }

  /** The RAW transactions of a live entry record (the position has moved past it). */
  private deliverRaw(r: EntryRecord, p: number, o: number): void {
    const perStream = this.matchRaw(this.index, r, (s) => s.isLive && s.aboveFloor(TopicTag.entries, p, o) && r.slot >= s.minSlot);
    if (perStream === null) return;
    const after = this.cursor();
    const beforePos = clonePosition(this.position);
    beforePos.get(TopicTag.entries)![p] = o;
    const beforeMarks = cloneMarks(this.marks);
    beforeMarks.get(TopicTag.entries)![p] = this.prevMark;
    const before = this.cursorOf(beforePos, beforeMarks);
    // Shared parts per transaction, for the two cursors (most entries are matched by one stream or the same few).
    const cache = new Map<number, Buffer>();
    for (const [s, list] of perStream) {
      let own: { after: Buffer; before: Buffer } | null = null;
      if (s.hasFloor) {
        const a = s.cursor();
        if (a !== after) own = { after: a, before: withEntryOffset(a, p, o, this.prevMark) };
      }
      for (let k = 0; k < list.length; k++) {
        const { i, mask, set } = list[k]!;
        const last = k === list.length - 1;
        if (own !== null) {
          const c = last ? own.after : own.before;
          s.deliverTx(mask, set, this.rawShared(c, r, i), c, false);
          continue;
        }
        const key = i * 2 + (last ? 1 : 0);
        let sh = cache.get(key);
        if (sh === undefined) {
          sh = this.rawShared(last ? after : before, r, i);
          cache.set(key, sh);
        }
        s.deliverTx(mask, set, sh, last ? after : before, false);
      }
    }
  }

  /** Each stream's RAW matches among an entry record's transactions, in entry order; null when there are none. */
  private matchRaw(index: FilterIndex<V2Session>, r: EntryRecord, ok: (s: V2Session) => boolean): Map<V2Session, Array<{ i: number; mask: number; set: CompiledFilterSet }>> | null {
    let out: Map<V2Session, Array<{ i: number; mask: number; set: CompiledFilterSet }>> | null = null;
    for (let i = 0; i < r.txs.length; i++) {
      for (const mt of index.match(entryTxKeys(r.txs[i]!))) {
        const s = mt.sub;
        const mask = mt.mask & s.rawMask;
        if (mask === 0 || !ok(s)) continue;
        out ??= new Map();
        let l = out.get(s);
        if (l === undefined) out.set(s, (l = []));
        l.push({ i, mask, set: mt.set });
      }
    }
    return out;
  }

  private rawShared(cursor: Buffer, r: EntryRecord, i: number): Buffer {
    return encodeTxShared(cursor, this.now(), { slot: r.slot, signature: r.signatures.subarray(i * SIGNATURE_SZ, (i + 1) * SIGNATURE_SZ), decoded: null, raw: r.txs[i]!.wire, observedAtMs: r.observedAtMs, loaded: null });
  }

  onSlot(m: BusMessage): void {
    if (this.heldHead === this.held.length) return this.processSlot(m);
    this.hold({ m, tx: false, record: null, lookups: null, loaded: null, ready: true });
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
    let shared: Buffer | undefined;
    let cursor: Buffer | undefined;
    for (const s of this.sessions) {
      if (!s.slots || !s.isLive || !s.aboveFloor(TopicTag.slots, p, o) || r.slot < s.minSlot) continue;
      if (!s.admitSlotStatus(r.slot, SlotStatusCode.firstShredReceived)) continue;
      cursor ??= this.cursor();
      if (s.hasFloor) {
        const own = s.cursor();
        if (own !== cursor) {
          s.deliverSlot(encodeSlotShared(own, this.now(), r.slot, SlotStatus.firstShredReceived, r.firstSeenMs), own, false);
          continue;
        }
      }
      shared ??= encodeSlotShared(cursor, this.now(), r.slot, SlotStatus.firstShredReceived, r.firstSeenMs);
      s.deliverSlot(shared, cursor, false);
    }
    this.afterRecord();
  }

  /** A stream.slot-status record (bus/topics/stream-slot-status.ts), read only when the fanout has the topic. */
  onSlotStatus(m: BusMessage): void {
    if (this.heldHead === this.held.length) return this.processStatus(m);
    this.hold({ m, tx: false, status: true, record: null, lookups: null, loaded: null, ready: true });
  }

  private processStatus(m: BusMessage): void {
    const offs = this.position.get(TopicTag.slotStatus);
    if (offs === undefined || !this.advance(offs, TopicTag.slotStatus, m)) return;
    const p = m.partition;
    const o = Number(m.offset);
    if (m.value === null) return;
    const r = decodeSlotStatusRecord(m.value);
    if (r === null) return;
    if (r.slot > this.newest) this.newest = r.slot;
    let shared: Buffer | undefined;
    let cursor: Buffer | undefined;
    for (const s of this.sessions) {
      if (!s.slots || !s.isLive || !s.aboveFloor(TopicTag.slotStatus, p, o) || r.slot < s.minSlot) continue;
      if (!s.admitSlotStatus(r.slot, r.status)) continue;
      cursor ??= this.cursor();
      if (s.hasFloor) {
        const own = s.cursor();
        if (own !== cursor) {
          s.deliverSlot(encodeSlotShared(own, this.now(), r.slot, r.status, r.observedAtMs, r.reason, r.block), own, false);
          continue;
        }
      }
      shared ??= encodeSlotShared(cursor, this.now(), r.slot, r.status, r.observedAtMs, r.reason, r.block);
      s.deliverSlot(shared, cursor, false);
    }
    this.afterRecord();
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

  private txShared(cursor: Buffer, key: Buffer | null, r: { slot: bigint; message: Buffer; observedAtMs: number }, loaded: Buffer | null): Buffer {
    const signature = key !== null && key.length === SIGNATURE_SZ ? key : Buffer.alloc(0);
    return encodeTxShared(cursor, this.now(), { slot: r.slot, signature, decoded: r.message, raw: null, observedAtMs: r.observedAtMs, loaded });
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

  // ---- replay ---------------------------------------------------------------------------------------------------

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
          })),
        ),
    });
    return c;
  }

  private replayRecord(s: V2Session, index: FilterIndex<V2Session>, r: ReplayRecord, cursor: () => Buffer): Promise<void> | undefined {
    if (r.value === null) return;
    if (r.tag === TopicTag.transactions) {
      const d = decodeTxRecord(r.value);
      if (!d.ok || d.record.slot < s.minSlot) return;
      const rec = d.record;
      const deliver = (lookups: readonly TableLookup[] | null, loaded: LoadedAddresses | null): void => {
        const { matches, loaded: l } = this.matchTx(index, rec, lookups, loaded, s.loadedMask !== 0);
        for (const x of matches) {
          const c = cursor();
          const withLoaded = l !== null && (x.mask & s.loadedMask) !== 0;
          s.deliverTx(x.mask, x.set, this.txShared(c, r.key, rec, withLoaded ? encodeLoadedAddresses(l) : null), c, true);
        }
      };
      if (s.loadedMask === 0) return void deliver(null, null);
      const lookups = readLookups(rec.message);
      if (lookups === null || lookups.length === 0) return void deliver(null, null);
      // One record of one stream at a time (the replay awaits it), so one resolution per replayed record.
      let sync = true;
      let now: LoadedAddresses | null = null;
      let wake: (() => void) | undefined;
      this.resolver.resolve(lookups, rec.slot, (loaded) => {
        if (sync) now = loaded;
        else {
          if (s.isReplaying) deliver(lookups, loaded);
          wake?.();
        }
      });
      sync = false;
      const got: LoadedAddresses | null = now;
      if (got !== null) return void deliver(lookups, got);
      return new Promise<void>((resolve) => (wake = resolve));
    }
    if (r.tag === TopicTag.entries) return void this.replayEntry(s, index, r, cursor);
    if (!s.slots) return;
    if (r.tag === TopicTag.slotStatus) {
      const st = decodeSlotStatusRecord(r.value);
      if (st === null || st.slot < s.minSlot || !s.admitSlotStatus(st.slot, st.status)) return;
      const c = cursor();
      return void s.deliverSlot(encodeSlotShared(c, this.now(), st.slot, st.status, st.observedAtMs, st.reason, st.block), c, true);
    }
    if (this.position.has(TopicTag.slotStatus)) return; // statuses come from the status topic (see processSlot)
    const sr = decodeSlotRecord(r.value);
    if (sr === null || sr.slot < s.minSlot || !s.admitSlotStatus(sr.slot, SlotStatusCode.firstShredReceived)) return;
    const c = cursor();
    s.deliverSlot(encodeSlotShared(c, this.now(), sr.slot, SlotStatus.firstShredReceived, sr.firstSeenMs), c, true);
  }

  /** One entry record of a replay: its Entry update, and its RAW transactions for this stream's filters. */
  private replayEntry(s: V2Session, index: FilterIndex<V2Session>, rec: ReplayRecord, cursor: () => Buffer): void {
    const d = decodeEntryRecord(rec.value!);
    if (!d.ok || d.record.slot < s.minSlot) return;
    const r = d.record;
    if (s.entries) {
      const c = cursor();
      s.deliverEntry(encodeEntryShared(c, this.now(), r), c, true);
    }
    if (s.rawMask === 0) return;
    const list = this.matchRaw(index, r, () => true)?.get(s);
    if (list === undefined) return;
    const after = cursor();
    const before = withEntryOffset(after, rec.partition, rec.offset, s.replayPrevMark);
    for (let k = 0; k < list.length; k++) {
      const c = k === list.length - 1 ? after : before;
      s.deliverTx(list[k]!.mask, list[k]!.set, this.rawShared(c, r, list[k]!.i), c, true);
    }
  }

  // ---- start resolution -------------------------------------------------------------------------------------------

  private async fetchOffsets(which: 'start' | 'end'): Promise<Position> {
    const tags = this.tags();
    const got = await Promise.all(tags.map((t) => (which === 'start' ? this.opts.bus.startOffsets(this.topicOf(t)) : this.opts.bus.endOffsets(this.topicOf(t)))));
    return new Map(tags.map((t, i) => [t, toArray(got[i]!)]));
  }

  /**
   * The first retained offsets, at most STARTS_MAX_AGE_MS old (a refresher keeps them so; a Kafka round trip per
   * start would cost most of the 100 ms OUT_OF_RANGE promises). Stale by up to that much, a start just past the
   * retention edge is accepted, and its replay then meets the missing records and says so with a retention Gap.
   */
  private async starts(): Promise<Position> {
    const c = this.startsCache;
    if (c !== null && this.now() - c.at < STARTS_MAX_AGE_MS) return c.starts;
    const starts = await this.fetchOffsets('start');
    this.startsCache = { at: this.now(), starts };
    return starts;
  }

  private startsCache: { at: number; starts: Position } | null = null;

  private refreshStarts(): void {
    if (this.refreshing) return;
    this.refreshing = true;
    this.fetchOffsets('start').then(
      (starts) => {
        this.refreshing = false;
        this.startsCache = { at: this.now(), starts };
      },
      () => void (this.refreshing = false),
    );
  }

  private refreshing = false;

  /** Forgets slot marks the bus no longer holds (the slots topic's first retained offsets). */
  private pruneTimeline(starts: Position): void {
    const slotStarts = starts.get(TopicTag.slots)!;
    for (let m = this.timeline.oldest; m !== undefined; ) {
      if (m.offset >= (slotStarts[m.partition] ?? 0)) return;
      this.timeline.dropBefore(m.partition, slotStarts[m.partition] ?? 0);
      m = this.timeline.oldest;
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
    const mark = await oldestRetainedMark(this.timeline, async (m) => (await this.retainedAt(m.appendedAtMs - SLOT_START_MARGIN_MS, starts, checked, true)) !== null);
    let pos = base === null ? null : raisedTo(base, starts);
    if (pos === null && mark !== undefined) pos = await this.slotStartAt(mark, starts, checked);
    pos ??= starts;
    return `cursor ${cursorText(this.cursorOf(raisedTo(pos, starts)))}${mark === undefined ? '' : `, slot ${mark.slot}`}`;
  }

  private async outOfRange(what: string, starts: Position, reads: StreamReads, base: Position | null = null): Promise<StreamError> {
    this.counts.outOfRange++;
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
      const mismatch = await this.logs.check(this.opts.bus, d.position, d.logs, (t) => this.topicOf(t));
      if (mismatch !== null) return this.otherLog(mismatch.why, starts, reads);
      const pos = d.position;
      const orig = clonePosition(pos);
      if (!pos.has(TopicTag.slots)) pos.set(TopicTag.slots, this.livePosition().get(TopicTag.slots)!);
      if (!this.position.has(TopicTag.slotStatus)) {
        // This fanout does not read the status topic: that part of the cursor has nothing to resume here.
        pos.delete(TopicTag.slotStatus);
      } else if (!pos.has(TopicTag.slotStatus)) {
        // A cursor from before the status topic (or from a fanout without it): place the status topic where the
        // cursor's slots position was appended, so the statuses of the slots it has not seen yet are replayed.
        pos.set(TopicTag.slotStatus, await this.statusPositionFor(pos.get(TopicTag.slots)!));
      }
      if (this.entriesOff !== null) pos.delete(TopicTag.entries);
      else if (!pos.has(TopicTag.entries)) {
        // A cursor from before stream.entries was served: it names no point to resume entries from without a gap.
        if (entries) return streamError('invalidStart', { why: `cursor names no position in ${this.cfg.topics.entries} (made before entries were served): start entries and RAW from a slot or a time` });
        pos.set(TopicTag.entries, this.livePosition().get(TopicTag.entries)!);
      }
      // The bus's end offsets only matter for a cursor ahead of this hub (the hub never reads past the end).
      let ahead = false;
      for (const [tag, offs] of pos) offs.forEach((o, p) => (ahead ||= o > (this.position.get(tag)?.[p] ?? 0)));
      const ends = ahead ? await this.fetchOffsets('end') : this.position;
      for (const [tag, offs] of pos) {
        const st = starts.get(tag)!;
        const en = ends.get(tag)!;
        if (offs.length !== st.length) return streamError('invalidStart', { why: `cursor names ${offs.length} partitions of ${this.topicOf(tag)}, which has ${st.length}` });
        for (let p = 0; p < offs.length; p++) {
          if (offs[p]! > en[p]!) return streamError('invalidStart', { why: `cursor is ahead of this bus at ${this.topicOf(tag)}/${p} (a cursor of another cluster?)` });
        }
      }
      if (firstDropped(pos, starts, reads) !== null) return this.outOfRange(`cursor ${cursorText(from.cursor)}`, starts, reads, pos);
      raiseUnread(pos, starts, reads);
      const theirs = new Map([...d.logs].map(([t, l]) => [t, l.marks] as const));
      return { position: pos, minSlot: 0n, marks: marksFor(pos, [[orig, theirs], [this.position, this.marks]]) };
    }
    if ('slot' in from) {
      this.pruneTimeline(starts);
      const oldest = this.timeline.oldest;
      if (oldest === undefined || from.slot > this.timeline.newest!.slot) {
        // Nothing retained yet, or a slot not seen yet: live, and nothing older than the slot.
        if (oldest !== undefined || from.slot > this.newest) return { position: null, minSlot: from.slot };
        return this.outOfRange(`slot ${from.slot}`, starts, reads);
      }
      if (from.slot < oldest.slot) return this.outOfRange(`slot ${from.slot}`, starts, reads);
      const pos = await this.slotStartAt(this.timeline.atOrAfter(from.slot)!, starts, this.slotChecked(reads));
      if (pos === null) return this.outOfRange(`slot ${from.slot}`, starts, reads);
      raiseUnread(pos, starts, reads);
      return { position: pos, minSlot: from.slot };
    }
    const pos = await this.retainedAt(from.timeMs, starts, this.tags().filter((t) => readsTag(reads, t)));
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
    for (const tag of checkedOnly ? checked : this.tags()) {
      const offs = toArray(await this.opts.bus.offsetsForTime(this.topicOf(tag), ms));
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
    const live = this.livePosition().get(TopicTag.slotStatus)!;
    const at = this.timeline.appendedAtOffset(slotOffs);
    if (at === undefined) return live;
    const offs = toArray(await this.opts.bus.offsetsForTime(this.cfg.topics.slotStatus, at - SLOT_START_MARGIN_MS));
    return offs.map((o, p) => Math.min(o, live[p] ?? o));
  }

  private onEnd(s: V2Session, _reason: StreamErrorKind | 'client' | 'server_close'): void {
    if (this.sessions.delete(s)) this.opts.streamLimits.release(s.origin);
    this.replaying.delete(s);
    this.usage?.ended(s);
  }
}

/**
 * `cursor` with one entries-topic partition set back to `offset` (the cursor before that record), whose marker is
 * `mark` (of the record below it).
 */
function withEntryOffset(cursor: Buffer, partition: number, offset: number, mark: number): Buffer {
  const d = decodeCursor(cursor);
  if (!d.ok) return cursor; // our own encoding: cannot happen
  const offs = d.position.get(TopicTag.entries);
  if (offs === undefined) return cursor;
  offs[partition] = offset;
  if (d.logs === null) return encodeCursor(d.position, null);
  const l = d.logs.get(TopicTag.entries);
  if (l !== undefined) {
    const marks = l.marks.slice();
    marks[partition] = mark;
    d.logs.set(TopicTag.entries, { log: l.log, marks });
  }
  return encodeCursor(d.position, stampOf(d.logs));
}
