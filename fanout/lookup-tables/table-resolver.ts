import type { LookupTableState } from '../../proto/lookup-table/account';
import { indexesInRange, usableCount } from '../../proto/lookup-table/rules';
import { LoadedBlock, type LoadedAddresses, type LoadedAddressResolver, type TableLookup } from '../filter/loaded-addresses';
import { lookupMetrics, type UnresolvedReason } from './lookup-metrics';
import type { TableCache, TableEntry, TableWaiter } from './table-cache';

// Resolution over the table cache, by the chain's rules (proto/lookup-table/rules.ts): a lookup resolves when its
// table is held, usable in the transaction's slot (not deactivated past its cool-down), and every index is below
// the usable length; then its addresses are loaded, writable indexes of every lookup first, then readonly ones.
// A lookup that does not resolve loads nothing (the chain fails the whole lookup, not single indexes) and its
// table is reported unresolved.
//
// The bound: when every table named is known (held, or known absent / failed recently) `done` runs at once;
// otherwise the unknown ones are fetched and `done` runs when they are answered or after waitMs, whichever is
// first, with what is known then. At most maxWaiting transactions wait at once; beyond, they resolve at once.

export interface ResolverOptions {
  waitMs: number;
  maxWaiting: number;
}

const NONE: LoadedAddresses = Object.freeze({ writable: [], readonly: [], unresolvedTables: [] }) as LoadedAddresses;

/** Key of a table in the cache: its 32 bytes as a latin1 string (a Map key; compares by content). */
export function tableId(b: Buffer, off: number): string {
  return b.toString('latin1', off, off + 32);
}

class Waiter implements TableWaiter {
  pending = 0;
  timer: NodeJS.Timeout | undefined;
  private done = false;
  constructor(
    private readonly r: TableResolver,
    readonly lookups: readonly TableLookup[],
    readonly slot: bigint,
    private readonly cb: (loaded: LoadedAddresses) => void,
  ) {}

  tableSettled(): void {
    if (--this.pending === 0) this.finish();
  }

  finish(): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.timer);
    this.r.waiting--;
    this.cb(this.r.build(this.lookups, this.slot));
  }
}

export class TableResolver implements LoadedAddressResolver {
  waiting = 0;

  constructor(
    readonly cache: TableCache,
    private readonly o: ResolverOptions,
  ) {}

  resolve(lookups: readonly TableLookup[], slot: bigint, done: (loaded: LoadedAddresses) => void): void {
    if (lookups.length === 0) return done(NONE);
    // Every table known now (the usual case): found by its bytes (no string, no fetch) and answered at once.
    const held = this.held;
    for (const l of lookups) {
      const e = this.cache.readyAt(l.table, 0);
      if (e === undefined) break;
      held.push(e);
    }
    if (held.length === lookups.length) {
      lookupMetrics.hits.inc(held.length);
      const r = this.buildFrom(lookups, held, slot);
      held.length = 0;
      return done(r);
    }
    held.length = 0;
    let w: Waiter | undefined;
    for (const l of lookups) {
      const e = this.cache.want(tableId(asBuffer(l.table), 0), l.table);
      if (e === undefined || e.state !== 'loading') {
        lookupMetrics.hits.inc();
        continue;
      }
      lookupMetrics.misses.inc();
      if (this.waiting >= this.o.maxWaiting) continue; // resolves now, the table unresolved
      w ??= new Waiter(this, lookups, slot, done);
      w.pending++;
      (e.waiters ??= []).push(w);
    }
    if (w === undefined) return done(this.build(lookups, slot));
    this.waiting++;
    lookupMetrics.waitedTransactions.inc();
    w.timer = setTimeout(() => w.finish(), this.o.waitMs);
  }

  /** What the lookups load with the tables as held now (no fetch, no wait). */
  build(lookups: readonly TableLookup[], slot: bigint): LoadedAddresses {
    const entries: Array<TableEntry | undefined> = [];
    for (const l of lookups) entries.push(this.cache.peek(tableId(asBuffer(l.table), 0)));
    return this.buildFrom(lookups, entries, slot);
  }

