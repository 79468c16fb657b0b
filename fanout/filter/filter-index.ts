import { PUBKEY_LEN, type CompiledFilter, type CompiledFilterSet } from './compile';
import { equal32, equalWords, hash32Words, type KeyList32 } from './key32';
import { removeId } from './id-table';
import { InstructionIndex, type IxCell } from './instruction-index';
import { TxFacts } from './tx-facts';

// Which subscribers does a transaction reach? Walk the transaction's static account keys against an index of
// every active filter's keys — never each filter against the transaction. The walk goes over the smaller side:
// a transaction carries tens of keys, the index holds up to subscribers × filters × 3 × 1,000 keys, and each
// step is one hash lookup, so the cost is O(tx keys + postings hit + touched subscribers × their filters),
// independent of how many subscribers are idle.
//
// v2's parts beyond account lists (compile-extra.ts) are keyed too: role lists (account_writable, account_signer)
// as their own posting chains under the same key ids, walked only for a key the transaction holds in that role;
// instruction filters by program id (a program is a key of the postings too, held by a count of the filters naming
// it, so the same walk over the static keys finds the programs) then data prefix (instruction-index.ts); signatures by their bytes. A filter
// with none of include, required, role keys, instructions or a signature is match-all (vote and exclude alone
// cannot find it). What a transaction holds in each role and its instructions come from its TxFacts, read from the
// record prepare() named, once, when the walk first reaches something that needs them (a key with role chains, a
// program some filter names, a signature filter, a match-all filter with such parts): a record that reaches no such
// filter is not read. A record matched without prepare() matches no such filter.
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
  /** Role keys hit (over every key / static keys only), an instruction filter hit, the signature hit. */
  wHits: number;
  staticWHits: number;
  sHits: number;
  ixHit: boolean;
  sigHit: boolean;
  /** The instruction-index cells of this filter, to remove them when it goes. */
  ixCells: IxCell[];
  /** The filter's parts beyond account lists, flat (extraOk reads them for every touched filter with such parts,
   *  and the compiled lists are other objects, a cache miss each): role keys, whether it has instruction
   *  filters or a signature, the vote switch. */
  xWritable: number;
  xSigner: number;
  xIx: boolean;
  xSig: boolean;
  xVote: number;
  /** The filter's include and required list lengths and whether it has parts beyond account lists, flat for the
   *  same reason (matchOut reads them for every filter of a touched subscriber; the lists are objects of their own). */
  nInc: number;
  nReq: number;
  hasX: boolean;
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
/** 32-bit words in a key. */
const KEY_WORDS = PUBKEY_LEN / 4;

/** No cells (an entry not in the index). */
const EMPTY = new Int32Array(0);
const EMPTY_BYTES = new Uint8Array(0);

