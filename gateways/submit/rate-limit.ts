// Per-rental transaction rate (the rental's TPS): a token bucket per rental, refilled continuously at `tps`
// tokens/s, holding at most one second's worth (so a burst of `tps` is fine, a sustained excess is not).
// Rentals share nothing; keys of one rental share its bucket (TPS is chosen per rental). A rental with tps 0
// may not submit. Buckets are few (one per active rental) and bounded: the oldest idle one goes first.
//
// Fleet-wide (gateways.submit.fleet, on a Kafka bus): the bucket stays, and a FleetBudget over a 1 s window
// counts every instance's submissions (gateways/core/fleet-budget.ts); while other instances are heard from, a
// submission needs room in both, and still does when the peers have gone quiet (then, with the bus down, within
// its share). An instance that never heard a peer answers from the bucket alone: one instance answers exactly as
// before.

import type { FleetBudget } from '../core';

/** The fleet window of a rental's TPS: at most `tps` submissions in any second, fleet-wide. */
export const FLEET_TPS_WINDOW_MS = 1_000;

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly maxBuckets = 100_000,
    private readonly now: () => number = () => performance.now(),
    /** The fleet's count (wall clock: its windows are compared across instances). */
    private readonly fleet?: FleetBudget,
    private readonly wallNow: () => number = Date.now,
  ) {}

  /** Takes one token; false = over the limit (nothing taken). */
  take(rentalId: string, tps: number): boolean {
    if (!(tps > 0)) return false;
    if (this.fleet === undefined) return this.takeLocal(rentalId, tps);
    const wall = this.wallNow();
    // Once it has heard a peer, the fleet's count of the last second — with peers now; while the exchange is out,
    // its share of it (tps / N over its own second: FleetBudget), so N instances cut off from each other admit at
    // most the rental (+ ε) in any second and not, on top, the burst their buckets saved while the fleet held them
    // to their parts; alone again with the exchange working (its peers stopped), `tps` less what they reported in
    // the last second. Never in a fleet: the bucket alone, as before.
    if (this.fleet.hasPeered() && !this.fleet.fits(rentalId, 1, tps, wall)) return false;
    if (!this.takeLocal(rentalId, tps)) return false;
    this.fleet.take(rentalId, 1, wall);
    return true;
  }

  private takeLocal(rentalId: string, tps: number): boolean {
    const t = this.now();
    let b = this.buckets.get(rentalId);
    if (b === undefined) {
      if (this.buckets.size >= this.maxBuckets) this.buckets.delete(this.buckets.keys().next().value!);
      b = { tokens: tps, at: t };
      this.buckets.set(rentalId, b);
    } else {
      b.tokens = Math.min(tps, b.tokens + ((t - b.at) / 1000) * tps);
      b.at = t;
    }
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  get size(): number {
    return this.buckets.size;
  }
}
