import { LOOKUP_INTS, scanLookups } from '../../proto/tx-message-reader';
import { keysWithLoaded, type LoadedAddresses } from '../loaded-addresses';
import { lookupMetrics } from './lookup-metrics';
import type { TableCache, TableEntry } from './table-cache';
import { usableAt } from './table-resolver';

// The keys a transaction is matched on when filters see loaded addresses: its static keys, then what its lookups
// load, in one contiguous block as FilterIndex.match takes them (the order within does not change a match).
// The block is a scratch buffer reused for every transaction: valid until the next call.

/** A v0 transaction names at most 256 accounts in all (u8 indexes); the buffer grows past this only for a
 *  malformed record. */
const INITIAL_KEYS = 256;

export class MatchKeys {
  // Buffer.alloc never takes from the shared pool: its own ArrayBuffer, so the word view is aligned.
  private scratch = Buffer.alloc(INITIAL_KEYS * 32);
  private outWords = new Int32Array(this.scratch.buffer, 0, this.scratch.length >>> 2);
  /** Per call: the entry of each lookup, in order, and scanLookups' offsets. */
  private readonly held: TableEntry[] = [];
  private at: Int32Array = new Int32Array(LOOKUP_INTS * 8);

  constructor(private readonly cache: TableCache) {}

  /**
   * The keys to match, synchronously: `accountKeys` itself when the message has no lookups (or does not parse),
   * else the static keys and what the held tables load. null when a table is not known yet: the caller resolves
   * through the resolver (which fetches and waits) and calls withLoaded.
   */
  forRecord(accountKeys: Buffer, message: Buffer, slot: bigint): Buffer | null {
    let k = scanLookups(message, this.at);
    while (k === -2) {
      this.at = growInts(this.at);
      k = scanLookups(message, this.at);
    }
    if (k <= 0) return accountKeys; // none, or bytes that do not parse (matched on the static keys)
    const a = this.at;
    const held = this.held;
    let n = 0;
    for (let i = 0; i < k; i++) {
      const e = this.cache.readyAt(message, a[i * LOOKUP_INTS]!);
      if (e === undefined) {
        held.length = 0;
        return null;
      }
      held.push(e);
      n += a[i * LOOKUP_INTS + 2]! + a[i * LOOKUP_INTS + 4]!;
    }
    const out = this.reserve(accountKeys.length + n * 32);
    accountKeys.copy(out, 0);
    let o = accountKeys.length;
    let partial = false;
    for (let i = 0; i < k; i++) {
      const j = i * LOOKUP_INTS;
      const wo = a[j + 1]!;
      const wl = a[j + 2]!;
      const ro = a[j + 3]!;
      const rl = a[j + 4]!;
      const t = usableAt(held[i], slot, message, wo, wl, message, ro, rl);
      if (typeof t === 'string') {
        lookupMetrics.unresolved(t).inc();
        if (t === 'index') this.cache.refresh(held[i]!);
        partial = true;
        continue;
      }
      const w = held[i]!.words;
      o = copyIndexes(w, message, wo, wl, this.outWords, o);
      o = copyIndexes(w, message, ro, rl, this.outWords, o);
    }
    lookupMetrics.hits.inc(k);
    held.length = 0; // drop the references until the next call
    if (partial) lookupMetrics.partialTransactions.inc();
    return out.subarray(0, o);
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

/** Copies the addresses at the indexes in idx[off, off + len) to out at byte o (a multiple of 32), eight words
 *  each: per 32 bytes, a native Buffer.copy call or a byte loop costs several times more. */
function copyIndexes(words: Int32Array, idx: Uint8Array, off: number, len: number, out: Int32Array, o: number): number {
  let d = o >>> 2;
  for (let i = off; i < off + len; i++) {
    const s = idx[i]! << 3;
    for (let j = 0; j < 8; j++) out[d + j] = words[s + j]!;
    d += 8;
  }
  return d << 2;
}

function growInts(a: Int32Array): Int32Array {
  const b = new Int32Array(a.length * 2);
  b.set(a);
  return b;
}
