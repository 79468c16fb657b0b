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
//   U  its own spend in the window the others may not know yet: L less what is settled — spend in reports it has
//      read back from the bus at least settleMs (50 ms) ago (its own report coming back, plus the readers' skew, is
//      when the others have it too), each placed at the start of its report's interval (so it leaves "settled" no
//      later than it leaves L, and U is never understated)
//   N  live members: itself and every instance heard from within `memberExpiryMs` of its own last echo
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
//
// The bus down is the same rule held longer. Silence is judged against the bus, not the clock: a peer leaves once
// this instance's own reports have come back for `memberExpiryMs` after the peer's last, so during an outage every
// member stays and each instance's spend is unseen; as the spend everyone saw leaves the window, H grows towards B
// and each instance admits up to B / N of it. N instances cut off from each other admit at most the bound above
// together, however long the outage. A report the bus refused goes into the next (`unsent`), so no spend is lost
// to the others. When its own reports come back, the members it had are taken as heard then (a dead one leaves
// `memberExpiryMs` later), and nothing of its own settles until each has sent a report made after that: what a
// peer spent while the bus was out is unseen here until then, and settling its own first would count that headroom
// twice. The price: while the bus is out, an instance is held to B / N even if its peers are in fact dead or idle.

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
  /** The start of its interval: the previous report's time (or the first spend in it). */
  from: number;
  time: number;
  spent: Map<string, number>;
  /** When it was read back (NaN: not yet). */
  echoedAt: number;
}

/** One budget (RPS, or TPS) for every rental, for one instance of a fleet. */
export class FleetBudget implements RentalBudget {
  private readonly local: SlidingWindows;
  private readonly remote: SlidingWindows;
  /** Own spend the others have read (settled reports), by the start of each report's interval. */
  private readonly settled: SlidingWindows;
  /** Spend since the last report, per rental. */
  private pending = new Map<string, number>();
  /** When the spend in `pending` began (the previous report's time; -Infinity before any). */
  private pendingFrom = -Infinity;
  /** Reports sent, not settled yet, oldest first. */
  private readonly inFlight: Sent[] = [];
  /** Peer instance → the time of its newest report. */
  private readonly peers = new Map<string, number>();
  private readonly echoTimeoutMs: number;
  private readonly settleMs: number;
  /** Whether any other instance was ever heard from (a fleet member, even if alone now). */
  private heardPeer = false;
  /** When this instance last read one of its own reports back from the bus (-Infinity: never). */
  private lastEchoAt = -Infinity;
  /**
   * Peers kept through an outage that have not reported since (peer → when the exchange came back): until a report
   * made after that arrives, what they spent while it was out is unseen here, and nothing of this instance settles.
   */
  private readonly awaiting = new Map<string, number>();

  constructor(private readonly o: FleetBudgetOptions) {
    this.local = new SlidingWindows(o.windowMs);
    this.remote = new SlidingWindows(o.windowMs);
    this.settled = new SlidingWindows(o.windowMs);
    this.echoTimeoutMs = o.echoTimeoutMs ?? Math.max(2_000, 2 * o.memberExpiryMs);
    this.settleMs = o.settleMs ?? 50;
  }

  /**
   * Members heard from within the expiry, this instance included, as of this instance's last echo: a peer silent
   * because the bus is does not leave.
   */
  members(nowMs: number): number {
    // Silence is judged against the bus: a peer leaves once this instance's own reports have come back for the
    // expiry since the peer's last one. Against the clock alone, a peer whose last report was read just before
    // this instance's last echo would leave first, and in the gap the instance would count alone.
    const ref = this.lastEchoAt === -Infinity ? nowMs : Math.min(nowMs, this.lastEchoAt);
    let n = 1;
    for (const [id, t] of this.peers) {
      if (ref - t <= this.o.memberExpiryMs) n++;
      else {
        this.peers.delete(id);
        this.awaiting.delete(id);
      }
    }
    return n;
  }

  /**
   * Whether the exchange is out for this instance: it has been part of a fleet, and none of its own reports has
   * come back for `memberExpiryMs`, or a peer kept through an outage has not reported since (metrics, tests; the
   * rule itself needs no mode).
   */
  exchangeOut(nowMs: number): boolean {
    if (!this.heardPeer || this.lastEchoAt === -Infinity) return false;
    if (nowMs - this.lastEchoAt > this.o.memberExpiryMs) return true;
    if (this.awaiting.size === 0) return false;
    this.members(nowMs); // a kept peer that stays silent leaves, and is awaited no more
    return this.awaiting.size > 0;
  }

  /**
   * Whether this instance has been part of a fleet: another instance was heard from since it started. The submit
   * limiter then keeps asking the fleet's window, so that a fleet whose exchange stops admits its part of the budget
   * (module comment), not N token-bucket bursts on top of it.
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
    const u = this.unseen(rental, l, nowMs);
    if (u === 0) return true;
    const n = this.members(nowMs);
    if (n === 1) return true;
    return u + units <= (limit - (l - u) - r) / n;
  }

  /** U: own spend in the window not settled (L less the settled part; never below 0). */
  private unseen(rental: string, l: number, nowMs: number): number {
    const u = l - this.settled.get(rental).used(nowMs);
    return u > 1e-9 ? u : 0;
  }

