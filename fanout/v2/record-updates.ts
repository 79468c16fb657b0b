import { entryTxKeys, type EntryRecord } from '../../bus/topics/stream-entries';
import { SIGNATURE_SZ, type TxRecord } from '../../bus/topics/stream-transactions';
import { encodeTxShared } from '../../proto/wire-v2';
import type { CompiledFilterSet } from '../filter/compile';
import type { FilterIndex, Match } from '../filter/filter-index';
import type { LoadedAddresses, LoadedAddressResolver, TableLookup } from '../filter/loaded-addresses';
import { recordLookups } from '../lookup-tables/read-lookups';
import { decodeCursor, encodeCursor, stampOf, TopicTag } from './cursor';
import { allUnresolved, matchWithLoaded, type LoadedAware } from './loaded-match';

// From a bus record to the matches and shared update parts of the streams it reaches: what the live hub (hub.ts)
// and a stream's replay (replay.ts) do alike with one record, so that a replayed record gives exactly the updates
// the live one gave.

/** What matching asks of a stream: its filters' option bits (filter/compile.ts FilterMasks). */
export interface MatchTarget extends LoadedAware {
  rawMask: number;
}

/** One RAW transaction of an entry record a stream receives: its index in the entry and the filters it matched. */
export interface RawMatch {
  i: number;
  mask: number;
  set: CompiledFilterSet;
}

/**
 * The matches of a transaction record: on its static keys, and — when `flagged` (the index holds filters with
 * match_loaded_addresses) and the record has lookups — on what they load as well (loaded-match.ts). `loaded` null:
 * the record was not resolved on arrival; it is resolved now if the tables are held, else every table is named
 * unresolved.
 */
export function matchTx<S extends MatchTarget>(index: FilterIndex<S>, resolver: LoadedAddressResolver, r: TxRecord, lookups: readonly TableLookup[] | null, loaded: LoadedAddresses | null, flagged: boolean): { matches: Match<S>[]; loaded: LoadedAddresses | null } {
  index.prepare(r.accountKeys, r.message, r.facts ?? null); // filters on instructions, roles, signatures, votes (filter-index.ts)
  if (!flagged) return { matches: index.match(r.accountKeys), loaded: null };
  lookups ??= recordLookups(r);
  if (lookups === null || lookups.length === 0) return { matches: index.match(r.accountKeys), loaded: null };
  if (loaded === null) {
    let now: LoadedAddresses | null = null;
    resolver.resolve(lookups, r.slot, (l) => void (now ??= l));
    const got: LoadedAddresses | null = now;
    loaded = got ?? allUnresolved(lookups);
  }
  return { matches: matchWithLoaded(index, r.accountKeys, loaded), loaded };
}

/** Each stream's RAW matches among an entry record's transactions, in entry order; null when there are none. */
export function matchRaw<S extends MatchTarget>(index: FilterIndex<S>, r: EntryRecord, ok: (s: S) => boolean): Map<S, RawMatch[]> | null {
  let out: Map<S, RawMatch[]> | null = null;
  for (let i = 0; i < r.txs.length; i++) {
    for (const mt of index.match(entryTxKeys(r.txs[i]!))) {
      const s = mt.sub;
      const mask = mt.mask & s.rawMask;
      if (mask === 0 || !ok(s)) continue;
      out ??= new Map();
      let l = out.get(s);
      if (l === undefined) out.set(s, (l = []));
      l.push({ i, mask, set: mt.set });
    }
  }
  return out;
}

/** The shared part of a DECODED transaction update (`key` is the record's key: its first signature). */
export function txShared(nowMs: number, cursor: Buffer, key: Buffer | null, r: Pick<TxRecord, 'slot' | 'message' | 'observedAtMs' | 'block'>, loaded: Buffer | null): Buffer {
  const signature = key !== null && key.length === SIGNATURE_SZ ? key : EMPTY;
  return encodeTxShared(cursor, nowMs, { slot: r.slot, signature, decoded: r.message, raw: null, observedAtMs: r.observedAtMs, loaded, block: r.block });
}

/** The shared part of the RAW update of an entry record's transaction `i`. */
export function rawShared(nowMs: number, cursor: Buffer, r: EntryRecord, i: number): Buffer {
  return encodeTxShared(cursor, nowMs, { slot: r.slot, signature: r.signatures.subarray(i * SIGNATURE_SZ, (i + 1) * SIGNATURE_SZ), decoded: null, raw: r.txs[i]!.wire, observedAtMs: r.observedAtMs, loaded: null, block: r.block });
}

/**
 * `cursor` with one entries-topic partition set back to `offset` (the cursor before that record), whose marker is
 * `mark` (of the record below it). A RAW transaction that is not the last one of its entry a stream gets carries
 * it: a resume never skips the rest of an entry.
 */
export function withEntryOffset(cursor: Buffer, partition: number, offset: number, mark: number): Buffer {
  const d = decodeCursor(cursor);
  if (!d.ok) return cursor; // our own encoding: cannot happen
  const offs = d.position.get(TopicTag.entries);
  if (offs === undefined) return cursor;
  offs[partition] = offset;
  if (d.logs === null) return encodeCursor(d.position, null);
  const l = d.logs.get(TopicTag.entries);
  if (l !== undefined) {
    const marks = l.marks.slice();
    marks[partition] = mark;
    d.logs.set(TopicTag.entries, { log: l.log, marks });
  }
  return encodeCursor(d.position, stampOf(d.logs));
}

const EMPTY = Buffer.alloc(0);
