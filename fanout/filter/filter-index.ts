import { PUBKEY_LEN, type CompiledFilter, type CompiledFilterSet } from './compile';
import { equal32, hash32, type KeyList32 } from './key32';
import { removeId } from './id-table';

// Which subscribers does a transaction reach? Walk the transaction's static account keys against an index of
// every active filter's keys — never each filter against the transaction. The walk goes over the smaller side:
// a transaction carries tens of keys, the index holds up to subscribers × filters × 3 × 1,000 keys, and each
// step is one hash lookup, so the cost is O(tx keys + postings hit + touched subscribers × their filters),
// independent of how many subscribers are idle.
//
// Rules (service.md Endpoint A 5–8): within one filter, include (any listed key present, or no include list),
// required (every listed key present) and exclude (no listed key present) apply together. A filter with neither
// include nor required keys matches everything it does not exclude; those "match-all" filters cannot be found
// through a key, so their subscribers are kept in a set and visited on every transaction — that visit is the
// output itself (each of them receives the transaction unless excluded), so it costs nothing wasted.

/** A filter of one subscriber, with per-transaction scratch fields (valid only when `gen` is current). */
interface Entry<S> {
  owner: Owner<S>;
  filter: CompiledFilter;
  bit: number;
  /** Position in `FilterIndex.entries` (what a posting cell names). */
  id: number;
  /** The posting cells this filter's keys hold, to unlink them when it goes. */
  cells: Int32Array;
  gen: number;
  includeHit: boolean;
  requiredHits: number;
  excluded: boolean;
  /** The same three over the static keys alone (matchSplit only). */
  staticIncludeHit: boolean;
  staticRequiredHits: number;
  staticExcluded: boolean;
}

interface Owner<S> {
  sub: S;
  set: CompiledFilterSet;
  entries: Entry<S>[];
  /** How many of this subscriber's filters are match-all; > 0 puts it in `matchAll`. */
  matchAllCount: number;
  touchedGen: number;
}

export interface Match<S> {
  sub: S;
  /** Bit `slot` set for every matching filter of the subscriber's set. */
  mask: number;
  set: CompiledFilterSet;
}

/** A match of matchSplit: `mask` over every key given, `staticMask` over the static keys alone. */
export interface SplitMatch<S> extends Match<S> {
  staticMask: number;
}

const MIN_TABLE = 2048;

/** No cells (an entry not in the index). */
const EMPTY = new Int32Array(0);

const INC = 0;
const REQ = 1;
const EXC = 2;

/**
 * The postings, without a JS object, string or array per key: a full-size filter update adds and removes
 * 48,000 of them, and allocating (then collecting) that many objects was most of its cost.
 *   - keys: their bytes in one block (`keyBytes`, 32 per key id), found through an open-addressing table of
 *     key ids (linear probing, backward-shift deletion: no tombstones, so probes stay short after removals);
 *   - cells: one per (key, filter, list), in a doubly linked list per key (`head`/`tail`, `next`/`prev`), so
 *     adding is O(1) and removing a filter is O(its keys) whatever the posting's length;
 *   - freed key ids and cells are reused (free stacks); their arrays grow to the most ever held at once
 *     (bounded by the process-wide key cap, fanout.maxKeysTotal) and are dropped when the index empties; the
 *     table shrinks with the keys.
 * One key id covers all three lists: one lookup per transaction key.
 */
class Postings {
  // keys
  keyBytes = new Uint8Array(1024 * PUBKEY_LEN);
  keyHash = new Int32Array(1024);
  head = new Int32Array(1024);
  tail = new Int32Array(1024);
  /** The last match() that visited the key (a repeated key is visited once). */
  keyGen = new Float64Array(1024);
  keyFree: number[] = [];
  keyTop = 0;
  liveKeys = 0;
  /** Moves on every key made or dropped (FilterIndex.epoch). */
  keySetVersion = 0;
  // table of key id + 1 (0: empty)
  table = new Int32Array(MIN_TABLE);
  // cells
  cellEntry = new Int32Array(1024);
  cellList = new Uint8Array(1024);
  cellKey = new Int32Array(1024);
  next = new Int32Array(1024);
  prev = new Int32Array(1024);
  cellFree: number[] = [];
  cellTop = 0;

