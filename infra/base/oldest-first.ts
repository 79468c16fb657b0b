// A Map and a Set that give up their oldest entry in O(1): the bounded caches of every component (ingest's root
// and FEC-set tables, the submission service's short-memory caches) evict oldest first at their cap.
//
// Why not a plain Map's own order: V8 keeps a deleted entry's slot in the table until the next rehash, and
// iteration steps over every one of them, so `map.keys().next()` after many deletions from the front walks them
// all. Measured on Node 20: 25–30 µs per eviction at 65,536 entries, 50–84 µs at 100,000, against 1.5–2.4 µs
// with the queue below. Here every write also goes on a queue (key and write number); a deleted or re-added key
// leaves a stale queue entry, skipped when it reaches the front and dropped when the queue is compacted (once it
// holds more than twice the live entries plus 1,024, or its consumed front is as long as the rest), so each
// operation is O(1) amortized.
//
// Order: an entry's age is its first write; `set` on a key that is there keeps its place (as Map's does), a key
// deleted and added again is new.

class AgeQueue<K> {
  private keys: K[] = [];
  private seqs: number[] = [];
  private head = 0;
  private seq = 0;

  constructor(private readonly seqOf: (k: K) => number | undefined) {}

  /** Records a new entry's first write; returns the number its owner keeps beside it. */
  push(k: K, live: number): number {
    const s = ++this.seq;
    this.keys.push(k);
    this.seqs.push(s);
    // Stale entries past twice the live ones, or a consumed front as long as the rest: both cost O(live) to drop,
    // after at least that many operations.
    if (this.keys.length - this.head > 2 * live + 1024 || (this.head >= 4096 && this.head * 2 >= this.keys.length)) this.compact();
    return s;
  }

  /** The oldest live key (stale entries before it are dropped); undefined when none. */
  oldest(): K | undefined {
    while (this.head < this.keys.length) {
      const k = this.keys[this.head]!;
      if (this.seqOf(k) === this.seqs[this.head]) return k;
      this.head++;
    }
    return undefined;
  }

  clear(): void {
    this.keys = [];
    this.seqs = [];
    this.head = 0;
  }

  /** Keeps only the entries that stand for a live key. */
  private compact(): void {
    const keys: K[] = [];
    const seqs: number[] = [];
    for (let i = this.head; i < this.keys.length; i++) {
      const k = this.keys[i]!;
      if (this.seqOf(k) === this.seqs[i]) (keys.push(k), seqs.push(this.seqs[i]!));
    }
    this.keys = keys;
    this.seqs = seqs;
    this.head = 0;
  }
}

interface Slot<V> {
  value: V;
  seq: number;
}

export class OldestFirstMap<K, V> {
  private readonly map = new Map<K, Slot<V>>();
  private readonly queue = new AgeQueue<K>((k) => this.map.get(k)?.seq);

  get size(): number {
    return this.map.size;
  }

  get(k: K): V | undefined {
    return this.map.get(k)?.value;
  }

  has(k: K): boolean {
    return this.map.has(k);
  }

  /** A key that is there keeps its place (its value replaced); a new one is the newest. */
  set(k: K, value: V): void {
    const s = this.map.get(k);
    if (s !== undefined) s.value = value;
    else this.map.set(k, { value, seq: this.queue.push(k, this.map.size) });
  }

  delete(k: K): boolean {
    return this.map.delete(k);
  }

  /** The oldest key, left in place; undefined when empty. */
  oldestKey(): K | undefined {
    return this.map.size === 0 ? undefined : this.queue.oldest();
  }

  /** The oldest entry's value, left in place. */
  oldestValue(): V | undefined {
    const k = this.oldestKey();
    return k === undefined ? undefined : this.map.get(k)!.value;
  }

  /** Removes the oldest entry; returns its key (undefined when empty). */
  deleteOldest(): K | undefined {
    const k = this.oldestKey();
    if (k !== undefined) this.map.delete(k);
    return k;
  }

  clear(): void {
    this.map.clear();
    this.queue.clear();
  }

  /** Oldest first. */
  *entries(): IterableIterator<[K, V]> {
    for (const [k, s] of this.map) yield [k, s.value];
  }
}

export class OldestFirstSet<K> {
  private readonly map = new Map<K, number>();
  private readonly queue = new AgeQueue<K>((k) => this.map.get(k));

  get size(): number {
    return this.map.size;
  }

  has(k: K): boolean {
    return this.map.has(k);
  }

  /** A member already there keeps its place. */
  add(k: K): void {
    if (!this.map.has(k)) this.map.set(k, this.queue.push(k, this.map.size));
  }

  delete(k: K): boolean {
    return this.map.delete(k);
  }

  /** The oldest member, left in place; undefined when empty. */
  oldest(): K | undefined {
    return this.map.size === 0 ? undefined : this.queue.oldest();
  }

  /** Removes the oldest member; returns it (undefined when empty). */
  deleteOldest(): K | undefined {
    const k = this.oldest();
    if (k !== undefined) this.map.delete(k);
    return k;
  }

  clear(): void {
    this.map.clear();
    this.queue.clear();
  }

  /** Oldest first. */
  [Symbol.iterator](): IterableIterator<K> {
    return this.map.keys();
  }
}
