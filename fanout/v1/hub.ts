import type { BusMessage } from '../../bus/bus';
import { decodeSlotRecord } from '../../bus/topics/stream-slots';
import type { Rental } from '../../bus/topics/rentals';
import type { UsageSink } from '../../bus/usage-producer';
import { StreamUsage } from '../stream-usage';
import type { Log } from '../../infra/base/log';
import type { FanoutConfig } from '../config';
import { RecentKeys } from '../dedupe';
import { streamError, type StreamError } from '../errors';
import { maskNames, type CompiledFilterSet } from '../filter/compile';
import { FilterIndex } from '../filter/filter-index';
import { fanoutMetrics } from '../metrics';
import type { QueueBudget } from '../queue-budget';
import type { EndReason } from '../errors';
import { Session, type SessionOptions, type SessionPort } from './session';
import type { StreamLimits, StreamOrigin } from '../stream-limits';
import { streamResources, type StreamResources } from '../stream-resources';
import { KeyRate } from '../update-rate';
import type { TxRecord } from '../../bus/topics/stream-transactions';
import type { LookupTables } from '../lookup-tables/lookup-tables';
import { recordLookups } from '../lookup-tables/read-lookups';
import { TableHits } from '../lookup-tables/table-hits';
import type { Match } from '../filter/filter-index';

// The v1 hub between the bus reader (../stream-feed.ts: de-duplicated by signature, decoded once) and the
// sessions: every transaction is matched once through the filter index, encoded once per distinct `filters` list
// and queued to each matching session. The transaction's protobuf bytes come from ingest and are never re-encoded: a
// response is created_at + filters + those bytes (ResponseEncoder). Slots go to every session with
// new_seen_slots on; heartbeats to every session.
//
// With a lookup-table cache (fanout.lookupTables.rpcUrl; the feed keeps it up to date from the stream) and
// fanout.lookupTables.matchV1, the filters also see what a transaction loads through its tables: one whose
// tables are held is matched at once, one naming an unknown table waits for it at most waitMs (it is then
// delivered after transactions that came later), and neither changes the response bytes.

/** Builds response bytes. The transaction message is copied in as is. */
export interface ResponseEncoder {
  /** The `filters` field (2) for these names, to prepend to many responses. */
  filterNames(names: string[]): Buffer;
  transaction(createdAtMs: number, filterField: Buffer, txMessage: Buffer): Buffer;
  /** The same response after `headroom` unwritten bytes, when the encoder can (saves a copy when framing). */
  transactionAfter?(headroom: number, createdAtMs: number, filterField: Buffer, txMessage: Buffer): Buffer;
  /** A response whose only field is ping_id (0 = heartbeat). */
  ping(id: number): Buffer;
  /** A response with only created_at and new_slot. */
  slot(createdAtMs: number, slot: bigint): Buffer;
}

export interface FanoutStats {
  subscribers: number;
  /** Transactions processed after dedupe. */
  transactions: number;
  slots: number;
  /** Responses and bytes handed to subscriber streams (transactions, slots, pings, heartbeats). */
  delivered: number;
  /** Of those, transaction responses. */
  deliveredTransactions: number;
  bytes: number;
  dedupeDrops: number;
  badRecords: number;
  disconnects: Partial<Record<EndReason, number>>;
  queue: QueueStats;
  /** Streams held per connection/IP bookkeeping. */
  connections: number;
  index: { subscribers: number; matchAll: number; keys: number };
}

export interface QueueStats {
  /** Messages waiting, all subscribers; the fullest queue. */
  sum: number;
  max: number;
  /** Bytes waiting, all subscribers (what the process budget bounds), and the highest value seen. */
  bytes: number;
  peakBytes: number;
  budgetBytes: number;
  /** Subscribers ended to stay within the budget. */
  budgetEvictions: number;
  /** Age of the oldest waiting message, ms. */
  lagMaxMs: number;
}

