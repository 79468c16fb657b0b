// Per API key: the outcomes of its most recent settled transactions, for GET /trace's summary. A landing counts
// once (at its first status; a transaction that failed on chain still landed), an expiry once. Bounded: the
// last `perKey` outcomes per key, and at most `maxKeys` keys (the key whose outcomes are oldest goes first).
//
// Landing rate as the neutral landing benchmark (OpenChainBench) defines it: landed / (landed + expired). The
// service never traces what it rejected (rate limits, malformed transactions), so those are excluded already.

export interface KeySummary {
  /** Settled transactions the figures cover (the key's most recent). */
  settled: number;
  landed: number;
  /** Landed with an error (included in `landed`). */
  failed: number;
  expired: number;
  /** landed / (landed + expired); null with nothing settled. */
  landingRate: number | null;
  /** Over landed transactions whose slot at acceptance was known. */
  slotDelta: { p50: number; p90: number; p99: number; max: number } | null;
}

const EXPIRED = -1;
const FAILED_BIT = 1 << 30;
const UNKNOWN_DELTA = FAILED_BIT - 1;

/** Outcome codes: EXPIRED, or the slot delta (UNKNOWN_DELTA when not known), with FAILED_BIT when it failed. */
class Ring {
  readonly codes: Int32Array;
  n = 0;
  next = 0;
  constructor(size: number) {
    this.codes = new Int32Array(size);
  }
  push(code: number): void {
    this.codes[this.next] = code;
    this.next = (this.next + 1) % this.codes.length;
    if (this.n < this.codes.length) this.n++;
  }
}

export class KeySummaries {
  private readonly keys = new Map<string, Ring>();

  constructor(
    private readonly perKey = 1_000,
    private readonly maxKeys = 10_000,
  ) {}

  landed(apiKey: string, slotDelta: number | undefined, failed: boolean): void {
    const d = slotDelta === undefined || slotDelta < 0 ? UNKNOWN_DELTA : Math.min(slotDelta, UNKNOWN_DELTA - 1);
    this.ring(apiKey).push(failed ? d | FAILED_BIT : d);
  }

  expired(apiKey: string): void {
    this.ring(apiKey).push(EXPIRED);
  }

  summary(apiKey: string): KeySummary {
    const r = this.keys.get(apiKey);
    const s: KeySummary = { settled: 0, landed: 0, failed: 0, expired: 0, landingRate: null, slotDelta: null };
    if (r === undefined) return s;
    const deltas: number[] = [];
    for (let i = 0; i < r.n; i++) {
      const c = r.codes[i]!;
      if (c === EXPIRED) {
        s.expired++;
        continue;
      }
      s.landed++;
      if ((c & FAILED_BIT) !== 0) s.failed++;
      const d = c & ~FAILED_BIT;
      if (d !== UNKNOWN_DELTA) deltas.push(d);
    }
    s.settled = r.n;
    s.landingRate = r.n === 0 ? null : s.landed / r.n;
    if (deltas.length > 0) {
      deltas.sort((a, b) => a - b);
      const q = (p: number): number => deltas[Math.min(deltas.length - 1, Math.ceil(p * deltas.length) - 1)]!;
      s.slotDelta = { p50: q(0.5), p90: q(0.9), p99: q(0.99), max: deltas[deltas.length - 1]! };
    }
    return s;
  }

  private ring(apiKey: string): Ring {
    let r = this.keys.get(apiKey);
    if (r !== undefined) {
      // Most recently settled last, so the first key in the map is the one to evict.
      this.keys.delete(apiKey);
    } else {
      if (this.keys.size >= this.maxKeys) this.keys.delete(this.keys.keys().next().value!);
      r = new Ring(this.perKey);
    }
    this.keys.set(apiKey, r);
    return r;
  }
}
