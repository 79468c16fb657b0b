import { PUBKEY_LEN, keyString, type CompiledFilter, type CompiledFilterSet } from './filter';

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
  gen: number;
  includeHit: boolean;
  requiredHits: number;
  excluded: boolean;
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

/**
 * Every entry listing one key, by list, and the last match() that visited the key (a repeated key is visited
 * once). One map for all three lists: one lookup per transaction key. Arrays, not Sets: most keys have one
 * entry, and an array costs one allocation. Removal scans its array — a posting holds at most every stream's
 * filters that list this key, and the process-wide key cap (fanout.maxKeysTotal) bounds the sum of all
 * postings, so a replacement costs at most its keys × that bound and nothing grows without limit.
 */
interface Posting<S> {
  gen: number;
  inc: Entry<S>[] | null;
  req: Entry<S>[] | null;
  exc: Entry<S>[] | null;
}

type ListName = 'inc' | 'req' | 'exc';

function addPosting<S>(p: Map<string, Posting<S>>, key: string, list: ListName, e: Entry<S>): void {
  let s = p.get(key);
  if (s === undefined) {
    s = { gen: 0, inc: null, req: null, exc: null };
    p.set(key, s);
  }
  const arr = s[list];
  if (arr === null) s[list] = [e];
  else arr.push(e);
}

function removePosting<S>(p: Map<string, Posting<S>>, key: string, list: ListName, e: Entry<S>): void {
  const s = p.get(key);
  if (s === undefined) return;
  const arr = s[list];
  if (arr === null) return;
  const i = arr.indexOf(e);
  if (i < 0) return;
  if (arr.length === 1) s[list] = null;
  else {
    arr[i] = arr[arr.length - 1]!;
    arr.pop();
  }
  if (s.inc === null && s.req === null && s.exc === null) p.delete(key);
}

export class FilterIndex<S> {
  private readonly postings = new Map<string, Posting<S>>();
  private readonly matchAll = new Set<Owner<S>>();
  private readonly owners = new Map<S, Owner<S>>();
  private gen = 0;
  private listEntries = 0;
  /** Reused per call (match() runs per transaction; allocation there is GC pressure on every delivery). */
  private readonly touched: Owner<S>[] = [];

  /**
   * Installs `set` as the subscriber's whole filter set (a replacement, never a patch). A filter carried over
   * unchanged from the previous set (compileFilters keeps its lists, the same arrays) keeps its entry and
   * postings, so an update costs what changed, not the size of the map.
   */
  replace(sub: S, set: CompiledFilterSet): void {
    const old = this.owners.get(sub);
    if (set.filters.length === 0) return this.remove(sub);
    const owner: Owner<S> = old ?? { sub, set, entries: [], matchAllCount: 0, touchedGen: 0 };
    const kept = new Map<string[], Entry<S>>();
    if (old !== undefined) for (const e of old.entries) kept.set(e.filter.include, e);
    const entries: Entry<S>[] = [];
    let matchAllCount = 0;
    for (const filter of set.filters) {
      let e = kept.get(filter.include);
      if (e !== undefined && e.filter.exclude === filter.exclude && e.filter.required === filter.required) {
        kept.delete(filter.include);
        e.filter = filter;
        e.bit = 1 << filter.slot;
      } else {
        e = { owner, filter, bit: 1 << filter.slot, gen: 0, includeHit: false, requiredHits: 0, excluded: false };
        this.addEntry(e);
      }
      entries.push(e);
      if (filter.include.length === 0 && filter.required.length === 0) matchAllCount++;
    }
    for (const e of kept.values()) this.removeEntry(e);
    owner.set = set;
    owner.entries = entries;
    owner.matchAllCount = matchAllCount;
    if (matchAllCount > 0) this.matchAll.add(owner);
    else this.matchAll.delete(owner);
    this.owners.set(sub, owner);
  }

  remove(sub: S): void {
    const owner = this.owners.get(sub);
    if (owner === undefined) return;
    for (const e of owner.entries) this.removeEntry(e);
    this.matchAll.delete(owner);
    this.owners.delete(sub);
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
    for (const k of f.include) addPosting(this.postings, k, 'inc', e);
    for (const k of f.required) addPosting(this.postings, k, 'req', e);
    for (const k of f.exclude) addPosting(this.postings, k, 'exc', e);
    this.listEntries += f.include.length + f.required.length + f.exclude.length;
  }

  private removeEntry(e: Entry<S>): void {
    const f = e.filter;
    for (const k of f.include) removePosting(this.postings, k, 'inc', e);
    for (const k of f.required) removePosting(this.postings, k, 'req', e);
    for (const k of f.exclude) removePosting(this.postings, k, 'exc', e);
    this.listEntries -= f.include.length + f.required.length + f.exclude.length;
  }

  has(sub: S): boolean {
    return this.owners.has(sub);
  }

  get size(): { subscribers: number; matchAll: number; keys: number } {
    return { subscribers: this.owners.size, matchAll: this.matchAll.size, keys: this.postings.size };
  }

  /**
   * `keys` is N × 32 bytes of static account keys, contiguous (the stream.transactions record layout).
   * Returns one entry per subscriber with at least one matching filter.
   */
  match(keys: Buffer): Match<S>[] {
    const gen = ++this.gen;
    const touched = this.touched;
    touched.length = 0;
    // A malformed transaction may repeat a key; a posting already visited for this transaction is skipped
    // (stamped with `gen`), so a repeat can neither count twice towards `required` nor cost a second walk.
    for (let off = 0; off + PUBKEY_LEN <= keys.length; off += PUBKEY_LEN) {
      const p = this.postings.get(keyString(keys, off));
      if (p === undefined || p.gen === gen) continue;
      p.gen = gen;
      const inc = p.inc;
      if (inc !== null) {
        for (let i = 0; i < inc.length; i++) {
          const e = inc[i]!;
          fresh(e, gen).includeHit = true;
          touch(touched, e.owner, gen);
        }
      }
      const req = p.req;
      if (req !== null) {
        for (let i = 0; i < req.length; i++) {
          const e = req[i]!;
          fresh(e, gen).requiredHits++;
          touch(touched, e.owner, gen);
        }
      }
      // An exclusion alone never makes a match, so it marks without touching.
      const exc = p.exc;
      if (exc !== null) for (let i = 0; i < exc.length; i++) fresh(exc[i]!, gen).excluded = true;
    }
    for (const o of this.matchAll) touch(touched, o, gen);

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
}

/** Records the owner once per transaction. */
function touch<S>(touched: Owner<S>[], o: Owner<S>, gen: number): void {
  if (o.touchedGen !== gen) {
    o.touchedGen = gen;
    touched.push(o);
  }
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
