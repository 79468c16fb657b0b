// A Map kept in age order, bounded by a time window and a size: the store under the submission service's
// short-memory caches (signature-cache.ts, rejected-repeats.ts).
//
// Every write re-inserts its key, so insertion order is age order and the oldest entry is always first. A write
// first sweeps the entries older than the window from the front (it stops at the first young one), then, for a
// key not already there, evicts the oldest entry when maxEntries are held. Reads never sweep: a caller that finds
// an entry decides whether it has expired (and deletes it) itself, at a time it reads only when it needs one.

export interface Aged {
  /** When the entry was written (the caller's clock). */
  readonly at: number;
}

interface Slot<V> {
  value: V;
  /** Which write this is: a queue entry of the key stands for the slot only while their seq agree. */
  seq: number;
}

export class AgedMap<V extends Aged> {
  private readonly entries = new Map<string, Slot<V>>();
  /**
   * Writes in order from `head` (keys and their write's seq): the age order. A rewritten or deleted key leaves a
   * stale entry behind, skipped when it reaches the front and dropped at compaction. Not the Map's own order:
   * iterating a Map steps over every entry deleted from it that V8 still keeps in its table until a rehash, so
   * taking the oldest key cost up to ~60 µs per write at 100k entries once the map sat at its cap or its window.
   */
  private keys: string[] = [];
  private seqs: number[] = [];
  private head = 0;
  private seq = 0;

  constructor(
    private readonly windowMs: number,
    private readonly maxEntries: number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    return this.entries.get(key)?.value;
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
    if (old === undefined && this.entries.size >= this.maxEntries) this.evictOldest();
    this.put(key, update(old?.value));
  }

  /** Replaces an entry that is there with a newer one, moving it to the back; no sweep, no eviction. */
  reinsert(key: string, value: V): void {
    this.put(key, value);
  }

  private put(key: string, value: V): void {
    const seq = ++this.seq;
    // Deleted first so that the Map's own order stays age order too (nothing relies on it; it costs nothing).
    this.entries.delete(key);
    this.entries.set(key, { value, seq });
    this.keys.push(key);
    this.seqs.push(seq);
    if (this.keys.length - this.head > 2 * this.entries.size + 1024) this.compact();
  }

  /** The front's slot, after dropping stale queue entries; undefined when empty. */
  private front(): Slot<V> | undefined {
    while (this.head < this.keys.length) {
      const slot = this.entries.get(this.keys[this.head]!);
      if (slot !== undefined && slot.seq === this.seqs[this.head]) return slot;
      this.head++;
    }
    return undefined;
  }

  private evictOldest(): void {
    if (this.front() === undefined) return;
    this.entries.delete(this.keys[this.head]!);
    this.head++;
  }

  private sweep(t: number): void {
    for (let s = this.front(); s !== undefined && t - s.value.at > this.windowMs; s = this.front()) {
      this.entries.delete(this.keys[this.head]!);
      this.head++;
    }
    if (this.head >= 4096 && this.head * 2 >= this.keys.length) this.compact();
  }

  /** Keeps only the queue entries that stand for a slot. */
  private compact(): void {
    const keys: string[] = [];
    const seqs: number[] = [];
    for (let i = this.head; i < this.keys.length; i++) {
      const k = this.keys[i]!;
      if (this.entries.get(k)?.seq === this.seqs[i]) (keys.push(k), seqs.push(this.seqs[i]!));
    }
    this.keys = keys;
    this.seqs = seqs;
    this.head = 0;
  }
}