  /**
   * Live keys per 16-bit digest of their bytes: a transaction's keys are mostly not in any filter, and a zero
   * here answers that without hashing all 32 bytes and probing the table (a cache miss each, in a busy process).
   * Counts saturate at 0xffff and then stay (a false "maybe", never a false "no").
   */
  digestCount = new Uint16Array(1 << 16);

  /** The key id of the 32 bytes at b[o], or -1. */
  find(b: Uint8Array, o: number): number {
    if (this.digestCount[digest16(b, o)] === 0) return -1;
    const t = this.table;
    const mask = t.length - 1;
    const kb = this.keyBytes;
    for (let slot = hash32(b, o) & mask; ; slot = (slot + 1) & mask) {
      const v = t[slot]!;
      if (v === 0) return -1;
      if (equal32(kb, (v - 1) * PUBKEY_LEN, b, o)) return v - 1;
    }
  }

  /** The key id of the 32 bytes at b[o] (their hash32: h), made if new. */
  intern(b: Uint8Array, o: number, h: number): number {
    if (2 * (this.liveKeys + 1) > this.table.length) this.rehash(this.table.length * 2);
    const t = this.table;
    const mask = t.length - 1;
    const kb = this.keyBytes;
    let slot = h & mask;
    for (; ; slot = (slot + 1) & mask) {
      const v = t[slot]!;
      if (v === 0) break;
      if (equal32(kb, (v - 1) * PUBKEY_LEN, b, o)) return v - 1;
    }
    let k = this.keyFree.pop();
    if (k === undefined) {
      k = this.keyTop++;
      if (k >= this.keyHash.length) this.growKeys();
    }
    const kb2 = this.keyBytes;
    for (let i = 0, d = k * PUBKEY_LEN; i < PUBKEY_LEN; i++) kb2[d + i] = b[o + i]!;
    this.keyHash[k] = h;
    this.head[k] = -1;
    this.tail[k] = -1;
    this.keyGen[k] = 0;
    t[slot] = k + 1;
    this.liveKeys++;
    this.keySetVersion++;
    const d = digest16(b, o);
    if (this.digestCount[d]! < 0xffff) this.digestCount[d]!++;
    return k;
  }

  private dropKey(k: number): void {
    const d = digest16(this.keyBytes, k * PUBKEY_LEN);
    if (this.digestCount[d]! < 0xffff) this.digestCount[d]!--;
    removeId(this.table, this.keyHash, k);
    this.liveKeys--;
    this.keySetVersion++;
    this.keyFree.push(k);
  }

  /**
   * After a replacement or a removal (not per key: a map replaced by another of the same size would shrink
   * and regrow the table): below an eighth full, the table shrinks to a quarter full.
   */
  settle(): void {
    if (this.table.length <= MIN_TABLE || 8 * this.liveKeys >= this.table.length) return;
    let size = MIN_TABLE;
    while (size < 4 * this.liveKeys) size *= 2;
    this.rehash(size);
  }

  add(k: number, entryId: number, list: number): number {
    let c = this.cellFree.pop();
    if (c === undefined) {
      c = this.cellTop++;
      if (c >= this.next.length) this.growCells();
    }
    this.cellEntry[c] = entryId;
    this.cellList[c] = list;
    this.cellKey[c] = k;
    // Appended, so a posting lists its filters in the order they came.
    const last = this.tail[k]!;
    this.prev[c] = last;
    this.next[c] = -1;
    if (last < 0) this.head[k] = c;
    else this.next[last] = c;
    this.tail[k] = c;
    return c;
  }

