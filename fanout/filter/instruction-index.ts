import { randomInt } from 'node:crypto';
import { dataMatches, type CompiledInstructionFilter } from './compile-extra';

// Instruction filters of every stream, keyed so that a transaction costs what its instructions reach, not the
// number of filters: by program, then by data prefix. The program is not hashed here: a filter's program id is a
// key of the filter index's postings (held by a count, filter-index.ts), so the walk over a transaction's static
// keys that every match does anyway finds it, and its key id names the program's node here (an array slot).
// Under a program, for each prefix length some filter uses, the instruction's first bytes of that length are
// hashed and looked up in one open-addressing table of (program, length, prefix hash) for the whole index — typed
// arrays, no Map per length. Only the filters whose program and whole prefix hash agree are checked (prefix,
// bytes at offsets, size).
//
// A match reaches a filter of a random stream, so what it reads of that filter is a cache miss each (at 1,000
// streams neither the table nor the cells stay in cache): a bucket's table slot holds, beside the bucket's key, its
// first cell's check — a prefix of up to 8 bytes (an Anchor discriminator is 8, a native program's 1 or 4) as two
// 32-bit words, the size, whether there are bytes at offsets — and the caller's tag for it, so a bucket of one
// filter is decided from the one slot the probe read, with no object. Further cells of a bucket (filters with the
// same program and prefix) are records in one typed array, chained by id.

/** Prefixes of at most this many bytes are compared as two words held in the table (and the cell record). */
const WORD_PREFIX = 8;

/** One instruction filter of one entry, as the index holds it for removal (the match reads the typed arrays). */
export interface IxCell {
  /** The caller's number for what this filter belongs to (what a hit gives back). */
  tag: number;
  filter: CompiledInstructionFilter;
  /** The program's key id in the filter index's postings (fixed while the filter is indexed). */
  keyId: number;
  /** Its id here (the cell records and the table name it). */
  id: number;
  /** Its bucket: prefix length and prefix hash. */
  len: number;
  ph: number;
}

/** The prefix lengths in use under one program. */
export interface ProgramNode {
  /** Distinct prefix lengths, ascending; `counts[j]` filters use `lens[j]`. */
  lens: number[];
  counts: number[];
  cells: number;
}

/** Bytes [o, o + n) of b, n ≤ 4, as a little-endian word (zero above). */
function word(b: Uint8Array, o: number, n: number): number {
  // A whole word without the loop: 4 and 8 bytes (native and Anchor discriminators) are the common prefixes.
  if (n === 4) return b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24);
  let w = 0;
  for (let i = n - 1; i >= 0; i--) w = (w << 8) | b[o + i]!;
  return w | 0;
}

// Seeded per process, as key32.ts's hash: prefixes are chosen by clients, so a fixed hash would let them pile
// filters into one bucket of a prefix others use.
const SEED = randomInt(0x7fffffff) | 1;

/** FNV-1a over b[o, o+n), 30 bits. */
function hashBytes(b: Uint8Array, o: number, n: number): number {
  let h = 0x811c9dc5 ^ SEED;
  for (let i = o; i < o + n; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  return h & 0x3fffffff;
}

/** The hash of a prefix of ≤ 8 bytes from its words. */
function hashWords(w0: number, w1: number): number {
  let h = Math.imul(w0 ^ SEED, 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 15) ^ w1, 0x85ebca6b);
  return (h ^ (h >>> 13)) & 0x3fffffff;
}

function prefixHash(b: Uint8Array, o: number, n: number): number {
  if (n > WORD_PREFIX) return hashBytes(b, o, n);
  return hashWords(word(b, o, Math.min(n, 4)), n > 4 ? word(b, o + 4, n - 4) : 0);
}

/** The table slot hash of (program key id, prefix length, prefix hash). */
function bucketHash(k: number, l: number, ph: number): number {
  let h = Math.imul(ph ^ Math.imul(k + 1, 0x9e3779b1) ^ (l << 23), 0x85ebca6b);
  h ^= h >>> 13;
  return h & 0x7fffffff;
}

/** Table slots (a power of two; a slot is SLOT words). */
const MIN_SLOTS = 64;

