// Drops a record whose key was seen among the last `window` keys. Several ingest workers may watch redundant
// feeds and publish the same transaction; the signature (the record key) identifies it. Memory is bounded by
// the window: a ring of the keys in arrival order plus a set for lookup, the oldest evicted first.

export class RecentKeys {
  private readonly ring: Array<string | undefined>;
  private readonly set = new Set<string>();
  private next = 0;

  constructor(readonly window: number) {
    if (!Number.isInteger(window) || window < 1) throw new RangeError(`dedupe window must be a positive integer, got ${window}`);
    this.ring = new Array<string | undefined>(window);
  }

  /** true = first sighting (remembered now); false = a duplicate within the window. */
  firstSeen(key: Buffer): boolean {
    // latin1 keeps one char per byte: exact, and half the size of hex.
    const k = key.toString('latin1');
    if (this.set.has(k)) return false;
    const old = this.ring[this.next];
    if (old !== undefined) this.set.delete(old);
    this.ring[this.next] = k;
    this.next = (this.next + 1) % this.ring.length;
    this.set.add(k);
    return true;
  }

  get size(): number {
    return this.set.size;
  }
}
