// Per-rental transaction rate (the rental's TPS): a token bucket per rental, refilled continuously at `tps`
// tokens/s, holding at most one second's worth (so a burst of `tps` is fine, a sustained excess is not).
// Rentals share nothing; keys of one rental share its bucket (TPS is chosen per rental). A rental with tps 0
// may not submit. Buckets are few (one per active rental) and bounded: the oldest idle one goes first.

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly maxBuckets = 100_000,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Takes one token; false = over the limit (nothing taken). */
  take(rentalId: string, tps: number): boolean {
    if (!(tps > 0)) return false;
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
