import { dataMatches, type CompiledInstructionFilter } from './compile-extra';
import { equal32, hash32 } from './key32';
import type { TxFacts } from './tx-facts';

// Instruction filters of every stream, keyed so that a transaction costs what its instructions reach, not the
// number of filters: by program id (32 bytes, hashed once per top-level instruction), then by data prefix (for each
// prefix length some filter under that program uses, the instruction's first bytes of that length are hashed and
// looked up). Only the filters whose program and whole prefix hash agree are checked byte for byte (prefix, bytes
// at offsets, size). A program's filters without a prefix are checked each (they match most of its instructions).

/** One instruction filter of one entry (what a hit names). */
export interface IxCell<E> {
  entry: E;
  filter: CompiledInstructionFilter;
}

interface ProgramNode<E> {
  program: Uint8Array;
  /** Distinct prefix lengths in use, ascending; each with its cells by prefix hash. */
  lens: number[];
  byLen: Map<number, Map<number, IxCell<E>[]>>;
  cells: number;
}

/** FNV-1a over b[o, o+n), kept to 30 bits: a small integer (Smi) is a Map key without a heap number. */
function hashBytes(b: Uint8Array, o: number, n: number): number {
  let h = 0x811c9dc5;
  for (let i = o; i < o + n; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  return h & 0x3fffffff;
}

/** A program's hash32 as a Map key (30 bits, a Smi). */
const programKey = (h: number): number => h & 0x3fffffff;

/** 16 bits from both ends of a program key (filter-index.ts digest16's choice of bytes). */
function digest16(b: Uint8Array, o: number): number {
  return (b[o]! ^ b[o + 2]! ^ b[o + 29]!) | ((b[o + 1]! ^ b[o + 3]! ^ b[o + 30]!) << 8);
}

export class InstructionIndex<E> {
  private readonly programs = new Map<number, ProgramNode<E>[]>();
  /** Programs per 16-bit digest: most instructions call a program no filter names (Compute Budget, System), and a
   *  zero here answers that without hashing 32 bytes and probing the Map. */
  private readonly digests = new Uint32Array(1 << 16);
  private count = 0;
  /** Reused per match: the cells that matched (valid until the next call). */
  readonly hits: IxCell<E>[] = [];

  get size(): number {
    return this.count;
  }

  add(entry: E, filter: CompiledInstructionFilter): IxCell<E> {
    const cell: IxCell<E> = { entry, filter };
    let bucket = this.programs.get(programKey(filter.programHash));
    if (bucket === undefined) this.programs.set(programKey(filter.programHash), (bucket = []));
    let node = bucket.find((n) => equal32(n.program, 0, filter.program, 0));
    if (node === undefined) {
      bucket.push((node = { program: filter.program, lens: [], byLen: new Map(), cells: 0 }));
      this.digests[digest16(filter.program, 0)]!++;
    }
    const len = filter.prefix.length;
    let byHash = node.byLen.get(len);
    if (byHash === undefined) {
      node.byLen.set(len, (byHash = new Map()));
      node.lens.push(len);
      node.lens.sort((a, b) => a - b);
    }
    const h = hashBytes(filter.prefix, 0, len);
    const list = byHash.get(h);
    if (list === undefined) byHash.set(h, [cell]);
    else list.push(cell);
    node.cells++;
    this.count++;
    return cell;
  }

  remove(cell: IxCell<E>): void {
    const f = cell.filter;
    const bucket = this.programs.get(programKey(f.programHash));
    const node = bucket?.find((n) => equal32(n.program, 0, f.program, 0));
    if (bucket === undefined || node === undefined) return;
    const len = f.prefix.length;
    const byHash = node.byLen.get(len)!;
    const h = hashBytes(f.prefix, 0, len);
    const list = byHash.get(h);
    const at = list === undefined ? -1 : list.indexOf(cell);
    if (at < 0) return;
    list!.splice(at, 1);
    this.count--;
    node.cells--;
    if (list!.length === 0) byHash.delete(h);
    if (byHash.size === 0) {
      node.byLen.delete(len);
      node.lens.splice(node.lens.indexOf(len), 1);
    }
    if (node.cells === 0) {
      this.digests[digest16(node.program, 0)]!--;
      bucket.splice(bucket.indexOf(node), 1);
      if (bucket.length === 0) this.programs.delete(programKey(f.programHash));
    }
  }

  /**
   * Fills `hits` with the cells some top-level instruction of the transaction satisfies (a cell may appear once
   * per instruction it matches); returns how many.
   */
  match(t: TxFacts): number {
    const hits = this.hits;
    hits.length = 0;
    if (this.count === 0) return 0;
    const keys = t.keys;
    const d = t.message;
    for (let i = 0; i < t.ixCount; i++) {
      const po = t.programOff(i);
      if (po < 0) continue; // a program index past the static keys: the chain refuses it (README)
      if (this.digests[digest16(keys, po)] === 0) continue;
      const bucket = this.programs.get(programKey(hash32(keys, po)));
      if (bucket === undefined) continue;
      let node: ProgramNode<E> | undefined;
      for (const n of bucket) if (equal32(n.program, 0, keys, po)) node = n;
      if (node === undefined) continue;
      const off = t.ixDataOff[i]!;
      const len = t.ixDataLen[i]!;
      for (const l of node.lens) {
        if (l > len) break;
        const list = node.byLen.get(l)!.get(hashBytes(d, off, l));
        if (list === undefined) continue;
        for (const c of list) if (dataMatches(c.filter, d, off, len)) hits.push(c);
      }
    }
    return hits.length;
  }
}
