import { randomInt } from 'node:crypto';
import { dataMatches, type CompiledInstructionFilter } from './compile-extra';

// Instruction filters of every stream, keyed so that a transaction costs what its instructions reach, not the
// number of filters: by program, then by data prefix. The program is not hashed here: a filter's program id is a
// key of the filter index's postings (its own chain, filter-index.ts), so the walk over a transaction's static
// keys that every match does anyway finds it, and its key id names the program's node here (an array slot).
// Under a program, for each prefix length some filter uses, the instruction's first bytes of that length are
// hashed and looked up. Only the filters whose program and whole prefix hash agree are checked (prefix, bytes at
// offsets, size).
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

/** The filters under one program. */
export interface ProgramNode<E> {
  /** Distinct prefix lengths in use, ascending; `byLen[j]` holds the first cell of each prefix hash of `lens[j]`. */
  lens: number[];
  byLen: Map<number, IxCell<E>>[];
  cells: number;
}

/** Bytes [o, o + n) of b, n ≤ 4, as a little-endian word (zero above). */
function word(b: Uint8Array, o: number, n: number): number {
  let w = 0;
  for (let i = n - 1; i >= 0; i--) w = (w << 8) | b[o + i]!;
  return w | 0;
}

/** FNV-1a over b[o, o+n), kept to 30 bits: a small integer (Smi) is a Map key without a heap number. */
function hashBytes(b: Uint8Array, o: number, n: number): number {
  let h = 0x811c9dc5 ^ SEED;
  for (let i = o; i < o + n; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  return h & 0x3fffffff;
}

// Seeded per process, as key32.ts's hash: prefixes are chosen by clients, so a fixed hash would let them pile
// filters into one bucket of a prefix others use.
const SEED = randomInt(0x7fffffff) | 1;

/** The hash of a prefix of ≤ 8 bytes from its words (each length has its own Map, so the length is left out). */
function hashWords(w0: number, w1: number): number {
  let h = Math.imul(w0 ^ SEED, 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 15) ^ w1, 0x85ebca6b);
  return (h ^ (h >>> 13)) & 0x3fffffff;
}

function prefixHash(b: Uint8Array, o: number, n: number): number {
  if (n > WORD_PREFIX) return hashBytes(b, o, n);
  return hashWords(word(b, o, Math.min(n, 4)), n > 4 ? word(b, o + 4, n - 4) : 0);
}

export class InstructionIndex<E> {
  /** Program nodes by the program's key id. */
  private readonly nodes: (ProgramNode<E> | undefined)[] = [];
  private count = 0;
  /** The cells of the last matchData calls, [0, hitCount): the caller reads them, then clears (clearHits). */
  readonly hits: (IxCell<E> | null)[] = [];
  hitCount = 0;

  get size(): number {
    return this.count;
  }

  /** The filters under the program whose key id is k, or undefined. */
  node(k: number): ProgramNode<E> | undefined {
    return this.nodes[k];
  }

  add(entry: E, filter: CompiledInstructionFilter, keyId: number): IxCell<E> {
    const p = filter.prefix;
    const len = p.length;
    const short = len <= WORD_PREFIX;
    const cell: IxCell<E> = {
      entry,
      filter,
      keyId,
      next: null,
      w0: short ? word(p, 0, Math.min(len, 4)) : 0,
      w1: short && len > 4 ? word(p, 4, len - 4) : 0,
      size: filter.size,
      slow: !short || filter.at.length > 0,
    };
    while (this.nodes.length <= keyId) this.nodes.push(undefined);
    let node = this.nodes[keyId];
    if (node === undefined) this.nodes[keyId] = node = { lens: [], byLen: [], cells: 0 };
    let j = node.lens.indexOf(len);
    if (j < 0) {
      j = 0;
      while (j < node.lens.length && node.lens[j]! < len) j++;
      node.lens.splice(j, 0, len);
      node.byLen.splice(j, 0, new Map());
    }
    const byHash = node.byLen[j]!;
    const h = prefixHash(p, 0, len);
    let c = byHash.get(h);
    if (c === undefined) byHash.set(h, cell);
    else {
      while (c.next !== null) c = c.next;
      c.next = cell;
    }
    node.cells++;
    this.count++;
    return cell;
  }

  remove(cell: IxCell<E>): void {
    const node = this.nodes[cell.keyId];
    if (node === undefined) return;
    const p = cell.filter.prefix;
    const j = node.lens.indexOf(p.length);
    if (j < 0) return;
    const byHash = node.byLen[j]!;
    const h = prefixHash(p, 0, p.length);
    const first = byHash.get(h);
    if (first === undefined) return;
    if (first === cell) {
      if (cell.next === null) byHash.delete(h);
      else byHash.set(h, cell.next);
    } else {
      let c = first;
      while (c.next !== null && c.next !== cell) c = c.next;
      if (c.next !== cell) return;
      c.next = cell.next;
    }
    cell.next = null;
    this.count--;
    node.cells--;
    if (byHash.size === 0) {
      node.lens.splice(j, 1);
      node.byLen.splice(j, 1);
    }
    if (node.cells === 0) this.nodes[cell.keyId] = undefined;
  }

  /**
   * Appends to `hits` the cells of `node` that instruction data d[off, off+len) satisfies, in the order they came
   * per prefix length (lengths ascending); returns the new count. Called per top-level instruction whose program
   * has a node, in instruction order.
   */
  matchData(node: ProgramNode<E>, d: Uint8Array, off: number, len: number): number {
    const lens = node.lens;
    let n = this.hitCount;
    for (let j = 0; j < lens.length; j++) {
      const l = lens[j]!;
      if (l > len) break;
      let c: IxCell<E> | null | undefined;
      let w0 = 0;
      let w1 = 0;
      if (l <= WORD_PREFIX) {
        w0 = word(d, off, l < 4 ? l : 4);
        w1 = l > 4 ? word(d, off + 4, l - 4) : 0;
        c = node.byLen[j]!.get(hashWords(w0, w1));
      } else c = node.byLen[j]!.get(hashBytes(d, off, l));
      for (; c !== undefined && c !== null; c = c.next) {
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