/** Slots are few per second; this covers minutes of redundant ingest workers. */
const SLOT_DEDUPE_WINDOW = 4096;

interface NamesField {
  bytes: Buffer;
  /** The bytes as latin1: subscribers with the same names share one encoded response. */
  key: string;
}

export class Fanout {
  private readonly index = new FilterIndex<Session>();
  /** Which addresses of each held table the index's filters list (matchV1: matched against tables, not keys). */
  private readonly tableHits = new TableHits(this.index);
  private readonly sessions = new Set<Session>();
  private readonly slotSeen = new RecentKeys(SLOT_DEDUPE_WINDOW);
  private readonly namesCache = new WeakMap<CompiledFilterSet, Map<number, NamesField>>();
  private readonly heartbeatBytes: Buffer;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly lagSweep: NodeJS.Timeout;
  private readonly budget: QueueBudget;
  private readonly compileBudget: KeyRate;
  private readonly streamLimits: StreamLimits;
  private readonly dropSource: () => void;
  private readonly limits: SessionOptions['limits'];
  /** Set only when v1 filters match loaded addresses (fanout.lookupTables.matchV1 with a cache). */
  private readonly matchLoaded: LookupTables | undefined;
  private nextId = 1;
  private closed = false;
  private usage: StreamUsage | undefined;
  private readonly counts = { transactions: 0, slots: 0, delivered: 0, deliveredTransactions: 0, bytes: 0, dedupeDrops: 0, badRecords: 0 };
  private readonly disconnects: Partial<Record<EndReason, number>> = {};

  constructor(
    cfg: FanoutConfig,
    private readonly enc: ResponseEncoder,
    private readonly log: Log,
    private readonly now: () => number = Date.now,
    /** The process's lookup-table cache, when one is configured (fed by the stream feed; closed by its owner). */
    lookupTables?: LookupTables,
    /** The process's queue budget and stream caps, shared with v2 (the server's); a hub of its own by default. */
    resources: StreamResources = streamResources(cfg),
  ) {
    this.matchLoaded = cfg.lookupTables.matchV1 ? lookupTables : undefined;
    this.limits = {
      maxFilters: cfg.maxFilters,
      maxKeysPerList: cfg.maxKeysPerList,
      maxFilterNameLen: cfg.maxFilterNameLen,
      maxFilterUpdatesPerSec: cfg.maxFilterUpdatesPerSec,
      maxBytes: cfg.queueMaxBytes,
      maxMessages: cfg.queueMaxMessages,
      maxLagMs: cfg.queueMaxLagMs,
      maxKeysPerStream: cfg.maxKeysPerStream,
      maxFilterKeysPerSec: cfg.maxFilterKeysPerSec,
      maxKeysTotal: cfg.maxKeysTotal,
    };
    this.budget = resources.budget;
    this.compileBudget = new KeyRate(cfg.maxFilterKeysPerSecTotal);
    this.streamLimits = resources.streamLimits;
    this.heartbeatBytes = enc.ping(0);
    // One timer for all sessions; every session gets it, whatever its filters (that is how dead peers show).
    this.heartbeat = setInterval(() => {
      for (const s of this.sessions) s.send(this.heartbeatBytes);
    }, cfg.heartbeatMs);
    this.heartbeat.unref();
    // A queue that lags but receives nothing new is caught here (a push checks the bound too).
    this.lagSweep = setInterval(() => {
      const now = this.now();
      for (const q of [...this.budget.backlogged]) q.checkLag(now);
    }, Math.min(1000, Math.max(10, Math.floor(cfg.queueMaxLagMs / 2))));
    this.lagSweep.unref();
    this.dropSource = fanoutMetrics.addSource({
      subscribers: () => this.sessions.size,
      queueDepth: () => this.queueDepth(),
      connections: () => this.streamLimits.connections,
      budgetBytes: () => this.budget.maxBytes,
      indexKeys: () => this.index.totalKeys,
    });
  }

