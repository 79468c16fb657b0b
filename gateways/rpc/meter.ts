import { LocalBudget, refuse, Slots, type AdmitResult, type Meter, type RentalBudget, type RpcCall, type Transport } from '../core';
import type { RpcErrorKind } from './errors';
import type { RpcCaller } from './auth';
import { isSubscription } from './methods';

// Metering per rental (limits come from the rental: RPS and TPS chosen at rental):
//   - RPS: each call costs its method's weight, counted over a sliding window (default 10 s: a rental of R RPS
//     may spend 10·R units in any 10 s). WebSocket subscribe/unsubscribe cost 1 and share the same window.
//   - TPS: sendTransaction costs 1 TPS unit and nothing of RPS, over its own window (default 1 s).
//   - Scan methods additionally take a concurrency slot per call (per rental), waiting at most scan.maxWaitMs.
//   - A request (single or batch) is admitted whole or not at all: if its RPS total does not fit what is left,
//     it gets 429 -32001; if its TPS total does not fit, 429 -32005; nothing is forwarded and nothing charged.
//     Budgets are checked before a scan wait and checked again (then charged) once the slots are held.

export interface RpcMeterOptions {
  weights: Readonly<Record<string, number>>;
  defaultWeight: number;
  scanMethods: readonly string[];
  tpsMethods: readonly string[];
  rpsWindowMs: number;
  tpsWindowMs: number;
  scan: { concurrency: number; maxWaitMs: number; maxQueuePerRental: number; maxQueueTotal: number };
  /**
   * Where RPS and TPS are counted: this instance alone (default, LocalBudget), or the fleet's spend (FleetBudget,
   * with the usage exchange of gateways/core/fleet-exchange.ts). Scan concurrency stays per instance.
   */
  budgets?: { rps: RentalBudget; tps: RentalBudget };
  /** Clock (tests). */
  now?: () => number;
}

interface Priced {
  units: number[];
  rps: number;
  tps: number;
  scans: number;
}

export class RpcMeter implements Meter<RpcCaller, RpcErrorKind> {
  private readonly rps: RentalBudget;
  private readonly tps: RentalBudget;
  private readonly slots: Slots;
  private readonly weights: Map<string, number>;
  private readonly scan: ReadonlySet<string>;
  private readonly tpsMethods: ReadonlySet<string>;
  private readonly now: () => number;

  constructor(private readonly o: RpcMeterOptions) {
    this.rps = o.budgets?.rps ?? new LocalBudget(o.rpsWindowMs);
    this.tps = o.budgets?.tps ?? new LocalBudget(o.tpsWindowMs);
    this.slots = new Slots({ maxWaitMs: o.scan.maxWaitMs, maxQueuePerKey: o.scan.maxQueuePerRental, maxQueueTotal: o.scan.maxQueueTotal });
    this.weights = new Map(Object.entries(o.weights));
    this.scan = new Set(o.scanMethods);
    this.tpsMethods = new Set(o.tpsMethods);
    this.now = o.now ?? Date.now;
  }

  /** RPS units a call of this method costs. */
  weight(method: string): number {
    if (isSubscription(method)) return 1;
    return this.weights.get(method) ?? this.o.defaultWeight;
  }

  admit(rental: RpcCaller, calls: readonly RpcCall[], _t: Transport): AdmitResult<RpcErrorKind> | Promise<AdmitResult<RpcErrorKind>> {
    const p = this.price(calls);
    if (rental === null) return { ok: true, units: p.units };
    const budgetRefusal = this.check(rental, p);
    if (budgetRefusal !== null) return budgetRefusal;
    if (p.scans === 0) return this.charge(rental, p);
    const g = this.slots.acquire(rental.id, p.scans, this.o.scan.concurrency);
    if (!(g instanceof Promise)) return g.ok ? this.charge(rental, p, g.release) : this.scanRefusal(g.why);
    return g.then((grant) => {
      if (!grant.ok) return this.scanRefusal(grant.why);
      const again = this.check(rental, p);
      if (again !== null) {
        grant.release();
        return again;
      }
      return this.charge(rental, p, grant.release);
    });
  }

  /** Forget the windows of rentals that no longer exist. */
  retain(keep: (rentalId: string) => boolean): void {
    this.rps.retain(keep);
    this.tps.retain(keep);
  }

  private price(calls: readonly RpcCall[]): Priced {
    const units = new Array<number>(calls.length);
    let rps = 0;
    let tps = 0;
    let scans = 0;
    for (let i = 0; i < calls.length; i++) {
      const m = calls[i]!.method;
      if (this.tpsMethods.has(m)) {
        units[i] = 1;
        tps++;
        continue;
      }
      const w = this.weight(m);
      units[i] = w;
      rps += w;
      if (this.scan.has(m)) scans++;
    }
    return { units, rps, tps, scans };
  }

  private check(rental: NonNullable<RpcCaller>, p: Priced): AdmitResult<RpcErrorKind> | null {
    const now = this.now();
    if (p.rps > 0) {
      const budget = (rental.rps * this.o.rpsWindowMs) / 1000;
      if (!this.rps.fits(rental.id, p.rps, budget, now)) return refuse<RpcErrorKind>('rpsLimit', `${p.rps} units requested, ${Math.max(0, budget - this.rps.used(rental.id, now))} of ${budget} left in the ${this.o.rpsWindowMs / 1000} s window`);
    }
    if (p.tps > 0) {
      const budget = (rental.tps * this.o.tpsWindowMs) / 1000;
      if (!this.tps.fits(rental.id, p.tps, budget, now)) return refuse<RpcErrorKind>('tpsLimit', `${p.tps} transactions requested, ${Math.max(0, budget - this.tps.used(rental.id, now))} of ${budget} left in the ${this.o.tpsWindowMs / 1000} s window`);
    }
    return null;
  }

  private charge(rental: NonNullable<RpcCaller>, p: Priced, release?: () => void): AdmitResult<RpcErrorKind> {
    const now = this.now();
    if (p.rps > 0) this.rps.take(rental.id, p.rps, now);
    if (p.tps > 0) this.tps.take(rental.id, p.tps, now);
    return release === undefined ? { ok: true, units: p.units } : { ok: true, units: p.units, release };
  }

  private scanRefusal(why: 'timeout' | 'queue_full'): AdmitResult<RpcErrorKind> {
    return refuse<RpcErrorKind>('scanTimeout', why === 'timeout' ? `no slot within ${this.o.scan.maxWaitMs} ms (at most ${this.o.scan.concurrency} scans at once)` : 'too many scan requests waiting');
  }
}
