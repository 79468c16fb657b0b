// A per-key budget over a sliding window: "at most `limit` units in any window of `windowMs`", tracked in
// `buckets` equal slices (default 100 ms each for a 10 s window), so the window slides in steps of one slice and
// costs O(1) per call apart from clearing slices that expired. No timers: time is read on use.
//
// Used by the gateways for RPS (10 s window: a rental of R RPS may spend 10·R units in any 10 s, so short bursts
// above R are allowed as long as the 10 s average stays at R) and TPS.

export class SlidingWindow {
  private readonly slots: Float64Array;
  private readonly sliceMs: number;
  /** Index (in slices since epoch) of the newest slice written. */
  private newest = 0;
  private total = 0;

  constructor(readonly windowMs: number, buckets = 100) {
    if (!(windowMs > 0 && buckets >= 1)) throw new RangeError('windowMs > 0 and buckets ≥ 1');
    this.slots = new Float64Array(buckets);
    this.sliceMs = windowMs / buckets;
  }

  /** Units spent within the window ending now. */
  used(nowMs: number): number {
    this.advance(nowMs);
    return this.total;
  }

  /** Spends `units` if `used + units ≤ limit`; returns whether it did. */
  tryTake(units: number, limit: number, nowMs: number): boolean {
    this.advance(nowMs);
    if (this.total + units > limit) return false;
    this.take(units, nowMs);
    return true;
  }

  /** Spends unconditionally (the caller checked). */
  take(units: number, nowMs: number): void {
    this.advance(nowMs);
    this.slots[this.newest % this.slots.length]! += units;
    this.total += units;
  }

  /**
   * Spends `units` at a past time `atMs` (another instance's report): into the slice of atMs when it is still in the
   * window ending now, nowhere when it has left it; a time ahead of now (another clock) counts as now.
   */
  takeAt(units: number, atMs: number, nowMs: number): void {
    this.advance(nowMs);
    const slice = Math.min(Math.floor(atMs / this.sliceMs), this.newest);
    if (slice <= this.newest - this.slots.length) return;
    this.slots[slice % this.slots.length]! += units;
    this.total += units;
  }

  private advance(nowMs: number): void {
    const slice = Math.floor(nowMs / this.sliceMs);
    if (slice <= this.newest) return;
    const n = this.slots.length;
    if (slice - this.newest >= n) {
      this.slots.fill(0);
      this.total = 0;
    } else {
      for (let s = this.newest + 1; s <= slice; s++) {
        const i = s % n;
        this.total -= this.slots[i]!;
        this.slots[i] = 0;
      }
      if (this.total < 1e-9) this.total = 0; // float residue
    }
    this.newest = slice;
  }
}

/** One window per key (rental id), made on first use. Keys come from the rental registry, so they are bounded. */
export class SlidingWindows {
  private readonly byKey = new Map<string, SlidingWindow>();
  constructor(readonly windowMs: number, private readonly buckets = 100) {}

  get(key: string): SlidingWindow {
    let w = this.byKey.get(key);
    if (w === undefined) {
      w = new SlidingWindow(this.windowMs, this.buckets);
      this.byKey.set(key, w);
    }
    return w;
  }

  /** Forget keys no longer wanted (rentals deleted). */
  retain(keep: (key: string) => boolean): void {
    for (const k of this.byKey.keys()) if (!keep(k)) this.byKey.delete(k);
  }
}