  remove(c: number): void {
    const k = this.cellKey[c]!;
    const p = this.prev[c]!;
    const n = this.next[c]!;
    if (p < 0) this.head[k] = n;
    else this.next[p] = n;
    if (n < 0) this.tail[k] = p;
    else this.prev[n] = p;
    this.cellFree.push(c);
    if (this.head[k]! < 0) this.dropKey(k);
  }

  private rehash(size: number): void {
    const t = new Int32Array(size);
    const mask = size - 1;
    const old = this.table;
    for (let i = 0; i < old.length; i++) {
      const v = old[i]!;
      if (v === 0) continue;
      let slot = this.keyHash[v - 1]! & mask;
      while (t[slot] !== 0) slot = (slot + 1) & mask;
      t[slot] = v;
    }
    this.table = t;
  }

  private growKeys(): void {
    const n = this.keyHash.length * 2;
    this.keyBytes = grow(this.keyBytes, new Uint8Array(n * PUBKEY_LEN));
    this.keyHash = grow(this.keyHash, new Int32Array(n));
    this.head = grow(this.head, new Int32Array(n));
    this.tail = grow(this.tail, new Int32Array(n));
    this.keyGen = grow(this.keyGen, new Float64Array(n));
  }

  private growCells(): void {
    const n = this.next.length * 2;
    this.cellEntry = grow(this.cellEntry, new Int32Array(n));
    this.cellList = grow(this.cellList, new Uint8Array(n));
    this.cellKey = grow(this.cellKey, new Int32Array(n));
    this.next = grow(this.next, new Int32Array(n));
    this.prev = grow(this.prev, new Int32Array(n));
  }
}

/** 16 bits from six bytes at both ends of a key: spread for random keys and for keys with constant stretches. */
function digest16(b: Uint8Array, o: number): number {
  return (b[o]! ^ b[o + 2]! ^ b[o + 29]!) | ((b[o + 1]! ^ b[o + 3]! ^ b[o + 30]!) << 8);
}

function grow<T extends Int32Array | Uint8Array | Float64Array>(from: T, to: T): T {
  to.set(from);
  return to;
}

export class FilterIndex<S> {
  private postings = new Postings();
  /** Entries by id (what cells name); freed ids are reused. */
  private readonly entries: (Entry<S> | undefined)[] = [];
  private readonly entryFree: number[] = [];
  private readonly matchAll = new Set<Owner<S>>();
  private readonly owners = new Map<S, Owner<S>>();
  private gen = 0;
  private listEntries = 0;
  /** Key-set versions of postings dropped when the index emptied (so that `epoch` never goes back). */
  private epochBase = 0;
  /** Reused per call (match() runs per transaction; allocation there is GC pressure on every delivery). */
  private readonly touched: Owner<S>[] = [];

  /**
   * Installs `set` as the subscriber's whole filter set (a replacement, never a patch). A filter carried over
   * unchanged from the previous set (compileFilters keeps its lists, the same objects) keeps its entry and
   * postings, so an update costs what changed, not the size of the map.
   */
  replace(sub: S, set: CompiledFilterSet): void {
    const old = this.owners.get(sub);
    if (set.filters.length === 0) return this.remove(sub);
    const owner: Owner<S> = old ?? { sub, set, entries: [], matchAllCount: 0, touchedGen: 0 };
    const kept = new Map<KeyList32, Entry<S>>();
    if (old !== undefined) for (const e of old.entries) kept.set(e.filter.include, e);
    const entries: Entry<S>[] = [];
    let matchAllCount = 0;
    // The filters that go are removed before the new ones are added: their freed key ids and cells are reused.
    const reused: (Entry<S> | undefined)[] = [];
    for (const filter of set.filters) {
      const e = kept.get(filter.include);
      if (e !== undefined && e.filter.exclude === filter.exclude && e.filter.required === filter.required) {
        kept.delete(filter.include);
        reused.push(e);
      } else {
        reused.push(undefined);
      }
    }
    for (const e of kept.values()) this.removeEntry(e);
    for (let i = 0; i < set.filters.length; i++) {
      const filter = set.filters[i]!;
      let e = reused[i];
      if (e !== undefined) {
        e.filter = filter;
        e.bit = 1 << filter.slot;
      } else {
        e = { owner, filter, bit: 1 << filter.slot, id: -1, cells: EMPTY, gen: 0, includeHit: false, requiredHits: 0, excluded: false, staticIncludeHit: false, staticRequiredHits: 0, staticExcluded: false };
        this.addEntry(e);
      }
      entries.push(e);
      if (filter.include.length === 0 && filter.required.length === 0) matchAllCount++;
    }
    owner.set = set;
    owner.entries = entries;
    owner.matchAllCount = matchAllCount;
    if (matchAllCount > 0) this.matchAll.add(owner);
    else this.matchAll.delete(owner);
    this.owners.set(sub, owner);
    this.postings.settle();
  }