// A table slot: the bucket — head cell id + 1 (0: empty), prefix hash, program key id, prefix length — and a copy
// of the head cell's check (its record's first words, and whether more cells follow), so that the common case, a
// bucket of one filter, is decided from the one cache line the probe read.
const SLOT = 8;
const T_ID = 0;
const T_PH = 1;
const T_KEY = 2;
const T_LEN = 3;
const T_W0 = 4;
const T_W1 = 5;
const T_CHK = 6;
const T_TAG = 7;
// A cell record, by cell id: the check (prefix words, CHK), the caller's tag, the next cell of the bucket + 1.
const REC = 8;
const R_W0 = 0;
const R_W1 = 1;
const R_CHK = 2;
const R_TAG = 3;
const R_NEXT = 4;
// CHK: the low 16 bits are the exact data size + 1 (0: any size; sizes are at most MAX_TX_BYTES, compile-extra.ts);
// SLOW: bytes at offsets or a prefix longer than WORD_PREFIX, the whole check (dataMatches) is run; MORE (slots
// only): the head has a next cell.
const CHK_SIZE = 0xffff;
const CHK_SLOW = 1 << 16;
const CHK_MORE = 1 << 17;

function growInts(a: Int32Array<ArrayBuffer>, n: number): Int32Array<ArrayBuffer> {
  const b = new Int32Array(n);
  b.set(a);
  return b;
}

export class InstructionIndex {
  /** Program nodes by the program's key id. */
  private readonly nodes: (ProgramNode | undefined)[] = [];
  private count = 0;
  /** Cells by id (the filter, for a SLOW check and for removal). */
  private byId: (IxCell | undefined)[] = [];
  private rec: Int32Array<ArrayBuffer> = new Int32Array(64 * REC);
  private idFree: number[] = [];
  /** Buckets, SLOT words each, linear probing, backward-shift deletion (id-table.ts's rule, over slots). */
  private table: Int32Array<ArrayBuffer> = new Int32Array(MIN_SLOTS * SLOT);
  private heads = 0;
  /** The tags of the cells the last matchData calls hit, [0, hitCount): the caller reads them, then clears. */
  hits: Int32Array<ArrayBuffer> = new Int32Array(16);
  hitCount = 0;

  get size(): number {
    return this.count;
  }

  /** The prefix lengths under the program whose key id is k, or undefined. */
  node(k: number): ProgramNode | undefined {
    // Bounded first: a read past an array's end leaves V8's fast path, and most key ids have no node.
    return k < this.nodes.length ? this.nodes[k] : undefined;
  }

  /** The word offset of the slot holding bucket (k, l, ph), or -1. */
  private find(k: number, l: number, ph: number, bh: number): number {
    const t = this.table;
    const mask = (t.length >>> 3) - 1;
    for (let s = bh & mask; ; s = (s + 1) & mask) {
      const b = s * SLOT;
      if (t[b + T_ID] === 0) return -1;
      if (t[b + T_PH] === ph && t[b + T_KEY] === k && t[b + T_LEN] === l) return b;
    }
  }

  /** The slot's head is cell `id` (its record's check and tag copied in; MORE when it has a next). */
  private setHead(b: number, id: number): void {
    const t = this.table;
    const r = this.rec;
    const o = id * REC;
    t[b + T_ID] = id + 1;
    t[b + T_W0] = r[o + R_W0]!;
    t[b + T_W1] = r[o + R_W1]!;
    t[b + T_CHK] = r[o + R_CHK]! | (r[o + R_NEXT] !== 0 ? CHK_MORE : 0);
    t[b + T_TAG] = r[o + R_TAG]!;
  }

  private insertSlot(id: number, k: number, l: number, ph: number, bh: number): void {
    if (2 * (this.heads + 1) > this.table.length / SLOT) this.rehash((this.table.length / SLOT) * 2);
    const t = this.table;
    const mask = (t.length >>> 3) - 1;
    let s = bh & mask;
    while (t[s * SLOT + T_ID] !== 0) s = (s + 1) & mask;
    const b = s * SLOT;
    t[b + T_PH] = ph;
    t[b + T_KEY] = k;
    t[b + T_LEN] = l;
    this.setHead(b, id);
    this.heads++;
  }

