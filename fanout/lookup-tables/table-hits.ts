import { PUBKEY_LEN } from '../filter';
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
// Memory: one record per table used since the last reset (RECORD_BYTES) plus, for a table with hits, 4 bytes per
// address (≤ 1 KiB: a table holds at most 256). Past maxBytes every record is dropped at once and rebuilt as tables
// are used again (counted in `resets`); the epoch moving drops them too.

/** What one record costs besides its hit list: the Map entry, the object and its fields (a rough, stated figure). */
const RECORD_BYTES = 96;

/** The default bound on one TableHits (per filter index): 16 MiB, ≥ 16,000 tables with hits. */
export const DEFAULT_MAX_HIT_BYTES = 16 * 1024 * 1024;

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
  ) {}

  /** Bytes held (records and hit lists), ≤ maxBytes. */
  get bytes(): number {
    return this.bytesN;
  }

  get tables(): number {
    return this.records.size;
  }

  /**
   * The table's hit list for the index's current epoch: key id per address index, -1 where no filter lists the
   * address; null when none does. Made now if the table or the filters changed since it was made.
   */
  idsFor(e: TableEntry): Int32Array | null {
    const epoch = this.index.epoch;
    if (epoch !== this.epoch) {
      this.records.clear();
      this.bytesN = 0;
      this.epoch = epoch;
    }
    const r = this.records.get(e);
    if (r !== undefined && r.words === e.words) return r.ids;
    return this.build(e, r);
  }

  private build(e: TableEntry, old: HitRecord | undefined): Int32Array | null {
    const words = e.words;
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
    if (ids !== null) this.counts.withHits++;
    const size = RECORD_BYTES + (ids === null ? 0 : ids.length * 4);
    if (old !== undefined) {
      this.bytesN -= RECORD_BYTES + (old.ids === null ? 0 : old.ids.length * 4);
      this.records.delete(e);
    }
    if (this.bytesN + size > this.maxBytes) {
      this.records.clear();
      this.bytesN = 0;
      this.counts.resets++;
    }
    this.records.set(e, { words, ids });
    this.bytesN += size;
    return ids;
  }
}
