import { PUBKEY_LEN } from '../filter/compile';
import type { TableEntry } from './table-cache';

// Matching against tables, not per transaction. Tables change rarely and filters change rarely, so for each table
// (as its addresses are now) and each filter-index epoch, which of its addresses some filter lists is worked out
// once, on the table's first use after either changed: a table's hits, index → the index's key id. Most tables
// have none (null). A transaction's lookups then cost, per index, one read of the hit list; the addresses no filter
// lists are never hashed or looked up, and nothing is copied.
//
// Validity: a hit list is tied to the table's address words (TableCache.setView makes new words on every change:
// a fetch answer, a notification, an extension, a close) and to the index's epoch (FilterIndex.epoch moves on
// every filter added, removed or replaced, and key ids are reused only across epochs). Which indexes a
// transaction may use (usable length, deactivation) is not part of it: the matching path checks that per
// transaction by the chain's rules, as before.
//
// Cost when filters churn: building a list looks up every address of the table (up to 256), so a list is built
// only once the table has been used BUILD_AFTER times in the epoch; before that a transaction looks up the indexes
// it uses directly (keyIdAt: what the per-key path did, without the copy). With epochs that change faster than
// tables are reused, the cost per transaction stays that of the per-key path, plus at most one build per
// BUILD_AFTER uses (ski rental: never more than about twice what looking up every use directly costs).
//
// Memory: one record per table used since the last reset (RECORD_BYTES) plus, for a table with hits, 4 bytes per
// address (≤ 1 KiB: a table holds at most 256). Past maxBytes every record is dropped at once and rebuilt as tables
// are used again (counted in `resets`); the epoch moving drops them too.

/** What one record costs besides its hit list: the Map entry, the object and its fields (a rough, stated figure). */
const RECORD_BYTES = 96;

/** The default bound on one TableHits (per filter index): 16 MiB, ≥ 16,000 tables with hits. */
export const DEFAULT_MAX_HIT_BYTES = 16 * 1024 * 1024;

/** Uses of a table in one epoch before its hit list is built: a use looks up ~12 indexes of the table directly,
 *  a build all of its (up to) 256 addresses, so 16 direct uses cost about one build. */
export const BUILD_AFTER = 16;

/** What a hit list is made from: FilterIndex's epoch and key ids. */
export interface KeyIds {
  readonly epoch: number;
  keyIdAt(b: Uint8Array, o: number): number;
}

interface HitRecord {
  /** The table's words the list was made from (identity: a new view makes new words). */
  words: Int32Array;
  /** Key id per address index (-1: no filter lists it); null when no address of the table is listed. */
  ids: Int32Array | null;
  /** Uses before the list is built; the list is valid once uses > buildAfter. */
  uses: number;
  /** The list alone is past maxBytes: this table is looked up directly for the rest of the epoch. */
  direct: boolean;
}

export class TableHits {
  private readonly records = new Map<TableEntry, HitRecord>();
  private epoch = -1;
  private bytesN = 0;
  /** Hit lists made, tables with hits among them, resets past maxBytes: counted for the bench and the tests. */
  readonly counts = { built: 0, withHits: 0, resets: 0 };

  constructor(
    private readonly index: KeyIds,
    private readonly maxBytes = DEFAULT_MAX_HIT_BYTES,
    private readonly buildAfter = BUILD_AFTER,
  ) {}

  /** The index's key id of the 32 bytes at b[o], or -1 (for a table whose list is not built: idsFor undefined). */
  keyIdAt(b: Uint8Array, o: number): number {
    return this.index.keyIdAt(b, o);
  }

  /** Bytes held (records and hit lists), ≤ maxBytes. */
  get bytes(): number {
    return this.bytesN;
  }

  get tables(): number {
    return this.records.size;
  }

  /**
   * The table's hit list for the index's current epoch: key id per address index, -1 where no filter lists the
   * address; null when none does; undefined when it is not built (yet): look the used indexes up with keyIdAt.
   */
  idsFor(e: TableEntry): Int32Array | null | undefined {
    const epoch = this.index.epoch;
    if (epoch !== this.epoch) {
      this.records.clear();
      this.bytesN = 0;
      this.epoch = epoch;
    }
    let r = this.records.get(e);
    if (r === undefined || r.words !== e.words) {
      if (r !== undefined) {
        this.records.delete(e);
        this.bytesN -= RECORD_BYTES + (r.ids === null ? 0 : r.ids.length * 4);
      }
      r = { words: e.words, ids: null, uses: 0, direct: false };
      this.add(e, r, RECORD_BYTES);
    }
    if (r.uses > this.buildAfter) return r.direct ? undefined : r.ids;
    if (++r.uses <= this.buildAfter) return undefined;
    return this.build(e, r);
  }

  private build(e: TableEntry, r: HitRecord): Int32Array | null | undefined {
    const words = r.words;
    const n = words.length >>> 3;
    const bytes = new Uint8Array(words.buffer, words.byteOffset, n * PUBKEY_LEN);
    let ids: Int32Array | null = null;
    for (let i = 0; i < n; i++) {
      const k = this.index.keyIdAt(bytes, i * PUBKEY_LEN);
      if (k < 0) continue;
      if (ids === null) ids = new Int32Array(n).fill(-1);
      ids[i] = k;
    }
    this.counts.built++;
    if (ids === null) return null;
    this.counts.withHits++;
    if (RECORD_BYTES + ids.length * 4 > this.maxBytes) {
      r.direct = true;
      return undefined;
    }
    r.ids = ids;
    // The list's bytes: past the bound, everything else goes first (this record is taken in again with them).
    if (this.bytesN + ids.length * 4 > this.maxBytes) {
      this.records.delete(e);
      this.bytesN -= RECORD_BYTES;
      this.add(e, r, RECORD_BYTES + ids.length * 4);
    } else this.bytesN += ids.length * 4;
    return ids;
  }

  private add(e: TableEntry, r: HitRecord, size: number): void {
    if (this.bytesN + size > this.maxBytes) {
      this.records.clear();
      this.bytesN = 0;
      this.counts.resets++;
    }
    this.records.set(e, r);
    this.bytesN += size;
  }
}
