import type { Commitment } from '../../bus/topics/submit-traces';
import type { Log } from '../../infra/base/log';
import { MAX_STATUSES_PER_CALL, type StatusSource } from './status-source';
import type { Trace } from './trace';
import type { TraceMetrics } from './trace-metrics';
import type { TraceStore } from './trace-store';

// Settles traces from the chain node's view. One tick at a time, every `intervalMs`:
//   1. sweep the store (hold time);
//   2. take the pending traces polled longest ago (round robin: a polled trace moves to the back), at most
//      maxStatusCallsPerTick × 256 of them; the rest wait for the next tick (counted);
//   3. for the batch's blockhashes whose traces are older than `expiryCheckAfterMs`: isBlockhashValid, at most
//      maxBlockhashChecksPerTick calls (an invalid answer is final and remembered; a valid one is rechecked after
//      `blockhashRecheckMs`);
//   4. getSignatureStatuses in batches of ≤ 256: a status lands the trace (polling continues until `commitment`);
//      no status and a blockhash found invalid in step 3 (before this query) = expired — it can no longer land.
// So the cost is at most (maxStatusCallsPerTick + maxBlockhashChecksPerTick) calls per interval, whatever the load.
// A failed call ends the tick (the node that refused one call would refuse the next) and the following ticks
// wait out a backoff that doubles from one interval up to MAX_BACKOFF_MS, reset by the first call that
// succeeds: an unreachable status node costs one call per backoff, not the whole budget every interval.

export interface StatusPollerOptions {
  intervalMs: number;
  maxStatusCallsPerTick: number;
  maxBlockhashChecksPerTick: number;
  expiryCheckAfterMs: number;
  blockhashRecheckMs: number;
  /** Polling stops once a landing reaches this commitment. */
  commitment: Commitment;
  log: Log;
}

/** Blockhash verdicts remembered at most (oldest first out). */
const MAX_BLOCKHASHES = 10_000;
const WARN_EVERY_MS = 10_000;
/** The longest wait after failed calls: a node back up is polled again within this. */
export const MAX_BACKOFF_MS = 10_000;

export class StatusPoller {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private closed = false;
  /** blockhash → checkedAt (wall ms) when valid, or -1 once found invalid. */
  private readonly blockhashes = new Map<string, number>();
  private lastWarn = 0;
  /** After failed calls: no call before this (wall ms), and the next wait if the next call fails too. */
  private retryAt = 0;
  private backoffMs = 0;

  constructor(
    private readonly store: TraceStore,
    private readonly source: StatusSource,
    private readonly metrics: TraceMetrics,
    private readonly opts: StatusPollerOptions,
  ) {}

  start(): void {
    const loop = (): void => {
      if (this.closed) return;
      this.running = this.tick().finally(() => {
        this.running = null;
        if (!this.closed) this.timer = setTimeout(loop, this.opts.intervalMs);
      });
    };
    this.timer = setTimeout(loop, this.opts.intervalMs);
  }

  /** One round (tests drive it directly). Never rejects. */
  async tick(now = Date.now()): Promise<void> {
    this.store.sweep(now);
    if (now < this.retryAt) return;
    const max = this.opts.maxStatusCallsPerTick * MAX_STATUSES_PER_CALL;
    const batch: Trace[] = [];
    for (const t of this.store.pending) {
      if (batch.length >= max) break;
      batch.push(t);
    }
    if (this.store.pending.size > batch.length) this.metrics.pollBacklog.inc(this.store.pending.size - batch.length);
    if (batch.length === 0) return;
    // Round robin: what is polled now goes to the back of the line.
    for (const t of batch) {
      this.store.pending.delete(t);
      this.store.pending.add(t);
    }
    const invalid = await this.checkBlockhashes(batch, now);
    if (invalid === null) return;
    for (let i = 0; i < batch.length; i += MAX_STATUSES_PER_CALL) {
      const part = batch.slice(i, i + MAX_STATUSES_PER_CALL);
      this.metrics.statusCalls.inc();
      const r = await this.source.statuses(part.map((t) => t.signature));
      if (!r.ok) return this.failed('getSignatureStatuses', r.error, now);
      this.succeeded();
      if (r.slot > 0) this.store.noteSlot(r.slot);
      for (let k = 0; k < part.length; k++) {
        const t = part[k]!;
        if (!this.store.pending.has(t)) continue; // dropped (cap) or settled meanwhile
        const s = r.statuses[k];
        if (s !== null && s !== undefined) this.store.landed(t, s.slot, s.err, s.commitment, this.opts.commitment);
        else if (t.landing === null && invalid.has(t.blockhash)) this.store.expired(t);
      }
    }
  }

  /** The batch's blockhashes found invalid (now or before), checking at most the per-tick budget; null after a failed call. */
  private async checkBlockhashes(batch: Trace[], now: number): Promise<Set<string> | null> {
    const invalid = new Set<string>();
    const toCheck: string[] = [];
    for (const t of batch) {
      if (t.landing !== null || now - t.acceptedAt < this.opts.expiryCheckAfterMs) continue;
      const v = this.blockhashes.get(t.blockhash);
      if (v === -1) invalid.add(t.blockhash);
      else if ((v === undefined || now - v >= this.opts.blockhashRecheckMs) && !toCheck.includes(t.blockhash) && toCheck.length < this.opts.maxBlockhashChecksPerTick) toCheck.push(t.blockhash);
    }
    for (const bh of toCheck) {
      this.metrics.blockhashChecks.inc();
      // Judged at `confirmed`: a blockhash too old for the confirmed bank is too old for every bank built on it.
      const r = await this.source.blockhashValid(bh, 'confirmed');
      if (!r.ok) {
        this.failed('isBlockhashValid', r.error, now);
        return null;
      }
      this.succeeded();
      this.blockhashes.delete(bh);
      if (this.blockhashes.size >= MAX_BLOCKHASHES) this.blockhashes.delete(this.blockhashes.keys().next().value!);
      this.blockhashes.set(bh, r.valid ? now : -1);
      if (!r.valid) invalid.add(bh);
    }
    return invalid;
  }

  private failed(method: string, error: string, now: number): void {
    this.metrics.statusErrors.inc();
    this.backoffMs = Math.min(MAX_BACKOFF_MS, this.backoffMs === 0 ? this.opts.intervalMs : this.backoffMs * 2);
    this.retryAt = now + this.backoffMs;
    const wall = Date.now();
    if (wall - this.lastWarn >= WARN_EVERY_MS) {
      this.lastWarn = wall;
      this.opts.log.warn({ method, error, retryInMs: this.backoffMs }, 'trace status call failed (traces stay pending; counted; polling backs off)');
    }
  }

  private succeeded(): void {
    this.backoffMs = 0;
    this.retryAt = 0;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    await this.running;
  }
}
