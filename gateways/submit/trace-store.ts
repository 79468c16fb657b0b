import type { Commitment, TraceEvent } from '../../bus/topics/submit-traces';
import { encodeBase58 } from './base58';
import type { KeySummaries } from './key-summary';
import type { SubmitMetrics } from './metrics';
import type { ForwardOpening, ForwardReport } from './forwarder';
import { commitmentAtLeast, Trace } from './trace';
import type { TraceMetrics } from './trace-metrics';

// Every trace the service holds, keyed by the first signature (latin1 of the 64 raw bytes, as the signature
// cache). Bounded twice: a trace lives `holdMs` from its first acceptance (a blockhash's lifetime, ~60–90 s on
// mainnet, plus a margin for the last statuses and for GET /trace), and past `maxTraces` the oldest goes first
// (counted). Creation order is age order (a trace is never re-inserted), so both sweeps stop at the first young
// trace. Every step's event goes to the sink (the submit.traces producer); settling feeds metrics and the
// per-key summaries.

export interface TraceSink {
  emit(event: TraceEvent): void;
}

export interface TraceStoreOptions {
  holdMs: number;
  maxTraces: number;
  sink?: TraceSink;
  metrics: TraceMetrics;
  submitMetrics: SubmitMetrics;
  summaries: KeySummaries;
  /** Wall clock, ms since epoch. */
  now?: () => number;
}

export interface AcceptInfo {
  transport: string;
  rental: string;
  /** Normalized API key (GET /trace shows a trace only to a key that submitted it). */
  apiKey: string;
  /** The raw 32-byte recent blockhash (a view: copied as base58 here). */
  blockhash: Uint8Array;
  forwarded: boolean;
}

export class TraceStore {
  private readonly traces = new Map<string, Trace>();
  /**
   * The keys in creation order from `head`. Every removal is of the oldest (the hold time, the cap), so the front is
   * always the next to go. Not the Map's own order: iterating a Map steps over every entry deleted from it that V8
   * still keeps in its table until a rehash, so taking the first key cost up to ~60 µs per eviction at 100k
   * traces (measured: 20 → 160 µs per accepted transaction as the store sat at its cap).
   */
  private order: string[] = [];
  private head = 0;
  private readonly now: () => number;
  /** The newest slot the service knows (stream.slots, the poller's status answers); null until one arrives. */
  private slot: number | null = null;
  /** Traces not settled, for the poller (it removes what settled or left). */
  readonly pending = new Set<Trace>();

  constructor(private readonly opts: TraceStoreOptions) {
    this.now = opts.now ?? Date.now;
  }

  get size(): number {
    return this.traces.size;
  }

  get currentSlot(): number | null {
    return this.slot;
  }

  noteSlot(slot: number): void {
    if (this.slot === null || slot > this.slot) this.slot = slot;
  }

  get(sigKey: string): Trace | undefined {
    return this.traces.get(sigKey);
  }

  /** An accepted submission: a new trace, or a resend joining its trace. Returns its base58 signature and the forward reporter. */
  accept(sigKey: string, signature: Uint8Array, info: AcceptInfo): { signature: string; report: ForwardReport } {
    const t = this.now();
    let trace = this.traces.get(sigKey);
    if (trace === undefined) {
      this.sweep(t);
      if (this.traces.size >= this.opts.maxTraces) {
        this.dropOldest();
        this.opts.metrics.droppedCap.inc();
      }
      // The blockhash as latin1 (cheap: read through a view, not copied); its base58 is made only when asked for
      // (expiry checks, views).
      const bh = info.blockhash;
      trace = new Trace(encodeBase58(signature), info.rental, info.apiKey, info.transport, t, this.slot, Buffer.from(bh.buffer, bh.byteOffset, bh.byteLength).toString('latin1'));
      this.traces.set(sigKey, trace);
      this.order.push(sigKey);
      this.pending.add(trace);
      this.emit(trace.firstEvent(info.forwarded));
    } else {
      this.emit(trace.resent(t, info.transport, info.apiKey, info.forwarded, this.slot));
    }
    const tr = trace;
    const report: ForwardReport = (route, o) => {
      if (o === 'skipped') this.emit(tr.forwarded(this.now(), route, 'skipped'));
      else this.emit(o.ok ? tr.forwarded(this.now(), route, 'ok', undefined, o.ms, o.leaders) : tr.forwarded(this.now(), route, 'error', o.error, o.ms, o.leaders));
    };
    return { signature: tr.signature, report };
  }

