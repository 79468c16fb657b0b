import { randomInt } from 'node:crypto';
import { dataMatches, type CompiledInstructionFilter } from './compile-extra';
import { removeId } from './id-table';

// Instruction filters of every stream, keyed so that a transaction costs what its instructions reach, not the
// number of filters: by program, then by data prefix. The program is not hashed here: a filter's program id is a
// key of the filter index's postings (its own chain, filter-index.ts), so the walk over a transaction's static
// keys that every match does anyway finds it, and its key id names the program's node here (an array slot).
// Under a program, for each prefix length some filter uses, the instruction's first bytes of that length are
// hashed and looked up in one open-addressing table of (program, length, prefix hash) for the whole index — typed
// arrays, no Map per length. Only the filters whose program and whole prefix hash agree are checked (prefix,
// bytes at offsets, size).
//
// A match reaches a filter of a random stream, so what it reads of that filter is a cache miss each (at 1,000
// streams the cells do not stay in cache): a cell holds what the check needs in its own fields — a prefix of up to
// 8 bytes (an Anchor discriminator is 8, a native program's 1 or 4) as two 32-bit words, the size, whether there
// are bytes at offsets — and the cells of one prefix are chained through the cell, so a hit reads the bucket and
// the cell, not a list, the compiled filter and its byte arrays.

/** Prefixes of at most this many bytes are compared as two words held in the cell. */
const WORD_PREFIX = 8;

/** One instruction filter of one entry (what a hit names). */
export interface IxCell<E> {
  entry: E;
  filter: CompiledInstructionFilter;
  /** The program's key id in the filter index's postings (fixed while the filter is indexed). */
  keyId: number;
  /** Its id here (table slots and the per-id arrays name it). */
  id: number;
  /** The next cell of the same program, prefix length and prefix hash (in the order they came), or null. */
  next: IxCell<E> | null;
  /** The prefix's first 4 bytes and next 4 (little-endian, zero past its end), when it is ≤ 8 bytes. */
  w0: number;
  w1: number;
  /** -1: any size. */
  size: number;
  /** Bytes at offsets, or a prefix longer than 8 bytes: the whole check (dataMatches) is run. */
  slow: boolean;
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

const MIN_TABLE = 64;

export class InstructionIndex<E> {
  /** Program nodes by the program's key id. */
  private readonly nodes: (ProgramNode | undefined)[] = [];
  private count = 0;
  /** Cells by id; per id the bucket it heads or sits in: program key id, prefix length, prefix hash, slot hash. */
  private byId: (IxCell<E> | undefined)[] = [];
  private idKey: Int32Array<ArrayBuffer> = new Int32Array(64);
  private idLen: Int32Array<ArrayBuffer> = new Int32Array(64);
  private idPh: Int32Array<ArrayBuffer> = new Int32Array(64);
  private idHash: Int32Array<ArrayBuffer> = new Int32Array(64);
  private idFree: number[] = [];
  /** Bucket heads: id + 1 (0: empty), linear probing, backward-shift deletion (id-table.ts). */
  private table = new Int32Array(MIN_TABLE);
  private heads = 0;
  /** The cells of the last matchData calls, [0, hitCount): the caller reads them, then clears (clearHits). */
  readonly hits: (IxCell<E> | null)[] = [];
  hitCount = 0;

  get size(): number {
    return this.count;
  }

  /** The prefix lengths under the program whose key id is k, or undefined. */
  node(k: number): ProgramNode | undefined {
    return this.nodes[k];
  }

  /** The id heading bucket (k, l, ph), or -1. */
  private find(k: number, l: number, ph: number, bh: number): number {
    const t = this.table;
    const mask = t.length - 1;
    for (let s = bh & mask; ; s = (s + 1) & mask) {
      const v = t[s]!;
      if (v === 0) return -1;
      const id = v - 1;
      if (this.idPh[id] === ph && this.idKey[id] === k && this.idLen[id] === l) return id;
    }
  }

  private insertHead(id: number, bh: number): void {
    if (2 * (this.heads + 1) > this.table.length) this.rehash(this.table.length * 2);
    const t = this.table;
    const mask = t.length - 1;
    let s = bh & mask;
    while (t[s] !== 0) s = (s + 1) & mask;
    t[s] = id + 1;
    this.heads++;
  }

