import type { RentalBudget } from './rental-budget';
import { SlidingWindows } from './sliding-window';

// A rental's budget over a sliding window ("at most B units in any window"), kept by a fleet of instances that each
// answer from local state — no round trip per request — and exchange what they spent in the background (every
// 100–250 ms, over the bus: gateways/core/fleet-exchange.ts). Local buckets plus usage exchange, as Gubernator's
// global mode or Doorman do.
//
// What one instance knows, per rental:
//   L  its own spend in the window, exact (the same SlidingWindow one instance has always kept)
//   R  the other instances' spend in the window, from their reports, placed at the report's time
//   U  its own spend the others may not know yet: since its last report, plus reports it sent that it has not
//      read back from the bus, or read back less than settleMs (50 ms) ago (its own report coming back, plus the
//      readers' skew, is when the others have it too)
//   N  live members: itself and every instance heard from within `memberExpiryMs`
// A request of p units is admitted when
//   L + R + p ≤ B                                  (the fleet's spend as this instance sees it), and, with peers,
//   U = 0, or U + p ≤ (B − (L − U) − R) / N        (unseen spend at most its part of the headroom all can see)
// With no peer (N = 1, R = 0) that is L + p ≤ B: exactly the single instance's rule.
//
// Why the bound holds: the headroom everyone sees is H = B − (spend all have read). Each instance's unseen spend is
// at most H / N, plus one request when it had nothing unseen, so the fleet's true spend is at most
// B + (N − 1) × (largest request), plus what reports delivered to one instance but not yet to another carry in that
// instant (a few ms of skew between readers; measured in the fleet test). Throughput is the rental's: headroom the
// N parts leave unused stays headroom and is shared again at the next report.

export interface FleetBudgetOptions {
  windowMs: number;
  /** A member not heard from for this long is gone: its part returns to the others. */
  memberExpiryMs: number;
  /** Reports this instance sent and has not read back, kept this long at most (a bus that never echoes). */
  echoTimeoutMs?: number;
  /**
   * How long a report read back still counts as unseen (default 50 ms): the other instances read the same record a
   * little later than its sender does (the readers' skew), and spend they have not read is what the bound's ε is.
   */
  settleMs?: number;
}

interface Sent {
  seq: number;
  time: number;
  spent: Map<string, number>;
  /** When it was read back (NaN: not yet). */
  echoedAt: number;
}

/** One budget (RPS, or TPS) for every rental, for one instance of a fleet. */
export class FleetBudget implements RentalBudget {
  private readonly local: SlidingWindows;
  private readonly remote: SlidingWindows;
  /** Spend since the last report, per rental. */
  private pending = new Map<string, number>();
  /** Reports sent, not read back yet, oldest first. */
  private readonly inFlight: Sent[] = [];
  /** Unseen spend (pending + in flight) per rental; kept as a sum so admission is O(1). */
  private readonly unseen = new Map<string, number>();
  /** Peer instance → the time of its newest report. */
  private readonly peers = new Map<string, number>();
  private readonly echoTimeoutMs: number;
  private readonly settleMs: number;
  /** Whether any other instance was ever heard from (a fleet member, even if alone now). */
  private heardPeer = false;

  constructor(private readonly o: FleetBudgetOptions) {
    this.local = new SlidingWindows(o.windowMs);
    this.remote = new SlidingWindows(o.windowMs);
    this.echoTimeoutMs = o.echoTimeoutMs ?? Math.max(2_000, 2 * o.memberExpiryMs);
    this.settleMs = o.settleMs ?? 50;
  }

  /** Members heard from within the expiry, this instance included. */
  members(nowMs: number): number {
    let n = 1;
    for (const [id, t] of this.peers) {
      if (nowMs - t <= this.o.memberExpiryMs) n++;
      else this.peers.delete(id);
    }
    return n;
  }

  /**
   * Whether this instance has been part of a fleet: another instance was heard from since it started. Alone now
   * (the peers expired: the bus is down, or they stopped) it still holds the window, so that a fleet whose exchange
   * stops admits at most N × the budget in any window, not N token-bucket bursts on top of it.
   */
  hasPeered(): boolean {
    return this.heardPeer;
  }

  /** The fleet's spend in the window as this instance sees it (L + R). */
  used(rental: string, nowMs: number): number {
    return this.local.get(rental).used(nowMs) + this.remote.get(rental).used(nowMs);
  }

  /** Whether `units` more fit `limit` (module comment). */
  fits(rental: string, units: number, limit: number, nowMs: number): boolean {
    const l = this.local.get(rental).used(nowMs);
    const r = this.remote.get(rental).used(nowMs);
    if (l + r + units > limit) return false;
    if (this.inFlight.length > 0) this.settleDue(nowMs);
    const u = this.unseen.get(rental) ?? 0;
    if (u === 0) return true;
    const n = this.members(nowMs);
    if (n === 1) return true;
    return u + units <= (limit - (l - u) - r) / n;
  }

  take(rental: string, units: number, nowMs: number): void {
    this.local.get(rental).take(units, nowMs);
    this.pending.set(rental, (this.pending.get(rental) ?? 0) + units);
    this.unseen.set(rental, (this.unseen.get(rental) ?? 0) + units);
  }

  /** What to report: the spend since the last report (now in flight until read back as `seq`). */
  report(seq: number, nowMs: number): Record<string, number> {
    this.expireInFlight(nowMs);
    const spent = this.pending;
    this.pending = new Map();
    if (spent.size > 0) this.inFlight.push({ seq, time: nowMs, spent, echoedAt: NaN });
    return Object.fromEntries(spent);
  }

  /** This instance's own report `seq`, read back from the bus at `nowMs`: the others have it `settleMs` later. */
  echoed(seq: number, nowMs: number): void {
    for (const s of this.inFlight) {
      if (s.seq > seq) break;
      if (Number.isNaN(s.echoedAt)) s.echoedAt = nowMs;
    }
    this.settleDue(nowMs);
  }

  /** Another instance's report, made at `atMs` (its clock). */
  peerReport(instance: string, spent: Readonly<Record<string, number>>, atMs: number, nowMs: number): void {
    this.heardPeer = true;
    const seen = this.peers.get(instance);
    if (seen === undefined || atMs > seen) this.peers.set(instance, Math.min(atMs, nowMs));
    for (const [rental, units] of Object.entries(spent)) if (units > 0) this.remote.get(rental).takeAt(units, atMs, nowMs);
  }

  /** Forget rentals no longer wanted (deleted). */
  retain(keep: (rental: string) => boolean): void {
    this.local.retain(keep);
    this.remote.retain(keep);
    for (const k of [...this.unseen.keys()]) if (!keep(k)) this.unseen.delete(k);
    for (const k of [...this.pending.keys()]) if (!keep(k)) this.pending.delete(k);
  }

  private settle(s: Sent): void {
    for (const [rental, units] of s.spent) {
      const left = (this.unseen.get(rental) ?? 0) - units;
      if (left <= 1e-9) this.unseen.delete(rental);
      else this.unseen.set(rental, left);
    }
  }

  /** Reports read back at least settleMs ago are seen by every instance. */
  private settleDue(nowMs: number): void {
    while (this.inFlight.length > 0 && nowMs - this.inFlight[0]!.echoedAt >= this.settleMs) this.settle(this.inFlight.shift()!);
  }

  /** A report never read back (the bus lost it, or is down) stops holding this instance's part after a while. */
  private expireInFlight(nowMs: number): void {
    while (this.inFlight.length > 0 && nowMs - this.inFlight[0]!.time > this.echoTimeoutMs) this.settle(this.inFlight.shift()!);
  }
}
