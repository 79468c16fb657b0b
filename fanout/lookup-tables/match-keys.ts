import { HEADER_LOOKUP_INTS, scanLookupsHeader } from '../../bus/topics/stream-transactions-lookups';
import type { TxRecord } from '../../bus/topics/stream-transactions';
import { LOOKUP_INTS, scanLookups } from '../../proto/tx-message-reader';
import { keysWithLoaded, type LoadedAddresses } from '../filter/loaded-addresses';
import { lookupMetrics } from './lookup-metrics';
import type { FilterIndex, Match, SplitMatch } from '../filter/filter-index';
import { TableEntry, type TableCache } from './table-cache';
import type { TableHits } from './table-hits';
import { copyIndexes, usableAt } from './table-resolver';

// The keys a transaction is matched on when filters see loaded addresses: its static keys, then what its lookups
// load, in one contiguous block as FilterIndex.match takes them (the order within does not change a match).
// The block is a scratch buffer reused for every transaction: valid until the next call, and nothing is allocated
// per transaction.
//
// A record's lookups come from its lookups header when it has one (every record ingest produces now), from its
// message bytes otherwise (older records): both scans give the same offsets layout, into their own bytes, which
// `src` names for the rest of the call.

/** What the match needs of a record. */
export type RecordKeys = Pick<TxRecord, 'accountKeys' | 'message' | 'lookups' | 'slot' | 'facts'>;

if ((HEADER_LOOKUP_INTS as number) !== LOOKUP_INTS) throw new Error('the two lookup scans must share one layout');

/** A v0 transaction names at most 256 accounts in all (u8 indexes); the buffer grows past this only for a
 *  malformed record. */
const INITIAL_KEYS = 256;

/** Marks a lookup that did not resolve, between prepare() and what uses its tables. */
const UNUSABLE = new TableEntry(Buffer.alloc(32));

/** prepare(): a table is not known yet. */
const UNKNOWN = -3;

export class MatchKeys {
  // Buffer.alloc never takes from the shared pool: its own ArrayBuffer, so the word view is aligned.
  private scratch = Buffer.alloc(INITIAL_KEYS * 32);
  private outWords = new Int32Array(this.scratch.buffer, 0, this.scratch.length >>> 2);
  /** Per call: the entry of each lookup, in order, and scanLookups' offsets. */
  private readonly held: TableEntry[] = [];
  private at: Int32Array = new Int32Array(LOOKUP_INTS * 8);
  /** Per call (matchRecord): the key ids of the loaded addresses some filter lists. */
  private ids: Int32Array = new Int32Array(INITIAL_KEYS);
  /** Per call: the bytes the offsets in `at` point into (the lookups header, or the message). */
  private src: Buffer = Buffer.alloc(0);
  /** How many of the last hitIds() are of writable indexes (they come first: the chain's load order). */
  private writableIds = 0;

  constructor(private readonly cache: TableCache) {}

  /** The keys forRecord wrote, in [0, its answer); valid until the next call. */
  get block(): Buffer {
    return this.scratch;
  }

  /**
   * The keys to match, synchronously, written to `block`: the static keys, then what the held tables load.
   * Returns their length in bytes (the static keys alone when the message has no lookups or does not parse), or
   * -1 when a table is not known yet: the caller resolves through the resolver (which fetches and waits) and
   * calls withLoaded. No allocation: FilterIndex.match takes the block and the length.
   */
  forRecord(r: RecordKeys): number {
    const accountKeys = r.accountKeys;
    const k = this.prepare(r);
    if (k === UNKNOWN) return -1;
    const a = this.at;
    const held = this.held;
    let n = 0;
    for (let i = 0; i < k; i++) if (held[i] !== UNUSABLE) n += a[i * LOOKUP_INTS + 2]! + a[i * LOOKUP_INTS + 4]!;
    const out = this.reserve(accountKeys.length + n * 32);
    out.set(accountKeys, 0);
    let o = accountKeys.length;
    // Writable indexes of every lookup, then readonly ones (the chain's order; the order does not change a match,
    // but the block is then the same as v2's static + loaded).
    for (let pass = 0; pass < 2; pass++) {
      for (let i = 0; i < k; i++) {
        if (held[i] === UNUSABLE) continue;
        const j = i * LOOKUP_INTS + 1 + 2 * pass;
        o = copyIndexes(held[i]!.words, this.src, a[j]!, a[j + 1]!, this.outWords, o);
      }
    }
    held.length = 0; // drop the references until the next call
    return o;
  }