  private rehash(size: number): void {
    const old = this.table;
    const t = new Int32Array(size);
    const mask = size - 1;
    for (let i = 0; i < old.length; i++) {
      const v = old[i]!;
      if (v === 0) continue;
      let s = this.idHash[v - 1]! & mask;
      while (t[s] !== 0) s = (s + 1) & mask;
      t[s] = v;
    }
    this.table = t;
  }

  private newId(): number {
    const f = this.idFree.pop();
    if (f !== undefined) return f;
    const id = this.byId.length;
    this.byId.push(undefined);
    if (id >= this.idKey.length) {
      const n = this.idKey.length * 2;
      const g = (a: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer> => {
        const b = new Int32Array(n);
        b.set(a);
        return b;
      };
      this.idKey = g(this.idKey);
      this.idLen = g(this.idLen);
      this.idPh = g(this.idPh);
      this.idHash = g(this.idHash);
    }
    return id;
  }

  add(entry: E, filter: CompiledInstructionFilter, keyId: number): IxCell<E> {
    const p = filter.prefix;
    const len = p.length;
    const short = len <= WORD_PREFIX;
    const id = this.newId();
    const cell: IxCell<E> = {
      entry,
      filter,
      keyId,
      id,
      next: null,
      w0: short ? word(p, 0, Math.min(len, 4)) : 0,
      w1: short && len > 4 ? word(p, 4, len - 4) : 0,
      size: filter.size,
      slow: !short || filter.at.length > 0,
    };
    const ph = prefixHash(p, 0, len);
    const bh = bucketHash(keyId, len, ph);
    this.byId[id] = cell;
    this.idKey[id] = keyId;
    this.idLen[id] = len;
    this.idPh[id] = ph;
    this.idHash[id] = bh;
    const h = this.find(keyId, len, ph, bh);
    if (h < 0) this.insertHead(id, bh);
    else {
      let c = this.byId[h]!;
      while (c.next !== null) c = c.next;
      c.next = cell;
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

  remove(cell: IxCell<E>): void {
    const id = cell.id;
    if (this.byId[id] !== cell) return;
    const k = cell.keyId;
    const len = this.idLen[id]!;
    const bh = this.idHash[id]!;
    const h = this.find(k, len, this.idPh[id]!, bh);
    if (h === id) {
      const t = this.table;
      const mask = t.length - 1;
      if (cell.next !== null) {
        // The next cell heads the bucket, in the same slot (same bucket, same slot hash).
        let s = bh & mask;
        while (t[s] !== id + 1) s = (s + 1) & mask;
        t[s] = cell.next.id + 1;
      } else {
        removeId(t, this.idHash, id);
        this.heads--;
      }
    } else if (h >= 0) {
      let c = this.byId[h]!;
      while (c.next !== null && c.next !== cell) c = c.next;
      if (c.next === cell) c.next = cell.next;
    }
    cell.next = null;
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
      this.table = new Int32Array(MIN_TABLE);
      this.heads = 0;
    }
  }

  /**
   * Appends to `hits` the cells under program key id k (its `node`) that instruction data d[off, off+len)
   * satisfies, in the order they came per prefix length (lengths ascending); returns the new count. Called per
   * top-level instruction whose program has a node, in instruction order.
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
      const h = this.find(k, l, ph, bucketHash(k, l, ph));
      if (h < 0) continue;
      for (let c: IxCell<E> | null = this.byId[h]!; c !== null; c = c.next) {
        if (c.slow ? !dataMatches(c.filter, d, off, len) : c.w0 !== w0 || c.w1 !== w1 || (c.size >= 0 && c.size !== len)) continue;
        const hits = this.hits;
        if (n < hits.length) hits[n] = c;
        else hits.push(c);
        n++;
      }
    }
    return (this.hitCount = n);
  }

  /** Drops the references `hits` holds (a removed filter must not stay reachable from here). */
  clearHits(): void {
    const hits = this.hits;
    for (let i = 0; i < this.hitCount; i++) hits[i] = null;
    this.hitCount = 0;
  }
}
