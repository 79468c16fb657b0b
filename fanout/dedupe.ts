import { randomInt } from 'node:crypto';
import { removeId } from './filter/id-table';

// Drops a record whose key was seen among the last `window` keys. Several ingest workers may watch redundant
// feeds and publish the same transaction; the signature (the record key) identifies it. Memory is bounded by
// the window and allocated once: the keys' bytes in a ring (arrival order, the oldest evicted first) and an
// open-addressing table of ring positions. A Set of strings did the same with one string per record and
// 100,000 long-lived strings for the garbage collector to walk on every major collection.

/** Longest key kept in the ring by default (a signature); longer ones are kept aside by ring position. */
const MAX_KEY = 64;
const LONG = 0xff;

// Seeded per process: keys come from the bus, and a fixed hash would let a producer craft colliding keys.
const SEED = randomInt(0x7fffffff) | 1;

function hashBytes(b: Uint8Array): number {
  let h = SEED ^ b.length;
  const n = b.length & ~3;
  for (let i = 0; i < n; i += 4) {
    h = Math.imul(h ^ (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)), 0x9e3779b1);
    h ^= h >>> 15;
  }
  for (let i = n; i < b.length; i++) h = Math.imul(h ^ b[i]!, 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 13), 0x85ebca6b);
  return (h ^ (h >>> 16)) & 0x7fffffff;
}

export class RecentKeys {
  private readonly bytes: Uint8Array;
  private readonly lens: Uint8Array;
  private readonly hashes: Int32Array;
  /** Ring position + 1 (0: empty); at most half full. */
  private readonly table: Int32Array;
  private readonly mask: number;
  private next = 0;
  private count = 0;
  /** Keys longer than MAX_KEY, by ring position (lens[r] = LONG). */
  private readonly long = new Map<number, Buffer>();

  /** `maxKey`: the longest key kept in the ring (at most 254 bytes); longer ones are kept aside. */
  constructor(readonly window: number, private readonly maxKey = MAX_KEY) {
    if (!Number.isInteger(window) || window < 1) throw new RangeError(`dedupe window must be a positive integer, got ${window}`);
    if (!Number.isInteger(maxKey) || maxKey < 1 || maxKey >= LONG) throw new RangeError(`dedupe key size must be 1..254, got ${maxKey}`);
    this.bytes = new Uint8Array(window * maxKey);
    this.lens = new Uint8Array(window);
    this.hashes = new Int32Array(window);
    let size = 16;
    while (size < 2 * window) size *= 2;
    this.table = new Int32Array(size);
    this.mask = size - 1;
  }

  /** true = first sighting (remembered now); false = a duplicate within the window. */
  firstSeen(key: Uint8Array): boolean {
    const h = hashBytes(key);
    const len = key.length > this.maxKey ? LONG : key.length;
    const t = this.table;
    for (let slot = h & this.mask; t[slot] !== 0; slot = (slot + 1) & this.mask) {
      const r = t[slot]! - 1;
      if (this.hashes[r] === h && this.lens[r] === len && this.equal(r, key)) return false;
    }
    const r = this.next;
    if (this.count === this.window) this.unlink(r);
    else this.count++;
    if (len === LONG) this.long.set(r, Buffer.from(key));
    else this.bytes.set(key, r * this.maxKey);
    this.lens[r] = len;
    this.hashes[r] = h;
    let slot = h & this.mask;
    while (t[slot] !== 0) slot = (slot + 1) & this.mask;
    t[slot] = r + 1;
    this.next = r + 1 === this.window ? 0 : r + 1;
    return true;
  }

  get size(): number {
    return this.count;
  }

  private equal(r: number, key: Uint8Array): boolean {
    if (key.length > this.maxKey) return Buffer.compare(this.long.get(r)!, key) === 0;
    const b = this.bytes;
    for (let i = 0, o = r * this.maxKey; i < key.length; i++) if (b[o + i] !== key[i]) return false;
    return true;
  }

  /** Drops ring position r (about to be overwritten) from the table. */
  private unlink(r: number): void {
    if (this.lens[r] === LONG) this.long.delete(r);
    removeId(this.table, this.hashes, r);
  }
}
