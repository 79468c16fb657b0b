// Per-connection budgets for what a peer may make the server do without progress: a token bucket that holds at
// most `burst` tokens, starts full and gains `rate` tokens per whole second, as nghttp2's nghttp2_ratelim
// (lib/nghttp2_ratelim.c) does: time is read in whole seconds, so a busy connection reads the clock at most
// once per call and the refill is an integer step. spend() past the last token says so; the caller ends the
// connection.
//
// The kinds of spending each budget counts are named (for the metric and the log line of a connection closed
// over its budget): the kind that took the most tokens is the reason given.

export class Budget<K extends string> {
  private tokens: number;
  private second: number;
  private readonly spent = new Map<K, number>();

  constructor(
    readonly burst: number,
    readonly rate: number,
    nowMs: number,
  ) {
    this.tokens = burst;
    this.second = Math.floor(nowMs / 1000);
  }

  /** Takes one token for `kind`; false when none was left (the budget is exhausted). */
  spend(kind: K, nowMs: number): boolean {
    this.spent.set(kind, (this.spent.get(kind) ?? 0) + 1);
    const s = Math.floor(nowMs / 1000);
    if (s !== this.second) {
      // nghttp2 counts a clock that went back as one second passed.
      this.tokens = Math.min(this.burst, this.tokens + (s > this.second ? s - this.second : 1) * this.rate);
      this.second = s;
    }
    if (this.tokens === 0) return false;
    this.tokens--;
    return true;
  }

  /** Tokens left now (before any refill due since the last spend). */
  get left(): number {
    return this.tokens;
  }

  /** The kind that spent the most so far (the reason a connection closed over this budget). */
  topKind(): K | undefined {
    let top: K | undefined;
    let n = 0;
    for (const [k, v] of this.spent) {
      if (v > n) {
        top = k;
        n = v;
      }
    }
    return top;
  }
}
