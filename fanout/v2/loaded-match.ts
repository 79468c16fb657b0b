import type { FilterIndex, Match } from '../filter-index';
import { keysWithLoaded, type LoadedAddresses, type TableLookup } from '../loaded-addresses';

// v2 matching with `TransactionFilter.match_loaded_addresses`: a filter with the flag sees a v0 transaction's
// static keys and the addresses its lookup tables load; a filter without it sees the static keys only (v1's
// semantics), and both kinds may sit in one stream's set. The index is walked twice for such a record — once over
// the static keys, once over static + loaded — and each stream's mask takes the flagged filters' bits from the
// second walk and the others' from the first. The second walk covers include, required and exclude alike: a
// flagged filter whose excluded account is loaded through a table does not match.

/** What a stream's filter set needs to say here: which of its filters (bits of a match mask) match loaded addresses. */
export interface LoadedAware {
  loadedMask: number;
}

/**
 * The matches of a record whose lookups resolved to `loaded`: static-key matches for unflagged filters, static +
 * loaded for flagged ones. `staticMatches` is index.match(accountKeys), already computed by the caller.
 */
export function matchWithLoaded<S extends LoadedAware>(index: FilterIndex<S>, staticMatches: Match<S>[], accountKeys: Buffer, loaded: LoadedAddresses): Match<S>[] {
  if (loaded.writable.length + loaded.readonly.length === 0) return staticMatches;
  const wide = index.match(keysWithLoaded(accountKeys, loaded));
  const byStatic = new Map<S, number>();
  for (const m of staticMatches) byStatic.set(m.sub, m.mask);
  const out: Match<S>[] = [];
  for (const m of wide) {
    const flagged = m.sub.loadedMask;
    const mask = ((byStatic.get(m.sub) ?? 0) & ~flagged) | (m.mask & flagged);
    byStatic.delete(m.sub);
    if (mask !== 0) out.push({ sub: m.sub, mask, set: m.set });
  }
  // Matched on the static keys and not on the wider set: only an exclusion hit by a loaded address does that,
  // which concerns the flagged filters only.
  for (const m of staticMatches) {
    if (!byStatic.has(m.sub)) continue;
    const mask = m.mask & ~m.sub.loadedMask;
    if (mask !== 0) out.push({ sub: m.sub, mask, set: m.set });
  }
  return out;
}

/** Every table unresolved: what a record gets when it cannot wait for its tables (see V2Hub's hold cap). */
export function allUnresolved(lookups: readonly TableLookup[]): LoadedAddresses {
  return { writable: [], readonly: [], unresolvedTables: lookups.map((l) => l.table) };
}