  remove(sub: S): void {
    const owner = this.owners.get(sub);
    if (owner === undefined) return;
    for (const e of owner.entries) this.removeEntry(e);
    this.matchAll.delete(owner);
    this.owners.delete(sub);
    // Key and cell arrays keep the size of the most ever held (ids stay put); the last subscriber leaving
    // gives it all back.
    if (this.owners.size === 0) {
      this.epochBase += this.postings.keySetVersion + 1;
      this.postings = new Postings();
      this.entries.length = 0;
      this.entryFree.length = 0;
    } else this.postings.settle();
  }

  /** Keys held by the subscriber's filters (list entries, after de-duplication within a list). */
  keysOf(sub: S): number {
    const o = this.owners.get(sub);
    if (o === undefined) return 0;
    let n = 0;
    for (const e of o.entries) n += e.filter.include.length + e.filter.exclude.length + e.filter.required.length;
    return n;
  }

  /** List entries held by every subscriber together (what the process-wide key cap bounds). */
  get totalKeys(): number {
    return this.listEntries;
  }

  private addEntry(e: Entry<S>): void {
    const f = e.filter;
    const id = this.entryFree.pop() ?? this.entries.length;
    this.entries[id] = e;
    e.id = id;
    const total = f.include.length + f.required.length + f.exclude.length;
    const cells = new Int32Array(total);
    let j = 0;
    const p = this.postings;
    for (const [list, l] of [
      [INC, f.include],
      [REQ, f.required],
      [EXC, f.exclude],
    ] as const) {
      const b = l.bytes;
      const h = l.hashes;
      for (let i = 0; i < l.length; i++) cells[j++] = p.add(p.intern(b, i * PUBKEY_LEN, h[i]!), id, list);
    }
    e.cells = cells;
    this.listEntries += total;
  }

  private removeEntry(e: Entry<S>): void {
    const p = this.postings;
    const cells = e.cells;
    for (let i = 0; i < cells.length; i++) p.remove(cells[i]!);
    this.listEntries -= cells.length;
    e.cells = EMPTY;
    this.entries[e.id] = undefined;
    this.entryFree.push(e.id);
    e.id = -1;
  }

  /**
   * Changes whenever the set of keys the filters list changes (a key listed for the first time, or no longer
   * listed by any filter): what keyIdAt answers for any bytes stays the same within one epoch (a key's id changes
   * only by being dropped and made again). A filter replaced by one over keys already listed elsewhere does not
   * move it. What is derived from key ids (the per-table hit lists of lookup-tables/table-hits.ts) is dropped
   * when this moves.
   */
  get epoch(): number {
    return this.epochBase + this.postings.keySetVersion;
  }

  /** The key id of the 32 bytes at b[o] (some filter lists them), or -1; valid while `epoch` stays. */
  keyIdAt(b: Uint8Array, o: number): number {
    return this.postings.find(b, o);
  }

  has(sub: S): boolean {
    return this.owners.has(sub);
  }

  get size(): { subscribers: number; matchAll: number; keys: number } {
    return { subscribers: this.owners.size, matchAll: this.matchAll.size, keys: this.postings.liveKeys };
  }