const INC = 0;
const REQ = 1;
const EXC = 2;
/** Role lists: their own chains of a key (chain 1, 2), apart from the account lists' (chain 0). */
const WRT = 3;
const SGN = 4;
const CHAINS = 3;
const chainOf = (list: number): number => (list < WRT ? 0 : list - 2);

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
  /** The same bytes as little-endian words (KEY_WORDS per key id), what find() compares (key32.ts hash32Words). */
  keyWords = new Int32Array(1024 * KEY_WORDS);
  /** find()'s scratch: the words of the key looked up. */
  private readonly words = new Int32Array(KEY_WORDS);
  keyHash = new Int32Array(1024);
  /** Per key, CHAINS chains (accounts, writable, signer): chain c of key k at k * CHAINS + c. */
  head = new Int32Array(CHAINS * 1024);
  tail = new Int32Array(CHAINS * 1024);
  /** The last match() that visited each chain of the key (a repeated key is visited once). */
  keyGen = new Float64Array(CHAINS * 1024);
  /**
   * Per key, how many instruction filters name it as their program: such a key is kept while any does, so that
   * the walk over a transaction's static keys finds the programs (instruction-index.ts nodes are by key id). A
   * count apart from the chains (never walked), so the arrays an account-only match reads keep their layout.
   */
  programRefs = new Int32Array(1024);
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
    const kw = this.keyWords;
    const w = this.words;
    for (let slot = hash32Words(b, o, w, 0) & mask; ; slot = (slot + 1) & mask) {
      const v = t[slot]!;
      if (v === 0) return -1;
      if (equalWords(kw, (v - 1) * KEY_WORDS, w)) return v - 1;
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
    hash32Words(b, o, this.keyWords, k * KEY_WORDS);
    this.keyHash[k] = h;
    this.programRefs[k] = 0;
    for (let c = k * CHAINS; c < (k + 1) * CHAINS; c++) {
      this.head[c] = -1;
      this.tail[c] = -1;
      this.keyGen[c] = 0;
    }
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
    const ch = k * CHAINS + chainOf(list);
    const last = this.tail[ch]!;
    this.prev[c] = last;
    this.next[c] = -1;
    if (last < 0) this.head[ch] = c;
    else this.next[last] = c;
    this.tail[ch] = c;
    return c;
  }

  remove(c: number): void {
    const k = this.cellKey[c]!;
    const ch = k * CHAINS + chainOf(this.cellList[c]!);
    const p = this.prev[c]!;
    const n = this.next[c]!;
    if (p < 0) this.head[ch] = n;
    else this.next[p] = n;
    if (n < 0) this.tail[ch] = p;
    else this.prev[n] = p;
    this.cellFree.push(c);
    this.dropIfUnused(k);
  }

  /** An instruction filter names key k as its program. */
  addProgram(k: number): void {
    this.programRefs[k]!++;
  }

  removeProgram(k: number): void {
    this.programRefs[k]!--;
    this.dropIfUnused(k);
  }

  private dropIfUnused(k: number): void {
    const h = k * CHAINS;
    if (this.head[h]! < 0 && this.head[h + 1]! < 0 && this.head[h + 2]! < 0 && this.programRefs[k] === 0) this.dropKey(k);
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
    this.keyWords = grow(this.keyWords, new Int32Array(n * KEY_WORDS));
    this.keyHash = grow(this.keyHash, new Int32Array(n));
    this.head = grow(this.head, new Int32Array(CHAINS * n));
    this.tail = grow(this.tail, new Int32Array(CHAINS * n));
    this.keyGen = grow(this.keyGen, new Float64Array(CHAINS * n));
    this.programRefs = grow(this.programRefs, new Int32Array(n));
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
  private readonly touched = new Touched<S>();
  /** Instruction filters by program, then prefix; filters by signature (hash of its first 8 bytes). */
  private readonly ix = new InstructionIndex();
  private readonly sigs = new Map<number, Entry<S>[]>();
  /** Entries with parts beyond account lists: while 0, prepare() reads nothing. */
  private extraEntries = 0;
  private readonly txFacts = new TxFacts();
  /** The record the next match call is for (prepare), taken by that call; its facts are read when first needed. */
  private pending = false;
  private pendingKeys: Uint8Array = EMPTY_BYTES;
  private pendingMessage: Uint8Array = EMPTY_BYTES;
  /** The record's `facts` header (bus/topics/stream-transactions-facts.ts), or null: the message is read. */
  private pendingFacts: Uint8Array | null = null;
  /** The current match call took a prepared record, and whether its facts are read yet (`txFacts`). */
  private hasRecord = false;
  private factsRead = false;
  /** Static key i of the current match is a program some instruction filter names when progGen[i] is its gen;
   *  progKey[i] is then its key id. */
  private progGen = new Float64Array(64);
  private progKey = new Int32Array(64);

  /**
   * Names the record about to be matched (its static keys and message) for what filters beyond account lists
   * need of it: the next match call takes it, and reads the message (TxFacts) only when such a filter is reached —
   * a key with role chains, a program some instruction filter names, a signature filter, or a match-all filter
   * with such parts. A record no such filter can reach is not read at all. Costs nothing while no filter has such
   * parts. `facts`: the record's facts header when it has one (then the message is walked only if the header does
   * not fit it).
   */
  prepare(keys: Uint8Array, message: Uint8Array, facts: Uint8Array | null = null): void {
    if (this.extraEntries === 0) {
      this.pending = false;
      return;
    }
    this.pending = true;
    this.pendingKeys = keys;
    this.pendingMessage = message;
    this.pendingFacts = facts;
  }

  /** Called once by each match call: whether it has a prepared record (then `facts()` may be called). */
  private take(): boolean {
    const h = this.pending;
    this.pending = false;
    this.hasRecord = h;
    this.factsRead = false;
    return h;
  }

  /** The prepared record's facts, read once per match call; null when the message does not parse. Only while
   *  `hasRecord`. */
  private facts(): TxFacts | null {
    const t = this.txFacts;
    if (!this.factsRead) {
      this.factsRead = true;
      const h = this.pendingFacts;
      if (h === null || !t.fromHeader(this.pendingKeys, this.pendingKeys.length, this.pendingMessage, h)) t.read(this.pendingKeys, this.pendingKeys.length, this.pendingMessage);
    }
    return t.bad ? null : t;
  }

  /** Marks static key i (key id k) as a program of some instruction filter, for visitTx. */
  private stampProgram(i: number, k: number, gen: number): void {
    if (i >= this.progGen.length) {
      const n = Math.max(2 * this.progGen.length, i + 1);
      this.progGen = grow(this.progGen, new Float64Array(n));
      this.progKey = grow(this.progKey, new Int32Array(n));
    }
    this.progGen[i] = gen;
    this.progKey[i] = k;
  }

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
      if (e !== undefined && e.filter.exclude === filter.exclude && e.filter.required === filter.required && e.filter.extra === filter.extra) {
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
        e.filter = filter; // the same lists and parts (the reuse test above)
        e.bit = 1 << filter.slot;
      } else {
        // Fields in the order a match reads them (V8 lays a literal's fields out in the order written, and an entry
        // spans several cache lines): what every match of it touches first, then the parts beyond account lists,
        // then matchSplit's, then what only updates read.
        e = {
          gen: 0, includeHit: false, requiredHits: 0, excluded: false, owner, bit: 1 << filter.slot, nInc: 0, nReq: 0, hasX: false,
          wHits: 0, sHits: 0, ixHit: false, sigHit: false, xWritable: 0, xSigner: 0, xIx: false, xSig: false, xVote: -1,
          staticWHits: 0, staticIncludeHit: false, staticRequiredHits: 0, staticExcluded: false,
          filter, id: -1, cells: EMPTY, ixCells: [],
        };
        this.addEntry(e);
      }
      entries.push(e);
      if (isMatchAll(filter)) matchAllCount++;
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
    this.touched.clear();
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
    for (const e of o.entries) n += keyCount(e.filter);
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
    const x = f.extra;
    e.nInc = f.include.length;
    e.nReq = f.required.length;
    e.hasX = x !== undefined;
    if (x !== undefined) {
      e.xWritable = x.writable.length;
      e.xSigner = x.signer.length;
      e.xIx = x.instructions.length > 0;
      e.xSig = x.signature !== null;
      e.xVote = x.vote;
    }
    const roles = x === undefined ? 0 : x.writable.length + x.signer.length;
    const total = f.include.length + f.required.length + f.exclude.length + roles;
    const cells = new Int32Array(total);
    let j = 0;
    const p = this.postings;
    const lists: Array<readonly [number, KeyList32]> = [
      [INC, f.include],
      [REQ, f.required],
      [EXC, f.exclude],
    ];
    if (x !== undefined) lists.push([WRT, x.writable], [SGN, x.signer]);
    for (const [list, l] of lists) {
      const b = l.bytes;
      const h = l.hashes;
      for (let i = 0; i < l.length; i++) cells[j++] = p.add(p.intern(b, i * PUBKEY_LEN, h[i]!), id, list);
    }
    if (x !== undefined)
      for (const ixf of x.instructions) {
        const k = p.intern(ixf.program, 0, ixf.programHash);
        p.addProgram(k);
        e.ixCells.push(this.ix.add(id, ixf, k));
      }
    e.cells = cells;
    this.listEntries += keyCount(f);
    if (x !== undefined) {
      this.extraEntries++;
      if (x.signature !== null) {
        const h = sigHash(x.signature, 0);
        const l = this.sigs.get(h);
        if (l === undefined) this.sigs.set(h, [e]);
        else l.push(e);
      }
    }
  }

  private removeEntry(e: Entry<S>): void {
    const p = this.postings;
    const cells = e.cells;
    for (let i = 0; i < cells.length; i++) p.remove(cells[i]!);
    this.listEntries -= keyCount(e.filter);
    e.cells = EMPTY;
    const x = e.filter.extra;
    if (x !== undefined) {
      this.extraEntries--;
      for (const c of e.ixCells) {
        this.ix.remove(c);
        p.removeProgram(c.keyId);
      }
      e.ixCells = [];
      if (x.signature !== null) {
        const h = sigHash(x.signature, 0);
        const l = this.sigs.get(h)!;
        l.splice(l.indexOf(e), 1);
        if (l.length === 0) this.sigs.delete(h);
      }
    }
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
    touched.n = 0;
    const has = this.take();
    const p = this.postings;
    let progs = 0;
    for (let off = 0, i = 0; off + PUBKEY_LEN <= length; off += PUBKEY_LEN, i++) {
      const k = p.find(keys, off);
      if (k < 0) continue;
      this.visit(k, gen, touched);
      if (has) progs += this.staticParts(k, i, gen, touched);
    }
    if (has) this.visitTx(progs, gen, touched);
    if (this.matchAll.size > 0) for (const o of this.matchAll) touch(touched, o, gen);
    return this.matchOut(gen);
  }

  /**
   * One walk for a set in which some filters see loaded addresses and others the static keys only (v2's
   * match_loaded_addresses): `keys` holds the static keys in [0, staticLength) and the loaded ones after, up to
   * `length`, the first `loadedWritable` of them writable. Each match carries both answers — `mask` over every key,
   * `staticMask` over the static keys — and the caller takes each filter's bit from the one it asked for. A loaded
   * key equal to a static one is visited once, as a static key (it is in both sets); its roles are its static ones.
   * Returns the subscribers with a bit in either mask.
   */
  matchSplit(keys: Uint8Array, staticLength: number, length = keys.length, loadedWritable = 0): SplitMatch<S>[] {
    const gen = ++this.gen;
    const touched = this.touched;
    touched.n = 0;
    const has = this.take();
    const p = this.postings;
    let progs = 0;
    for (let off = 0, i = 0; off + PUBKEY_LEN <= length; off += PUBKEY_LEN, i++) {
      const k = p.find(keys, off);
      if (k < 0) continue;
      const isStatic = off < staticLength;
      this.visitSplit(k, isStatic, gen, touched);
      if (!has) continue;
      if (isStatic) progs += this.staticParts(k, i, gen, touched);
      else this.loadedParts(k, i - (staticLength >>> 5) < loadedWritable, false, gen, touched);
    }
    if (has) this.visitTx(progs, gen, touched);
    if (this.matchAll.size > 0) for (const o of this.matchAll) touch(touched, o, gen);
    return this.splitOut(gen);
  }

  /**
   * match() over the static keys in keys[0, length) and then the keys whose ids are ids[0, n) (keyIdAt of the
   * current epoch; -1 is skipped), in that order: the same answer, in the same order, as match() on a block
   * holding those keys' bytes after the static ones — a key id stands for bytes the index would have found.
   * The lookup-table path gives the ids of loaded addresses that some filter lists (table-hits.ts), so the
   * addresses no filter lists cost nothing here.
   */
  matchIds(keys: Uint8Array, length: number, ids: Int32Array, n: number, writableIds = 0): Match<S>[] {
    const gen = ++this.gen;
    const touched = this.touched;
    touched.n = 0;
    const has = this.take();
    const p = this.postings;
    let progs = 0;
    for (let off = 0, i = 0; off + PUBKEY_LEN <= length; off += PUBKEY_LEN, i++) {
      const k = p.find(keys, off);
      if (k < 0) continue;
      this.visit(k, gen, touched);
      if (has) progs += this.staticParts(k, i, gen, touched);
    }
    for (let i = 0; i < n; i++) {
      const k = ids[i]!;
      if (k < 0) continue;
      this.visit(k, gen, touched);
      if (has) this.loadedParts(k, i < writableIds, true, gen, touched);
    }
    if (has) this.visitTx(progs, gen, touched);
    if (this.matchAll.size > 0) for (const o of this.matchAll) touch(touched, o, gen);
    return this.matchOut(gen);
  }

  /**
   * One key of match()/matchIds(): k a key id. A malformed transaction may repeat a key; a posting already
   * visited for this transaction is skipped (stamped with `gen`), so a repeat can neither count twice towards
   * `required` nor cost a second walk.
   */
  private visit(k: number, gen: number, touched: Touched<S>): void {
    const p = this.postings;
    const ch = k * CHAINS;
    if (p.keyGen[ch] === gen) return;
    p.keyGen[ch] = gen;
    const entries = this.entries;
    for (let c = p.head[ch]!; c >= 0; c = p.next[c]!) {
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

  /**
   * The role chains of key k, for a key the transaction holds writable and/or as a signer. `isStatic` false: a
   * loaded address (its writable hit counts for filters that see loaded addresses only). Each chain is walked once
   * per transaction (a key both static and loaded, or repeated, counts once).
   */
  private visitRoles(k: number, writable: boolean, signer: boolean, isStatic: boolean, gen: number, touched: Touched<S>): void {
    const p = this.postings;
    const entries = this.entries;
    if (writable) {
      const ch = k * CHAINS + 1;
      if (p.keyGen[ch] !== gen) {
        p.keyGen[ch] = gen;
        for (let c = p.head[ch]!; c >= 0; c = p.next[c]!) {
          const e = freshSplit(entries[p.cellEntry[c]!]!, gen);
          e.wHits++;
          if (isStatic) e.staticWHits++;
          touch(touched, e.owner, gen);
        }
      }
    }
    if (signer) {
      const ch = k * CHAINS + 2;
      if (p.keyGen[ch] !== gen) {
        p.keyGen[ch] = gen;
        for (let c = p.head[ch]!; c >= 0; c = p.next[c]!) {
          const e = freshSplit(entries[p.cellEntry[c]!]!, gen);
          e.sHits++;
          touch(touched, e.owner, gen);
        }
      }
    }
  }

  /**
   * Static key i (key id k) of a prepared record: its role chains, when it has any (the record's facts are read
   * then, for its roles), and whether it is a program some instruction filter names (1: stamped for visitTx).
   */
  private staticParts(k: number, i: number, gen: number, touched: Touched<S>): number {
    const head = this.postings.head;
    const ch = k * CHAINS;
    if (head[ch + 1]! >= 0 || head[ch + 2]! >= 0) {
      const t = this.facts();
      if (t !== null) this.visitRoles(k, t.isWritable(i), t.isSigner(i), true, gen, touched);
    }
    if (this.postings.programRefs[k] === 0) return 0;
    this.stampProgram(i, k, gen);
    return 1;
  }

  /** A loaded key (key id k) of a prepared record: its writable chain when it is loaded writable (loaded keys
   *  are never signers, and a program must be a static key). */
  private loadedParts(k: number, writable: boolean, isStatic: boolean, gen: number, touched: Touched<S>): void {
    if (!writable || this.postings.head[k * CHAINS + 1]! < 0) return;
    if (this.facts() !== null) this.visitRoles(k, true, false, isStatic, gen, touched);
  }

  /**
   * Instruction filters and signatures: what the transaction's top-level instructions (those whose program is a
   * static key stamped by staticParts: `progs` of them) and first signature reach.
   */
  private visitTx(progs: number, gen: number, touched: Touched<S>): void {
    if (progs > 0) {
      const t = this.facts();
      if (t !== null) {
        const ix = this.ix;
        const pg = this.progGen;
        const pk = this.progKey;
        const kc = t.keyCount;
        let n = 0;
        for (let j = 0; j < t.ixCount; j++) {
          const pi = t.ixProgram[j]!;
          // An index past the static keys names no program (the chain refuses it: README).
          if (pi < 0 || pi >= kc || pi >= pg.length || pg[pi] !== gen) continue;
          const k = pk[pi]!;
          const node = ix.node(k);
          if (node !== undefined) n = ix.matchData(k, node, t.message, t.ixDataOff[j]!, t.ixDataLen[j]!);
        }
        if (n > 0) {
          const hits = ix.hits;
          const entries = this.entries;
          for (let i = 0; i < n; i++) {
            // A hit's tag is the entry id it was indexed under (addEntry), the entry live while it is indexed.
            const e = freshSplit(entries[hits[i]!]!, gen);
            e.ixHit = true;
            touch(touched, e.owner, gen);
          }
          ix.clearHits();
        }
      }
    }
    if (this.sigs.size > 0) {
      const t = this.facts();
      if (t === null || t.signatureOff < 0) return;
      const l = this.sigs.get(sigHash(t.message, t.signatureOff));
      if (l !== undefined)
        for (const e0 of l) {
          if (!equal64(e0.filter.extra!.signature!, t.message, t.signatureOff)) continue;
          const e = freshSplit(e0, gen);
          e.sigHit = true;
          touch(touched, e.owner, gen);
        }
    }
  }

  /** The subscribers whose filters matched in this walk (`gen`), each with its filters' bits. */
  private matchOut(gen: number): Match<S>[] {
    const touched = this.touched;
    const out: Match<S>[] = [];
    const owners = touched.items;
    for (let i = 0; i < touched.n; i++) {
      const o = owners[i]!;
      let mask = 0;
      for (const e of o.entries) {
        const cur = e.gen === gen;
        if (cur && e.excluded) continue;
        if (e.nInc > 0 && !(cur && e.includeHit)) continue;
        if (e.nReq > 0 && !(cur && e.requiredHits === e.nReq)) continue;
        if (e.hasX && !extraOk(e, cur, this.hasRecord ? this.facts() : null, false)) continue;
        mask |= e.bit;
      }
      if (mask !== 0) out.push({ sub: o.sub, mask, set: o.set });
    }
    touched.n = 0;
    return out;
  }

  /**
   * matchSplit() with the loaded keys given as ids (as matchIds): static keys in keys[0, length), then ids[0, n)
   * as loaded keys, the first `writableIds` of them loaded writable. The same answer, in the same order, as
   * matchSplit on the block of static + loaded bytes.
   */
  matchSplitIds(keys: Uint8Array, length: number, ids: Int32Array, n: number, writableIds = 0): SplitMatch<S>[] {
    const gen = ++this.gen;
    const touched = this.touched;
    touched.n = 0;
    const has = this.take();
    const p = this.postings;
    let progs = 0;
    for (let off = 0, i = 0; off + PUBKEY_LEN <= length; off += PUBKEY_LEN, i++) {
      const k = p.find(keys, off);
      if (k < 0) continue;
      this.visitSplit(k, true, gen, touched);
      if (has) progs += this.staticParts(k, i, gen, touched);
    }
    for (let i = 0; i < n; i++) {
      const k = ids[i]!;
      if (k < 0) continue;
      this.visitSplit(k, false, gen, touched);
      if (has) this.loadedParts(k, i < writableIds, false, gen, touched);
    }
    if (has) this.visitTx(progs, gen, touched);
    if (this.matchAll.size > 0) for (const o of this.matchAll) touch(touched, o, gen);
    return this.splitOut(gen);
  }

  private visitSplit(k: number, isStatic: boolean, gen: number, touched: Touched<S>): void {
    const p = this.postings;
    const ch = k * CHAINS;
    if (p.keyGen[ch] === gen) return;
    p.keyGen[ch] = gen;
    const entries = this.entries;
    for (let c = p.head[ch]!; c >= 0; c = p.next[c]!) {
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
    const owners = touched.items;
    for (let i = 0; i < touched.n; i++) {
      const o = owners[i]!;
      let mask = 0;
      let staticMask = 0;
      for (const e of o.entries) {
        const cur = e.gen === gen;
        const inc = e.nInc > 0;
        const req = e.nReq;
        const x = e.hasX;
        const t = x && this.hasRecord ? this.facts() : null;
        if (!(cur && e.excluded) && !(inc && !(cur && e.includeHit)) && !(req > 0 && !(cur && e.requiredHits === req)) && !(x && !extraOk(e, cur, t, false))) mask |= e.bit;
        if (!(cur && e.staticExcluded) && !(inc && !(cur && e.staticIncludeHit)) && !(req > 0 && !(cur && e.staticRequiredHits === req)) && !(x && !extraOk(e, cur, t, true))) staticMask |= e.bit;
      }
      if ((mask | staticMask) !== 0) out.push({ sub: o.sub, mask, set: o.set, staticMask });
    }
    touched.n = 0;
    return out;
  }
}

/** A filter found through no key, instruction or signature: visited on every transaction. */
function isMatchAll(f: CompiledFilter): boolean {
  if (f.include.length > 0 || f.required.length > 0) return false;
  const x = f.extra;
  return x === undefined || (x.writable.length === 0 && x.signer.length === 0 && x.instructions.length === 0 && x.signature === null);
}

/** What a filter holds against the key caps: its list entries, role keys and instruction filters. */
function keyCount(f: CompiledFilter): number {
  const x = f.extra;
  return f.include.length + f.exclude.length + f.required.length + (x === undefined ? 0 : x.writable.length + x.signer.length + x.instructions.length);
}

/** The parts beyond account lists of a filter with them (`cur`: its scratch is of this walk). */
function extraOk<S>(e: Entry<S>, cur: boolean, t: TxFacts | null, staticOnly: boolean): boolean {
  if (t === null) return false;
  if (e.xWritable > 0 && !(cur && (staticOnly ? e.staticWHits : e.wHits) === e.xWritable)) return false;
  if (e.xSigner > 0 && !(cur && e.sHits === e.xSigner)) return false;
  if (e.xIx && !(cur && e.ixHit)) return false;
  if (e.xSig && !(cur && e.sigHit)) return false;
  if (e.xVote >= 0 && (t.isVote ? 1 : 0) !== e.xVote) return false;
  return true;
}

/** 30 bits of a signature's first 8 bytes (a Smi Map key; signatures are ed25519 output, spread already). */
function sigHash(b: Uint8Array, o: number): number {
  return ((b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) ^ Math.imul(b[o + 4]! | (b[o + 5]! << 8) | (b[o + 6]! << 16) | (b[o + 7]! << 24), 0x9e3779b1)) & 0x3fffffff;
}

function equal64(a: Uint8Array, b: Uint8Array, bo: number): boolean {
  for (let i = 0; i < 64; i++) if (a[i] !== b[bo + i]) return false;
  return true;
}

/**
 * The subscribers one walk reached, in the order reached: a count over a reused array (setting an array's length
 * is a runtime call, and it ran twice per transaction). Slots past `n` keep owners of earlier walks until
 * overwritten; FilterIndex.remove drops them all, so a subscriber that went is not kept alive by them.
 */
class Touched<S> {
  items: Owner<S>[] = [];
  n = 0;

  /** Lets go of every owner held, the stale slots too. */
  clear(): void {
    this.items.length = 0;
    this.n = 0;
  }
}

/** Records the owner once per transaction. */
function touch<S>(touched: Touched<S>, o: Owner<S>, gen: number): void {
  if (o.touchedGen !== gen) {
    o.touchedGen = gen;
    touched.items[touched.n++] = o;
  }
}

/** fresh() for matchSplit and the parts beyond account lists: every scratch field. */
function freshSplit<S>(e: Entry<S>, gen: number): Entry<S> {
  if (e.gen !== gen) {
    e.gen = gen;
    e.includeHit = false;
    e.requiredHits = 0;
    e.excluded = false;
    e.staticIncludeHit = false;
    e.staticRequiredHits = 0;
    e.staticExcluded = false;
    e.wHits = 0;
    e.staticWHits = 0;
    e.sHits = 0;
    e.ixHit = false;
    e.sigHit = false;
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
    e.wHits = 0;
    e.staticWHits = 0;
    e.sHits = 0;
    e.ixHit = false;
    e.sigHit = false;
  }
  return e;
}
