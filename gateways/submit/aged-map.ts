// A Map kept in age order, bounded by a time window and a size: the store under the submission service's
// short-memory caches (signature-cache.ts, rejected-repeats.ts).
//
// Every write re-inserts its key, so insertion order is age order and the oldest entry is always first. A write
// first sweeps the entries older than the window from the front (it stops at the first young one), then, for a
// key not already there, evicts the oldest entry when maxEntries are held. Reads never sweep: a caller that finds
// an entry decides whether it has expired (and deletes it) itself, at a time it reads only when it needs one.

import { OldestFirstMap } from '../../infra/base/oldest-first';

export interface Aged {
  /** When the entry was written (the caller's clock). */
  readonly at: number;
}

export class AgedMap<V extends Aged> {
  /** Age order: a write deletes the key first, so it comes back as the newest (infra/base/oldest-first.ts). */
  private readonly entries = new OldestFirstMap<string, V>();

  constructor(
    private readonly windowMs: number,
    private readonly maxEntries: number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    return this.entries.get(key);
  }

  /** Older than the window at t. */
  expired(e: V, t: number): boolean {
    return t - e.at > this.windowMs;
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  /**
   * A write at t: sweeps what is older than the window at t, then stores update(the key's entry if it survived
   * the sweep) as the newest entry; a new key evicts the oldest entry first when the map is full.
   */
  write(key: string, t: number, update: (old: V | undefined) => V): void {
    this.sweep(t);
    const old = this.entries.get(key);
    if (old !== undefined) this.entries.delete(key);
    else if (this.entries.size >= this.maxEntries) this.entries.deleteOldest();
    this.entries.set(key, update(old));
  }

  /** Replaces an entry that is there with a newer one, moving it to the back; no sweep, no eviction. */
  reinsert(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
  }

  private sweep(t: number): void {
    for (let e = this.entries.oldestValue(); e !== undefined && t - e.at > this.windowMs; e = this.entries.oldestValue()) this.entries.deleteOldest();
  }
}