  /**
   * `keys` is N × 32 bytes of static account keys, contiguous (the stream.transactions record layout).
   * Returns one entry per subscriber with at least one matching filter.
   */
  match(keys: Uint8Array, length = keys.length): Match<S>[] {
    const gen = ++this.gen;
    const touched = this.touched;
    touched.length = 0;
    const p = this.postings;
    for (let off = 0; off + PUBKEY_LEN <= length; off += PUBKEY_LEN) this.visit(p.find(keys, off), gen, touched);
    for (const o of this.matchAll) touch(touched, o, gen);
    return this.matchOut(gen);
  }

  /**
   * One walk for a set in which some filters see loaded addresses and others the static keys only (v2's
   * match_loaded_addresses): `keys` holds the static keys in [0, staticLength) and the loaded ones after, up to
   * `length`. Each match carries both answers — `mask` over every key, `staticMask` over the static keys — and
   * the caller takes each filter's bit from the one it asked for. A loaded key equal to a static one is visited
   * once, as a static key (it is in both sets). Returns the subscribers with a bit in either mask.
   */
  matchSplit(keys: Uint8Array, staticLength: number, length = keys.length): SplitMatch<S>[] {
    const gen = ++this.gen;
    const touched = this.touched;
    touched.length = 0;
    const p = this.postings;
    for (let off = 0; off + PUBKEY_LEN <= length; off += PUBKEY_LEN) this.visitSplit(p.find(keys, off), off < staticLength, gen, touched);
    for (const o of this.matchAll) touch(touched, o, gen);
    return this.splitOut(gen);
  }

  /**
   * match() over the static keys in keys[0, length) and then the keys whose ids are ids[0, n) (keyIdAt of the
   * current epoch; -1 is skipped), in that order: the same answer, in the same order, as match() on a block
   * holding those keys' bytes after the static ones — a key id stands for bytes the index would have found.
   * The lookup-table path gives the ids of loaded addresses that some filter lists (table-hits.ts), so the
   * addresses no filter lists cost nothing here.
   */
  matchIds(keys: Uint8Array, length: number, ids: Int32Array, n: number): Match<S>[] {
    const gen = ++this.gen;
    const touched = this.touched;
    touched.length = 0;
    const p = this.postings;
    for (let off = 0; off + PUBKEY_LEN <= length; off += PUBKEY_LEN) this.visit(p.find(keys, off), gen, touched);
    for (let i = 0; i < n; i++) this.visit(ids[i]!, gen, touched);
    for (const o of this.matchAll) touch(touched, o, gen);
    return this.matchOut(gen);
  }

  /**
   * One key of match()/matchIds(): k a key id or -1. A malformed transaction may repeat a key; a posting already
   * visited for this transaction is skipped (stamped with `gen`), so a repeat can neither count twice towards
   * `required` nor cost a second walk.
   */
  private visit(k: number, gen: number, touched: Owner<S>[]): void {
    const p = this.postings;
    if (k < 0 || p.keyGen[k] === gen) return;
    p.keyGen[k] = gen;
    const entries = this.entries;
    for (let c = p.head[k]!; c >= 0; c = p.next[c]!) {
      const e = fresh(entries[p.cellEntry[c]!]!, gen);
      const list = p.cellList[c]!;
      if (list === INC) {
        e.includeHit = true;
        touch(touched, e.owner, gen);
      } else if (list === REQ) {
        e.requiredHits++;
        touch(touched, e.owner, gen);
      } else e.excluded = true; // an exclusion alone never makes a match, so it marks without touching
    }
  }

  /** The subscribers whose filters matched in this walk (`gen`), each with its filters' bits. */
  private matchOut(gen: number): Match<S>[] {
    const touched = this.touched;
    const out: Match<S>[] = [];
    for (const o of touched) {
      let mask = 0;
      for (const e of o.entries) {
        const cur = e.gen === gen;
        const f = e.filter;
        if (cur && e.excluded) continue;
        if (f.include.length > 0 && !(cur && e.includeHit)) continue;
        if (f.required.length > 0 && !(cur && e.requiredHits === f.required.length)) continue;
        mask |= e.bit;
      }
      if (mask !== 0) out.push({ sub: o.sub, mask, set: o.set });
    }
    touched.length = 0; // drop the references until the next call
    return out;
  }