  /** Empties slot b, shifting later members of its probe run back when their home allows it (no tombstones). */
  private deleteSlot(b: number): void {
    const t = this.table;
    const mask = (t.length >>> 3) - 1;
    let i = b / SLOT;
    for (let j = (i + 1) & mask; ; j = (j + 1) & mask) {
      const o = j * SLOT;
      if (t[o + T_ID] === 0) break;
      const home = bucketHash(t[o + T_KEY]!, t[o + T_LEN]!, t[o + T_PH]!) & mask;
      const between = i <= j ? i < home && home <= j : i < home || home <= j;
      if (between) continue;
      t.copyWithin(i * SLOT, o, o + SLOT);
      i = j;
    }
    t.fill(0, i * SLOT, i * SLOT + SLOT);
  }

  private rehash(slots: number): void {
    const old = this.table;
    const t = new Int32Array(slots * SLOT);
    const mask = slots - 1;
    for (let o = 0; o < old.length; o += SLOT) {
      if (old[o + T_ID] === 0) continue;
      let s = bucketHash(old[o + T_KEY]!, old[o + T_LEN]!, old[o + T_PH]!) & mask;
      while (t[s * SLOT + T_ID] !== 0) s = (s + 1) & mask;
      t.set(old.subarray(o, o + SLOT), s * SLOT);
    }
    this.table = t;
  }

  private newId(): number {
    const f = this.idFree.pop();
    if (f !== undefined) return f;
    const id = this.byId.length;
    this.byId.push(undefined);
    if ((id + 1) * REC > this.rec.length) this.rec = growInts(this.rec, this.rec.length * 2);
    return id;
  }

  /** Indexes `filter` (its program's key id: keyId); a hit gives back `tag`. */
  add(tag: number, filter: CompiledInstructionFilter, keyId: number): IxCell {
    const p = filter.prefix;
    const len = p.length;
    const id = this.newId();
    const short = len <= WORD_PREFIX;
    const ph = prefixHash(p, 0, len);
    const cell: IxCell = { tag, filter, keyId, id, len, ph };
    const slow = !short || filter.at.length > 0 || filter.size + 1 > CHK_SIZE;
    const r = this.rec;
    const o = id * REC;
    r[o + R_W0] = short ? word(p, 0, Math.min(len, 4)) : 0;
    r[o + R_W1] = short && len > 4 ? word(p, 4, len - 4) : 0;
    r[o + R_CHK] = slow ? CHK_SLOW : filter.size + 1;
    r[o + R_TAG] = tag;
    r[o + R_NEXT] = 0;
    this.byId[id] = cell;
    const bh = bucketHash(keyId, len, ph);
    const b = this.find(keyId, len, ph, bh);
    if (b < 0) this.insertSlot(id, keyId, len, ph, bh);
    else {
      // Appended: a bucket's cells hit in the order they came.
      let last = this.table[b + T_ID]! - 1;
      while (r[last * REC + R_NEXT] !== 0) last = r[last * REC + R_NEXT]! - 1;
      r[last * REC + R_NEXT] = id + 1;
      this.table[b + T_CHK]! |= CHK_MORE;
    }
    while (this.nodes.length <= keyId) this.nodes.push(undefined);
    let node = this.nodes[keyId];
    if (node === undefined) this.nodes[keyId] = node = { lens: [], counts: [], cells: 0 };
    let j = node.lens.indexOf(len);
    if (j < 0) {
      j = 0;
      while (j < node.lens.length && node.lens[j]! < len) j++;
      node.lens.splice(j, 0, len);
      node.counts.splice(j, 0, 0);
    }
    node.counts[j]!++;
    node.cells++;
    this.count++;
    return cell;
  }