  /**
   * A new stream, empty: no filters, no slots. `origin` (connection and IP) counts it against the per-connection
   * and per-IP caps; a refused stream is returned as the error to end it with (already counted as a disconnect).
   */
  open(port: SessionPort, rental?: Rental, origin?: StreamOrigin): Session | StreamError {
    const refusal = this.closed ? null : this.streamLimits.admit(origin);
    if (refusal !== null) {
      const e = streamError('tooManyStreams', refusal);
      fanoutMetrics.streamRefused(refusal.per).inc();
      this.refused(e);
      return e;
    }
    const s = new Session(
      this.nextId++,
      port,
      {
        limits: this.limits,
        index: this.index,
        pingResponse: (id) => (id === 0 ? this.heartbeatBytes : this.enc.ping(id)),
        now: this.now,
        onWrite: this.onWrite,
        onOverflow: (limit) => fanoutMetrics.slowConsumer(limit).inc(),
        onFilterUpdate: (ms, keys) => {
          fanoutMetrics.filterUpdateMs.observe(ms);
          fanoutMetrics.filterUpdateKeys.inc(keys);
        },
        onEnd: this.onEnd,
        budget: this.budget,
        compileBudget: this.compileBudget,
      },
      rental,
      origin,
    );
    if (this.closed) s.shutdown();
    else this.sessions.add(s);
    return s;
  }

  /** Bills each rental's streams on `sink`: one usage event per rental per period, and one when a stream ends. */
  meterUsage(sink: UsageSink, periodMs: number): void {
    this.usage = new StreamUsage(sink, () => this.sessions, periodMs);
  }

  /** A stream refused before it became a session (authentication); counted like any other end. */
  refused(e: StreamError): void {
    this.countEnd(e.kind);
  }

  /** Ends every session with `shuttingDown` and stops the heartbeat. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    clearInterval(this.lagSweep);
    this.usage?.close();
    for (const s of [...this.sessions]) s.shutdown();
    this.dropSource();
  }

  stats(): FanoutStats {
    return {
      subscribers: this.sessions.size,
      ...this.counts,
      disconnects: { ...this.disconnects },
      queue: this.queueDepth(),
      connections: this.streamLimits.connections,
      index: this.index.size,
    };
  }

  /** A first-seen transaction (the feed de-duplicated and decoded it). */
  transaction(r: TxRecord): void {
    this.counts.transactions++;
    fanoutMetrics.transactions.inc();
    if (this.matchLoaded !== undefined) {
      const matches = this.matchLoaded.keys.matchRecord(this.index, this.tableHits, r);
      if (matches === null) return this.matchWhenResolved(this.matchLoaded, r);
      return this.deliver(matches, r);
    }
    this.deliver(this.index.match(r.accountKeys), r);
  }

  /** A transaction naming a table not held yet: matched once the resolver answers (at most waitMs later). */
  private matchWhenResolved(lt: LookupTables, r: TxRecord): void {
    const lookups = recordLookups(r);
    if (lookups === null) return this.deliver(this.index.match(r.accountKeys), r);
    lt.resolver.resolve(lookups, r.slot, (loaded) => {
      if (this.closed) return;
      this.deliver(this.index.match(lt.keys.withLoaded(r.accountKeys, loaded)), r);
    });
  }