  /**
   * matchSplit() with the loaded keys given as ids (as matchIds): static keys in keys[0, length), then ids[0, n)
   * as loaded keys. The same answer, in the same order, as matchSplit on the block of static + loaded bytes.
   */
  matchSplitIds(keys: Uint8Array, length: number, ids: Int32Array, n: number): SplitMatch<S>[] {
    const gen = ++this.gen;
    const touched = this.touched;
    touched.length = 0;
    const p = this.postings;
    for (let off = 0; off + PUBKEY_LEN <= length; off += PUBKEY_LEN) this.visitSplit(p.find(keys, off), true, gen, touched);
    for (let i = 0; i < n; i++) this.visitSplit(ids[i]!, false, gen, touched);
    for (const o of this.matchAll) touch(touched, o, gen);
    return this.splitOut(gen);
  }

  private visitSplit(k: number, isStatic: boolean, gen: number, touched: Owner<S>[]): void {
    const p = this.postings;
    if (k < 0 || p.keyGen[k] === gen) return;
    p.keyGen[k] = gen;
    const entries = this.entries;
    for (let c = p.head[k]!; c >= 0; c = p.next[c]!) {
      const e = freshSplit(entries[p.cellEntry[c]!]!, gen);
      const list = p.cellList[c]!;
      if (list === INC) {
        e.includeHit = true;
        if (isStatic) e.staticIncludeHit = true;
        touch(touched, e.owner, gen);
      } else if (list === REQ) {
        e.requiredHits++;
        if (isStatic) e.staticRequiredHits++;
        touch(touched, e.owner, gen);
      } else {
        e.excluded = true;
        if (isStatic) e.staticExcluded = true;
      }
    }
  }

  private splitOut(gen: number): SplitMatch<S>[] {
    const touched = this.touched;
    const out: SplitMatch<S>[] = [];
    for (const o of touched) {
      let mask = 0;
      let staticMask = 0;
      for (const e of o.entries) {
        const cur = e.gen === gen;
        const f = e.filter;
        const inc = f.include.length > 0;
        const req = f.required.length;
        if (!(cur && e.excluded) && !(inc && !(cur && e.includeHit)) && !(req > 0 && !(cur && e.requiredHits === req))) mask |= e.bit;
        if (!(cur && e.staticExcluded) && !(inc && !(cur && e.staticIncludeHit)) && !(req > 0 && !(cur && e.staticRequiredHits === req))) staticMask |= e.bit;
      }
      if ((mask | staticMask) !== 0) out.push({ sub: o.sub, mask, set: o.set, staticMask });
    }
    touched.length = 0;
    return out;
  }
}

/** Records the owner once per transaction. */
function touch<S>(touched: Owner<S>[], o: Owner<S>, gen: number): void {
  if (o.touchedGen !== gen) {
    o.touchedGen = gen;
    touched.push(o);
  }
}

/** fresh() for matchSplit: the static-only scratch too. */
function freshSplit<S>(e: Entry<S>, gen: number): Entry<S> {
  if (e.gen !== gen) {
    e.gen = gen;
    e.includeHit = false;
    e.requiredHits = 0;
    e.excluded = false;
    e.staticIncludeHit = false;
    e.staticRequiredHits = 0;
    e.staticExcluded = false;
  }
  return e;
}

/** Resets an entry's scratch the first time this transaction touches it. */
function fresh<S>(e: Entry<S>, gen: number): Entry<S> {
  if (e.gen !== gen) {
    e.gen = gen;
    e.includeHit = false;
    e.requiredHits = 0;
    e.excluded = false;
  }
  return e;
}