  take(rental: string, units: number, nowMs: number): void {
    this.local.get(rental).take(units, nowMs);
    if (this.pending.size === 0 && this.pendingFrom === -Infinity) this.pendingFrom = nowMs;
    this.pending.set(rental, (this.pending.get(rental) ?? 0) + units);
  }

  /** What to report: the spend since the last report (now in flight until read back as `seq`). */
  report(seq: number, nowMs: number): Record<string, number> {
    this.expireInFlight(nowMs);
    const spent = this.pending;
    const from = this.pendingFrom === -Infinity ? nowMs : this.pendingFrom;
    this.pending = new Map();
    this.pendingFrom = nowMs;
    if (spent.size > 0) this.inFlight.push({ seq, from, time: nowMs, spent, echoedAt: NaN });
    return Object.fromEntries(spent);
  }

  /** This instance's own report `seq`, read back from the bus at `nowMs`: the others have it `settleMs` later. */
  echoed(seq: number, nowMs: number): void {
    if (this.lastEchoAt !== -Infinity && nowMs - this.lastEchoAt > this.o.memberExpiryMs) {
      // The exchange is back after an outage: the members it had then were as silent as the bus, so they are
      // taken as heard now — a live one's reports arrive within the expiry, a dead one leaves after it.
      for (const [id, t] of this.peers)
        if (this.lastEchoAt - t <= this.o.memberExpiryMs) {
          this.peers.set(id, nowMs);
          this.awaiting.set(id, nowMs);
        }
    }
    if (nowMs > this.lastEchoAt) this.lastEchoAt = nowMs;
    for (const s of this.inFlight) {
      if (s.seq > seq) break;
      if (Number.isNaN(s.echoedAt)) s.echoedAt = nowMs;
    }
    this.settleDue(nowMs);
  }

  /**
   * Report `seq` did not reach the bus (the produce failed): its spend goes into the next report, so the others
   * learn it when the exchange is back; until then it is unseen.
   */
  unsent(seq: number): void {
    const i = this.inFlight.findIndex((s) => s.seq === seq);
    if (i < 0) return; // nothing spent in it, or already expired
    const [s] = this.inFlight.splice(i, 1);
    for (const [rental, units] of s!.spent) this.pending.set(rental, (this.pending.get(rental) ?? 0) + units);
    this.pendingFrom = Math.min(this.pendingFrom, s!.from);
  }

  /** Another instance's report, made at `atMs` (its clock). */
  peerReport(instance: string, spent: Readonly<Record<string, number>>, atMs: number, nowMs: number): void {
    this.heardPeer = true;
    const back = this.awaiting.get(instance);
    // Made after the exchange came back: it carries what the peer spent while it was out (a refused report's
    // spend rides in the next; a held one came before it).
    if (back !== undefined && atMs >= back) this.awaiting.delete(instance);
    const seen = this.peers.get(instance);
    if (seen === undefined || atMs > seen) this.peers.set(instance, Math.min(atMs, nowMs));
    for (const [rental, units] of Object.entries(spent)) if (units > 0) this.remote.get(rental).takeAt(units, atMs, nowMs);
  }

  /** Forget rentals no longer wanted (deleted). */
  retain(keep: (rental: string) => boolean): void {
    this.local.retain(keep);
    this.remote.retain(keep);
    this.settled.retain(keep);
    for (const k of [...this.pending.keys()]) if (!keep(k)) this.pending.delete(k);
  }

  /** Its spend is read by every instance now: settled at the start of its interval. */
  private settle(s: Sent, nowMs: number): void {
    for (const [rental, units] of s.spent) this.settled.get(rental).takeAt(units, s.from, nowMs);
  }

  /**
   * Reports read back at least settleMs ago are seen by every instance — unless a peer kept through an outage has
   * not reported since (module comment).
   */
  private settleDue(nowMs: number): void {
    if (this.awaiting.size > 0 && (this.members(nowMs), this.awaiting.size > 0)) return;
    while (this.inFlight.length > 0 && nowMs - this.inFlight[0]!.echoedAt >= this.settleMs) this.settle(this.inFlight.shift()!, nowMs);
  }

  /**
   * A report never read back although the bus carries this instance's others (lost) stops holding its part after
   * a while. Not while the exchange is out: the report may be waiting in a produce, and its spend is unseen.
   */
  private expireInFlight(nowMs: number): void {
    if (this.exchangeOut(nowMs)) return;
    while (this.inFlight.length > 0 && nowMs - this.inFlight[0]!.time > this.echoTimeoutMs) this.settle(this.inFlight.shift()!, nowMs);
  }
}