  /** The trace a forward opens once a route has taken the transaction (the forwarder calls open()). */
  opening(sigKey: string, signature: Uint8Array, info: AcceptInfo): TraceOpening {
    return new TraceOpening(this, sigKey, signature, info);
  }

  /** The signature appeared on stream.transactions (`at` = when ingest saw the shreds). */
  seen(sigKey: string, slot: number, at: number): void {
    const trace = this.traces.get(sigKey);
    if (trace === undefined) return;
    const e = trace.seenInShreds(at, slot);
    if (e === null) return;
    this.opts.metrics.acceptToSeenMs.observe(Math.max(0, at - trace.acceptedAt));
    this.emit(e);
  }

  /** A status from the chain node. Returns true when the trace needs no more polling (target commitment reached). */
  landed(trace: Trace, slot: number, err: unknown, commitment: Commitment, target: Commitment): boolean {
    const first = trace.landing === null;
    const e = trace.landed(this.now(), slot, err, commitment);
    if (e !== null) this.emit(e);
    if (first && trace.landing !== null) this.settle(trace);
    const done = trace.landing !== null && commitmentAtLeast(trace.landing.commitment, target);
    if (done) this.pending.delete(trace);
    return done;
  }

  expired(trace: Trace): void {
    const e = trace.expired(this.now());
    if (e === null) return;
    this.emit(e);
    this.pending.delete(trace);
    this.settle(trace);
  }

  /** Drops what is older than the hold time. The poller calls this each tick; accept() when it creates one. */
  sweep(t = this.now()): void {
    while (this.head < this.order.length) {
      const trace = this.traces.get(this.order[this.head]!)!;
      if (t - trace.acceptedAt <= this.opts.holdMs) return;
      if (!trace.settled) this.opts.metrics.droppedUnsettled.inc();
      this.dropOldest();
    }
  }

  private dropOldest(): void {
    const k = this.order[this.head]!;
    this.head++;
    if (this.head >= 4096 && this.head * 2 >= this.order.length) {
      this.order = this.order.slice(this.head);
      this.head = 0;
    }
    const trace = this.traces.get(k)!;
    this.traces.delete(k);
    this.pending.delete(trace);
  }

  private settle(trace: Trace): void {
    const m = this.opts.metrics;
    const routes = trace.routesOk.map((r) => this.opts.submitMetrics.route(r));
    const l = trace.landing;
    if (l !== null) {
      (l.status === 'ok' ? m.landedOk : m.landedFailed).inc();
      m.acceptToLandedMs.observe(Math.max(0, l.at - trace.acceptedAt));
      const d = trace.slotDeltaOf(l.slot);
      if (d !== undefined) m.slotDelta.observe(d);
      for (const r of routes) {
        r.landed.inc();
        if (d !== undefined) r.slotDelta.observe(d);
      }
      for (const k of trace.keys) this.opts.summaries.landed(k, d, l.status === 'failed');
    } else {
      m.expired.inc();
      for (const r of routes) r.expired.inc();
      for (const k of trace.keys) this.opts.summaries.expired(k);
    }
  }

  private emit(e: TraceEvent): void {
    this.opts.sink?.emit(e);
  }
}


/** An accepted transaction's trace, opened by the forward (forwarder.ts) before any route reports. */
class TraceOpening implements ForwardOpening {
  /** base58 of the signature, once opened. */
  signature: string | undefined;

  constructor(
    private readonly store: TraceStore,
    private readonly sigKey: string,
    private readonly sig: Uint8Array,
    private readonly info: AcceptInfo,
  ) {}

  open(): ForwardReport {
    const t = this.store.accept(this.sigKey, this.sig, this.info);
    this.signature = t.signature;
    return t.report;
  }
}
