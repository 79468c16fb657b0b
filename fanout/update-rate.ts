// "More than N filter-update messages per second" as a sliding window: the times of the last N accepted
// updates sit in a ring; update N+1 is refused when the oldest of those is less than a second old. Sliding
// (not a fixed wall-clock second) so a burst cannot straddle a boundary and get 2N through.

export class UpdateRate {
  private readonly times: number[];
  private next = 0;
  private count = 0;

  constructor(
    private readonly max: number,
    private readonly windowMs = 1000,
  ) {
    this.times = new Array<number>(max).fill(0);
  }

  /** Records an update at `now` (ms) and says whether it is within the limit. */
  allow(now: number): boolean {
    if (this.count === this.max && now - this.times[this.next]! < this.windowMs) return false;
    this.times[this.next] = now;
    this.next = (this.next + 1) % this.max;
    if (this.count < this.max) this.count++;
    return true;
  }
}

/**
 * Updates charged by size: a token bucket of keys, `perSec` refilled per second and holding at most one
 * second's worth, so a burst of full-size maps is cut as soon as it exceeds what a second allows.
 */
export class KeyRate {
  private tokens: number;
  private last = Number.NaN;

  constructor(private readonly perSec: number) {
    this.tokens = perSec;
  }

  /** Charges `keys` at `now` (ms); false (and nothing charged) when the bucket cannot cover them. */
  allow(now: number, keys: number): boolean {
    if (!Number.isNaN(this.last)) this.tokens = Math.min(this.perSec, this.tokens + ((now - this.last) * this.perSec) / 1000);
    this.last = now;
    if (keys > this.tokens) return false;
    this.tokens -= keys;
    return true;
  }
}
