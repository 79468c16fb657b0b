import type { FilterIndex, Match, SplitMatch } from '../filter/filter-index';
import { keysWithLoaded, LoadedBlock, type LoadedAddresses, type TableLookup } from '../filter/loaded-addresses';

// v2 matching with `TransactionFilter.match_loaded_addresses`: a filter with the flag sees a v0 transaction's
// static keys and the addresses its lookup tables load; a filter without it sees the static keys only (v1's
// semantics), and both kinds may sit in one stream's set. The index is walked once over static + loaded keys
// (FilterIndex.matchSplit), which answers both questions for every filter touched — over every key and over the
// static keys alone — and each stream's mask takes the flagged filters' bits from the first answer and the
// others' from the second. This covers include, required and exclude alike: a flagged filter whose excluded
// account is loaded through a table does not match.

/** What a stream's filter set needs to say here: which of its filters (bits of a match mask) match loaded addresses. */
export interface LoadedAware {
  loadedMask: number;
}

/** Static + loaded keys of the record being matched (reused: valid during one call). 256 keys is a v0
 *  transaction's most; it grows for a malformed record only. */
let scratch = Buffer.alloc(256 * 32);

/**
 * The matches of a record whose lookups resolved to `loaded`: static-key matches for unflagged filters, static +
 * loaded for flagged ones. Without loaded addresses, the plain match on the static keys.
 */
export function matchWithLoaded<S extends LoadedAware>(index: FilterIndex<S>, accountKeys: Buffer, loaded: LoadedAddresses): Match<S>[] {
  const b = loaded.block;
  const n = b !== undefined ? b.length : (loaded.writable.length + loaded.readonly.length) * 32;
  if (n === 0) return index.match(accountKeys);
  let keys: Uint8Array;
  if (b !== undefined) {
    if (scratch.length < accountKeys.length + n) scratch = Buffer.alloc(2 * (accountKeys.length + n));
    scratch.set(accountKeys, 0);
    scratch.set(b, accountKeys.length);
    keys = scratch;
  } else keys = keysWithLoaded(accountKeys, loaded);
  const writable = b === undefined ? loaded.writable.length : loaded instanceof LoadedBlock ? loaded.writableCount : loaded.writable.length;
  return mergeSplit(index.matchSplit(keys, accountKeys.length, accountKeys.length + n, writable));
}

/** Each stream's mask from a split match: its flagged filters' bits over every key, the others' over the static
 *  keys alone; streams left without a bit are dropped (in place, order kept). */
export function mergeSplit<S extends LoadedAware>(out: SplitMatch<S>[]): Match<S>[] {
  let w = 0;
  for (const m of out) {
    const flagged = m.sub.loadedMask;
    const mask = (m.staticMask & ~flagged) | (m.mask & flagged);
    if (mask === 0) continue;
    m.mask = mask;
    out[w++] = m;
  }
  out.length = w;
  return out;
}

/** Every table unresolved: what a record gets when it cannot wait for its tables (see V2Hub's hold cap). */
export function allUnresolved(lookups: readonly TableLookup[]): LoadedAddresses {
  return { writable: [], readonly: [], unresolvedTables: lookups.map((l) => l.table) };
}