  remove(cell: IxCell): void {
    const id = cell.id;
    if (this.byId[id] !== cell) return;
    const k = cell.keyId;
    const len = cell.len;
    const r = this.rec;
    const b = this.find(k, len, cell.ph, bucketHash(k, len, cell.ph));
    if (b >= 0) {
      const t = this.table;
      const head = t[b + T_ID]! - 1;
      const next = r[id * REC + R_NEXT]! - 1;
      if (head === id) {
        if (next >= 0) this.setHead(b, next);
        else {
          this.deleteSlot(b);
          this.heads--;
        }
      } else {
        let prev = head;
        while (prev >= 0 && r[prev * REC + R_NEXT] !== id + 1) prev = r[prev * REC + R_NEXT]! - 1;
        if (prev >= 0) {
          r[prev * REC + R_NEXT] = next + 1;
          if (prev === head && next < 0) t[b + T_CHK]! &= ~CHK_MORE;
        }
      }
    }
    r.fill(0, id * REC, id * REC + REC);
    this.byId[id] = undefined;
    this.idFree.push(id);
    this.count--;
    const node = this.nodes[k];
    if (node !== undefined) {
      const j = node.lens.indexOf(len);
      if (j >= 0 && --node.counts[j]! === 0) {
        node.lens.splice(j, 1);
        node.counts.splice(j, 1);
      }
      if (--node.cells === 0) this.nodes[k] = undefined;
    }
    if (this.count === 0) {
      // Empty: give the arrays back (ids restart).
      this.byId = [];
      this.idFree = [];
      this.rec = new Int32Array(64 * REC);
      this.table = new Int32Array(MIN_SLOTS * SLOT);
      this.heads = 0;
    }
  }

  /**
   * Appends to `hits` the tags of the cells under program key id k (its `node`) that instruction data
   * d[off, off+len) satisfies, in the order they came per prefix length (lengths ascending); returns the new count.
   * Called per top-level instruction whose program has a node, in instruction order.
   */
  matchData(k: number, node: ProgramNode, d: Uint8Array, off: number, len: number): number {
    const lens = node.lens;
    let n = this.hitCount;
    for (let j = 0; j < lens.length; j++) {
      const l = lens[j]!;
      if (l > len) break;
      let w0 = 0;
      let w1 = 0;
      let ph: number;
      if (l <= WORD_PREFIX) {
        w0 = word(d, off, l < 4 ? l : 4);
        w1 = l > 4 ? word(d, off + 4, l - 4) : 0;
        ph = hashWords(w0, w1);
      } else ph = hashBytes(d, off, l);
      const b = this.find(k, l, ph, bucketHash(k, l, ph));
      if (b < 0) continue;
      const t = this.table;
      const chk = t[b + T_CHK]!;
      if (this.passes(t[b + T_W0]!, t[b + T_W1]!, chk, t[b + T_ID]! - 1, w0, w1, d, off, len)) n = this.hit(n, t[b + T_TAG]!);
      if ((chk & CHK_MORE) === 0) continue;
      const r = this.rec;
      for (let id = r[(t[b + T_ID]! - 1) * REC + R_NEXT]! - 1; id >= 0; id = r[id * REC + R_NEXT]! - 1) {
        const o = id * REC;
        if (this.passes(r[o + R_W0]!, r[o + R_W1]!, r[o + R_CHK]!, id, w0, w1, d, off, len)) n = this.hit(n, r[o + R_TAG]!);
      }
    }
    return (this.hitCount = n);
  }

  /** Cell `id` (its check words cw0, cw1, chk) against the data, whose first words are w0, w1 (for its length). */
  private passes(cw0: number, cw1: number, chk: number, id: number, w0: number, w1: number, d: Uint8Array, off: number, len: number): boolean {
    if ((chk & CHK_SLOW) !== 0) return dataMatches(this.byId[id]!.filter, d, off, len);
    const size = chk & CHK_SIZE;
    return cw0 === w0 && cw1 === w1 && (size === 0 || size === len + 1);
  }

  private hit(n: number, tag: number): number {
    if (n >= this.hits.length) this.hits = growInts(this.hits, this.hits.length * 2);
    this.hits[n] = tag;
    return n + 1;
  }

  /** Ends the reading of `hits` (the next matchData calls append from 0). */
  clearHits(): void {
    this.hitCount = 0;
  }
}
