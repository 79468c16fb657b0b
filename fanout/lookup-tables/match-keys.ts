import { LOOKUP_INTS, scanLookups } from '../../proto/tx-message-reader';
import { keysWithLoaded, type LoadedAddresses } from '../loaded-addresses';
import { lookupMetrics } from './lookup-metrics';
import { TableEntry, type TableCache } from './table-cache';
import { copyIndexes, usableAt } from './table-resolver';

// The keys a transaction is matched on when filters see loaded addresses: its static keys, then what its lookups
// load, in one contiguous block as FilterIndex.match takes them (the order within does not change a match).
// The block is a scratch buffer reused for every transaction: valid until the next call, and nothing is allocated
// per transaction.

/** A v0 transaction names at most 256 accounts in all (u8 indexes); the buffer grows past this only for a
 *  malformed record. */
const INITIAL_KEYS = 256;

/** Marks a lookup that did not resolve, between forRecord's two passes. */
const UNUSABLE = new TableEntry(Buffer.alloc(32));

export class MatchKeys {
  // Buffer.alloc never takes from the shared pool: its own ArrayBuffer, so the word view is aligned.
  private scratch = Buffer.alloc(INITIAL_KEYS * 32);
  private outWords = new Int32Array(this.scratch.buffer, 0, this.scratch.length >>> 2);
  /** Per call: the entry of each lookup, in order, and scanLookups' offsets. */
  private readonly held: TableEntry[] = [];
  private at: Int32Array = new Int32Array(LOOKUP_INTS * 8);

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
  forRecord(accountKeys: Buffer, message: Buffer, slot: bigint): number {
    let k = scanLookups(message, this.at);
    while (k === -2) {
      this.at = growInts(this.at);
      k = scanLookups(message, this.at);
    }
    const a = this.at;
    const held = this.held;
    let n = 0;
    for (let i = 0; i < k; i++) {
      const e = this.cache.readyAt(message, a[i * LOOKUP_INTS]!);
      if (e === undefined) {
        held.length = 0;
        return -1;
      }
      held.push(e);
      n += a[i * LOOKUP_INTS + 2]! + a[i * LOOKUP_INTS + 4]!;
    }
    const out = this.reserve(accountKeys.length + n * 32);
    out.set(accountKeys, 0);
    let o = accountKeys.length;
    if (k <= 0) return o; // none, or bytes that do not parse (matched on the static keys)
    let partial = false;
    // Writable indexes of every lookup, then readonly ones (the chain's order; the order does not change a match,
    // but the block is then the same as v2's static + loaded).
    for (let pass = 0; pass < 2; pass++) {
      for (let i = 0; i < k; i++) {
        const j = i * LOOKUP_INTS;
        const wo = a[j + 1]!;
        const wl = a[j + 2]!;
        const ro = a[j + 3]!;
        const rl = a[j + 4]!;
        if (pass === 0) {
          const t = usableAt(held[i], slot, message, wo, wl, message, ro, rl);
          if (typeof t === 'string') {
            lookupMetrics.unresolved(t).inc();
            if (t === 'index') this.cache.refresh(held[i]!);
            partial = true;
            held[i] = UNUSABLE;
            continue;
          }
        } else if (held[i] === UNUSABLE) continue;
        const w = held[i]!.words;
        o = pass === 0 ? copyIndexes(w, message, wo, wl, this.outWords, o) : copyIndexes(w, message, ro, rl, this.outWords, o);
      }
    }
    lookupMetrics.hits.inc(k);
    held.length = 0; // drop the references until the next call
    if (partial) lookupMetrics.partialTransactions.inc();
    return o;
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