  private deliver(matches: Match<Session>[], r: TxRecord): void {
    if (matches.length === 0) return;
    const createdAt = this.now();
    const { message, observedAtMs } = r;
    // Usually one encoding: most clients name filters alike. The first is kept aside (no Map per transaction).
    let firstKey: string | undefined;
    let first: Buffer | undefined;
    let byNames: Map<string, Buffer> | undefined;
    for (const mt of matches) {
      // A subscriber usually matches with the same filters time after time: its last names are kept on it.
      const sub = mt.sub;
      let names = sub.names;
      if (names === null || sub.namesSet !== mt.set || sub.namesMask !== mt.mask) {
        names = this.namesField(mt.set, mt.mask);
        sub.namesSet = mt.set;
        sub.namesMask = mt.mask;
        sub.names = names;
      }
      let resp: Buffer | undefined;
      if (first === undefined) {
        firstKey = names.key;
        resp = first = this.enc.transaction(createdAt, names.bytes, message);
      } else if (names.key === firstKey) {
        resp = first;
      } else {
        byNames ??= new Map();
        resp = byNames.get(names.key);
        if (resp === undefined) {
          resp = this.enc.transaction(createdAt, names.bytes, message);
          byNames.set(names.key, resp);
        }
      }
      sub.send(resp, observedAtMs);
    }
  }

  /** A live stream.slots record. */
  slot(m: BusMessage): void {
    if (m.key === null || m.value === null) return this.bad('slot record without key or value');
    if (!this.slotSeen.firstSeen(m.key)) return this.duplicate();
    const r = decodeSlotRecord(m.value);
    if (r === null) return this.bad('slot record does not decode');
    this.counts.slots++;
    let resp: Buffer | undefined;
    for (const s of this.sessions) {
      if (!s.newSeenSlots) continue;
      resp ??= this.enc.slot(this.now(), r.slot);
      s.send(resp);
    }
  }

  private namesField(set: CompiledFilterSet, mask: number): NamesField {
    let perSet = this.namesCache.get(set);
    if (perSet === undefined) {
      perSet = new Map();
      this.namesCache.set(set, perSet);
    }
    let f = perSet.get(mask);
    if (f === undefined) {
      const bytes = this.enc.filterNames(maskNames(set, mask));
      f = { bytes, key: bytes.toString('latin1') };
      perSet.set(mask, f);
    }
    return f;
  }

  private readonly onWrite = (bytes: number, observedAtMs: number): void => {
    this.counts.delivered++;
    this.counts.bytes += bytes;
    fanoutMetrics.messagesSent.inc();
    fanoutMetrics.bytesSent.inc(bytes);
    if (!Number.isNaN(observedAtMs)) {
      this.counts.deliveredTransactions++;
      fanoutMetrics.latencyMs.observe(Date.now() - observedAtMs);
    }
  };

  private readonly onEnd = (s: Session, reason: EndReason): void => {
    if (this.sessions.delete(s)) this.streamLimits.release(s.origin);
    this.usage?.ended(s);
    this.countEnd(reason);
    if (reason !== 'client' && reason !== 'server_close') this.log.info({ session: s.id, rental: s.rental?.id, reason }, 'stream ended by server');
  };

  private countEnd(reason: EndReason): void {
    this.disconnects[reason] = (this.disconnects[reason] ?? 0) + 1;
    fanoutMetrics.disconnect(reason).inc();
  }

  private queueDepth(): QueueStats {
    let sum = 0;
    let max = 0;
    for (const s of this.sessions) {
      const d = s.queueDepth;
      sum += d;
      if (d > max) max = d;
    }
    const b = this.budget;
    return { sum, max, bytes: b.bytes, peakBytes: b.peak, budgetBytes: b.maxBytes, budgetEvictions: b.evictions, lagMaxMs: b.maxLagMs(this.now()) };
  }

  /** A transaction the feed dropped as seen before. */
  duplicate(): void {
    this.counts.dedupeDrops++;
    fanoutMetrics.dedupeDrops.inc();
  }

  /** A record that does not decode. */
  bad(reason: string): void {
    this.counts.badRecords++;
    fanoutMetrics.badRecords.inc();
    // Rate of bad records is visible in the counter; one log line per record would flood on a format change.
    if (this.counts.badRecords <= 10 || this.counts.badRecords % 10_000 === 0) this.log.warn({ reason, total: this.counts.badRecords }, 'bad stream record skipped');
  }
}