  /**
   * The matches of the record with loaded addresses (v1's matchV1), against the tables' precomputed hit lists
   * (table-hits.ts) instead of the loaded addresses: the same answer, in the same order, as
   * `index.match(block, forRecord(...))`, with the same metrics and refreshes. null when a table is not known
   * yet (as forRecord's -1).
   */
  matchRecord<S>(index: FilterIndex<S>, hits: TableHits, r: RecordKeys): Match<S>[] | null {
    const k = this.prepare(r);
    if (k === UNKNOWN) return null;
    const n = this.hitIds(hits, k);
    return index.matchIds(r.accountKeys, r.accountKeys.length, this.ids, n, this.writableIds);
  }

  /** matchRecord for v2's split match (static and loaded answers apart: loaded-match.ts). */
  matchSplitRecord<S>(index: FilterIndex<S>, hits: TableHits, r: RecordKeys): SplitMatch<S>[] | null {
    const k = this.prepare(r);
    if (k === UNKNOWN) return null;
    const n = this.hitIds(hits, k);
    // v2 filters on instructions, roles, signatures, votes read the record (filter-index.ts prepare).
    index.prepare(r.accountKeys, r.message, r.facts ?? null);
    return index.matchSplitIds(r.accountKeys, r.accountKeys.length, this.ids, n, this.writableIds);
  }

  /** The key ids of the loaded addresses some filter lists, in load order (writable of every lookup, then
   *  readonly), into `ids`; returns how many. Clears `held`. */
  private hitIds(hits: TableHits, k: number): number {
    const a = this.at;
    const message = this.src;
    const held = this.held;
    let n = 0;
    for (let pass = 0; pass < 2; pass++) {
      if (pass === 1) this.writableIds = n;
      for (let i = 0; i < k; i++) {
        const e = held[i]!;
        if (e === UNUSABLE) continue;
        const t = hits.idsFor(e);
        if (t === null) continue;
        const j = i * LOOKUP_INTS + 1 + 2 * pass;
        const from = a[j]!;
        const to = from + a[j + 1]!;
        while (this.ids.length < n + (to - from)) this.ids = growInts(this.ids);
        const ids = this.ids;
        // Every index is below the usable length (prepare checked), so within the table and its hit list.
        if (t !== undefined) {
          for (let x = from; x < to; x++) {
            const id = t[message[x]!]!;
            if (id >= 0) ids[n++] = id;
          }
        } else {
          // No list built yet in this epoch (table-hits.ts): the used indexes looked up directly.
          const addresses = e.view!.addresses;
          for (let x = from; x < to; x++) {
            const id = hits.keyIdAt(addresses, message[x]! * 32);
            if (id >= 0) ids[n++] = id;
          }
        }
      }
    }
    held.length = 0;
    return n;
  }

  /**
   * The lookups of the record into `at` (offsets into `src`), and their tables into `held` (UNUSABLE where the lookup does not resolve
   * in `slot`, counted and refreshed as the chain's rules say). Returns how many lookups (≤ 0: none, or bytes that
   * do not parse: matched on the static keys), or UNKNOWN when a table is not known yet (`held` left empty).
   */
  private prepare(r: RecordKeys): number {
    const slot = r.slot;
    const header = r.lookups;
    const message = header ?? r.message;
    this.src = message;
    let k = header !== null ? scanLookupsHeader(header, this.at) : scanLookups(message, this.at);
    while (k === -2) {
      this.at = growInts(this.at);
      k = header !== null ? scanLookupsHeader(header, this.at) : scanLookups(message, this.at);
    }
    const a = this.at;
    const held = this.held;
    for (let i = 0; i < k; i++) {
      const e = this.cache.readyAt(message, a[i * LOOKUP_INTS]!);
      if (e === undefined) {
        held.length = 0;
        return UNKNOWN;
      }
      held.push(e);
    }
    if (k <= 0) return k;
    let partial = false;
    for (let i = 0; i < k; i++) {
      const j = i * LOOKUP_INTS;
      const t = usableAt(held[i], slot, message, a[j + 1]!, a[j + 2]!, message, a[j + 3]!, a[j + 4]!);
      if (typeof t === 'string') {
        lookupMetrics.unresolved(t).inc();
        if (t === 'index') this.cache.refresh(held[i]!);
        partial = true;
        held[i] = UNUSABLE;
      }
    }
    lookupMetrics.hits.inc(k);
    if (partial) lookupMetrics.partialTransactions.inc();
    return k;
  }

  /** The keys to match once the resolver answered (the slow path). */
  withLoaded(accountKeys: Buffer, loaded: LoadedAddresses): Buffer {
    return keysWithLoaded(accountKeys, loaded);
  }

  private reserve(bytes: number): Buffer {
    if (this.scratch.length < bytes) {
      this.scratch = Buffer.alloc(Math.max(bytes, this.scratch.length * 2));
      this.outWords = new Int32Array(this.scratch.buffer, 0, this.scratch.length >>> 2);
    }
    return this.scratch;
  }
}

function growInts(a: Int32Array): Int32Array {
  const b = new Int32Array(a.length * 2);
  b.set(a);
  return b;
}
