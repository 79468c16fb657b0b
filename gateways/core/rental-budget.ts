import { SlidingWindows } from './sliding-window';

// A per-rental budget over a sliding window, as a meter uses it: does a request fit, charge it, how much is used.
// LocalBudget counts this instance alone (what a single instance has always done); FleetBudget
// (fleet-budget.ts) counts the fleet's spend with the same answers when it has no peer.

export interface RentalBudget {
  /** Units spent in the window ending now (as this instance knows it). */
  used(rental: string, nowMs: number): number;
  /** Whether `units` more fit `limit`. */
  fits(rental: string, units: number, limit: number, nowMs: number): boolean;
  take(rental: string, units: number, nowMs: number): void;
  /** Forget rentals no longer wanted (deleted). */
  retain(keep: (rental: string) => boolean): void;
}

export class LocalBudget implements RentalBudget {
  private readonly windows: SlidingWindows;
  constructor(windowMs: number) {
    this.windows = new SlidingWindows(windowMs);
  }
  used(rental: string, nowMs: number): number {
    return this.windows.get(rental).used(nowMs);
  }
  fits(rental: string, units: number, limit: number, nowMs: number): boolean {
    return this.windows.get(rental).used(nowMs) + units <= limit;
  }
  take(rental: string, units: number, nowMs: number): void {
    this.windows.get(rental).take(units, nowMs);
  }
  retain(keep: (rental: string) => boolean): void {
    this.windows.retain(keep);
  }
}