  /**
   * What the lookups load with the tables as held now, without counting them again: for a record already matched
   * through MatchKeys.matchSplitRecord (which counted hits and unresolved lookups), built only when a stream that
   * matched receives it (the v2 hub's `loaded`).
   */
  loadedNow(lookups: readonly TableLookup[], slot: bigint): LoadedAddresses {
    const entries: Array<TableEntry | undefined> = [];
    for (const l of lookups) entries.push(this.cache.readyAt(l.table, 0));
    return this.buildFrom(lookups, entries, slot, false);
  }

  /** Per call: the entry of each lookup (resolve's fast path), and which of them resolved. */
  private readonly held: TableEntry[] = [];
  private readonly usableScratch: Array<TableEntry | null> = [];

  /**
   * The loaded addresses as one block (LoadedBlock): writable indexes of every resolved lookup, then readonly
   * ones, copied as 32-bit words from the table's addresses (no Buffer per key).
   */
  private buildFrom(lookups: readonly TableLookup[], entries: ReadonlyArray<TableEntry | undefined>, slot: bigint, count = true): LoadedAddresses {
    const ok = this.usableScratch;
    let unresolvedTables: Buffer[] | undefined;
    let writable = 0;
    let total = 0;
    for (let i = 0; i < lookups.length; i++) {
      const l = lookups[i]!;
      const e = entries[i];
      const t = usable(e, l.writableIndexes, l.readonlyIndexes, slot);
      if (typeof t === 'string') {
        if (count) {
          lookupMetrics.unresolved(t).inc();
          if (t === 'index' && e !== undefined) this.cache.refresh(e);
        }
        (unresolvedTables ??= []).push(l.table);
        ok.push(null);
      } else {
        ok.push(e!);
        writable += l.writableIndexes.length;
        total += l.writableIndexes.length + l.readonlyIndexes.length;
      }
    }
    const block = Buffer.allocUnsafe(total * 32);
    // The pool hands out 8-byte-aligned slices; a word view needs 4.
    const words = block.byteOffset % 4 === 0 ? new Int32Array(block.buffer, block.byteOffset, total * 8) : null;
    let o = 0;
    for (let pass = 0; pass < 2; pass++) {
      for (let i = 0; i < lookups.length; i++) {
        const e = ok[i];
        if (e === null || e === undefined) continue;
        const idx = pass === 0 ? lookups[i]!.writableIndexes : lookups[i]!.readonlyIndexes;
        if (words !== null) o = copyIndexes(e.words, idx, 0, idx.length, words, o);
        else for (let j = 0; j < idx.length; j++) o += e.view!.addresses.copy(block, o, idx[j]! * 32, idx[j]! * 32 + 32);
      }
    }
    ok.length = 0;
    if (unresolvedTables !== undefined && count) lookupMetrics.partialTransactions.inc();
    return new LoadedBlock(block, writable, unresolvedTables ?? []);
  }
}

/** Copies the addresses at the indexes in idx[off, off + len) to out at byte o (a multiple of 32), eight words
 *  each: per 32 bytes, a native Buffer.copy call or a byte loop costs several times more. */
export function copyIndexes(words: Int32Array, idx: Uint8Array, off: number, len: number, out: Int32Array, o: number): number {
  let d = o >>> 2;
  for (let i = off; i < off + len; i++) {
    const s = idx[i]! << 3;
    for (let j = 0; j < 8; j++) out[d + j] = words[s + j]!;
    d += 8;
  }
  return d << 2;
}

function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.length);
}

/** The table when the lookup resolves against it in `slot`, else why not. */
export function usable(e: TableEntry | undefined, writable: Uint8Array, readonly: Uint8Array, slot: bigint): LookupTableState | UnresolvedReason {
  return usableAt(e, slot, writable, 0, writable.length, readonly, 0, readonly.length);
}

/** usable() over index bytes given by offset and length (no views made on the hot path). */
export function usableAt(e: TableEntry | undefined, slot: bigint, wb: Uint8Array, wo: number, wl: number, rb: Uint8Array, ro: number, rl: number): LookupTableState | UnresolvedReason {
  if (e === undefined || e.state === 'loading' || e.state === 'failed') return 'unknown';
  if (e.state === 'absent' || e.view === null) return 'absent';
  const n = usableCount(e.view, slot);
  if (n < 0) return 'deactivated';
  if (!indexesInRange(wb, n, wo, wl) || !indexesInRange(rb, n, ro, rl)) return 'index';
  return e.view;
}
