// SourceBudgets: who may spend a leader-signature verify. A verify (~65–96 µs in Node) is the one dear step
// of ingest, and a forged shred with a plausible header costs one; so verifies that FAIL are charged to the
// sending address, from a token bucket with a refill. A source out of tokens has the shreds that would need
// a verify dropped before any hashing ('source_budget'); shreds that climb to an already-proven set still
// go through, so an honest source that is also spoofed keeps completing sets it has begun.
//
// Two classes:
//   good     — the address sent a shred that verified or climbed to a proven root. Its own bucket only.
//   unproven — never did. Its own bucket AND a pool shared by every unproven source, so that many
//              addresses (spoofed, or churned out of the bounded table) together cannot spend more than the
//              pool's refill: the verifies of a good source never compete with them.
// A successful verify costs nothing: a good feed (one verify per FEC set) is never throttled by its own traffic.
//
// Both tables are bounded (oldest dropped first). An unproven source dropped and seen again starts with a
// full bucket, which the shared pool caps. No source (replay from a file, tests) = no budget.

import { OldestFirstMap } from '../../infra/base/oldest-first';
export type SourceClass = 'good' | 'unproven';

export interface SourceBudgetOptions {
  /** Failed verifies a source may spend at once, and per second after (defaults 64, 100). */
  perSourceBurst?: number;
  perSourceRefillPerS?: number;
  /** Failed verifies all unproven sources together may spend at once, and per second after (defaults 256, 500). */
  unprovenBurst?: number;
  unprovenRefillPerS?: number;
  /** Sources tracked per class (default 4096 unproven, 1024 good). */
  maxUnproven?: number;
  maxGood?: number;
}

class Bucket {
  constructor(
    public tokens: number,
    public lastMs: number,
  ) {}

  /** Refills up to `burst` at `perMs`, then says whether one token is there. */
  has(nowMs: number, burst: number, perMs: number): boolean {
    const dt = nowMs - this.lastMs;
    if (dt > 0) {
      this.tokens = Math.min(burst, this.tokens + dt * perMs);
      this.lastMs = nowMs;
    }
    return this.tokens >= 1;
  }
}

export class SourceBudgets {
  private readonly burst: number;
  private readonly perMs: number;
  private readonly poolBurst: number;
  private readonly poolPerMs: number;
  private readonly maxUnproven: number;
  private readonly maxGood: number;
  // Oldest first in O(1) (infra/base/oldest-first.ts): a flood from many addresses evicts an unproven one per new
  // address, and a plain Map's first key walks every entry deleted before it.
  private readonly unproven = new OldestFirstMap<string, Bucket>();
  private readonly good = new OldestFirstMap<string, Bucket>();
  private readonly pool: Bucket;

  constructor(opts: SourceBudgetOptions = {}) {
    this.burst = opts.perSourceBurst ?? 64;
    this.perMs = (opts.perSourceRefillPerS ?? 100) / 1000;
    this.poolBurst = opts.unprovenBurst ?? 256;
    this.poolPerMs = (opts.unprovenRefillPerS ?? 500) / 1000;
    this.maxUnproven = opts.maxUnproven ?? 4096;
    this.maxGood = opts.maxGood ?? 1024;
    this.pool = new Bucket(this.poolBurst, 0);
  }

  classOf(source: string | undefined): SourceClass {
    return source !== undefined && this.good.has(source) ? 'good' : 'unproven';
  }

  isGood(source: string): boolean {
    return this.good.has(source);
  }

  /** May `source` spend a verify now? (Only failures are charged: see failed().) */
  allow(source: string | undefined, nowMs: number): boolean {
    if (source === undefined) return true;
    const g = this.good.get(source);
    if (g !== undefined) return g.has(nowMs, this.burst, this.perMs);
    let b = this.unproven.get(source);
    if (b === undefined) {
      b = new Bucket(this.burst, nowMs);
      this.unproven.set(source, b);
      if (this.unproven.size > this.maxUnproven) this.unproven.deleteOldest();
    }
    return b.has(nowMs, this.burst, this.perMs) && this.pool.has(nowMs, this.poolBurst, this.poolPerMs);
  }

  /** A verify spent on `source`'s shred failed (cost 1), or a forgery was caught by the root cache (a fraction). */
  failed(source: string | undefined, cost: number): void {
    if (source === undefined) return;
    const g = this.good.get(source);
    if (g !== undefined) {
      g.tokens -= cost;
      return;
    }
    const b = this.unproven.get(source);
    if (b !== undefined) b.tokens -= cost;
    this.pool.tokens -= cost;
  }

  /** `source` sent a shred that verified or climbed to a proven root: it is good from now on. */
  proven(source: string | undefined, nowMs: number): void {
    if (source === undefined || this.good.has(source)) return;
    const b = this.unproven.get(source) ?? new Bucket(this.burst, nowMs);
    this.unproven.delete(source);
    this.good.set(source, b);
    if (this.good.size > this.maxGood) this.good.deleteOldest();
  }

  sizes(): { good: number; unproven: number } {
    return { good: this.good.size, unproven: this.unproven.size };
  }
}
