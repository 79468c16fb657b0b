import { LookupCursor } from '../../proto/tx-message-reader';
import type { LoadedAddresses } from '../loaded-addresses';
import { lookupMetrics } from './lookup-metrics';
import type { TableCache, TableEntry } from './table-cache';
import { tableId, usable } from './table-resolver';

// The keys a transaction is matched on when filters see loaded addresses: its static keys, then what its lookups
// load, in one contiguous block as FilterIndex.match takes them (the order within does not change a match).
// The block is a scratch buffer reused for every transaction: valid until the next call.

/** A v0 transaction names at most 256 accounts in all (u8 indexes); the buffer grows past this only for a
 *  malformed record. */
const INITIAL_KEYS = 256;

export class MatchKeys {
  private scratch = Buffer.allocUnsafe(INITIAL_KEYS * 32);
  private readonly cursor = new LookupCursor();
  /** Per call: the entry of each lookup, in order (reused). */
  private readonly held: TableEntry[] = [];

  constructor(private readonly cache: TableCache) {}

  /**
   * The keys to match, synchronously: `accountKeys` itself when the message has no lookups (or does not parse),
   * else the static keys and what the held tables load. null when a table is not known yet: the caller resolves
   * through the resolver (which fetches and waits) and calls withLoaded.
   */
  forRecord(accountKeys: Buffer, message: Buffer, slot: bigint): Buffer | null {
    const c = this.cursor.reset(message);
    const held = this.held;
    held.length = 0;
    let n = 0;
    while (c.next()) {
      const e = this.cache.ready(tableId(c.b, c.tableOff));
      if (e === undefined) return null;
      held.push(e);
      n += c.writableLen + c.readonlyLen;
    }
    if (held.length === 0 || c.bad) return accountKeys;
    const out = this.reserve(accountKeys.length + n * 32);
    accountKeys.copy(out, 0);
    let o = accountKeys.length;
    let partial = false;
    let i = 0;
    c.reset(message);
    while (c.next()) {
      const w = c.b.subarray(c.writableOff, c.writableOff + c.writableLen);
      const r = c.b.subarray(c.readonlyOff, c.readonlyOff + c.readonlyLen);
      const t = usable(held[i++], w, r, slot);
      if (typeof t === 'string') {
        lookupMetrics.unresolved(t).inc();
        partial = true;
        continue;
      }
      lookupMetrics.hits.inc();
      o = copyIndexes(t.addresses, w, out, o);
      o = copyIndexes(t.addresses, r, out, o);
    }
    held.length = 0; // drop the references until the next call
    if (partial) lookupMetrics.partialTransactions.inc();
    return out.subarray(0, o);
  }

  /** The keys to match once the resolver answered (the slow path). */
  withLoaded(accountKeys: Buffer, loaded: LoadedAddresses): Buffer {
    const n = loaded.writable.length + loaded.readonly.length;
    if (n === 0) return accountKeys;
    const out = Buffer.allocUnsafe(accountKeys.length + n * 32);
    accountKeys.copy(out, 0);
    let o = accountKeys.length;
    for (const k of loaded.writable) o += k.copy(out, o);
    for (const k of loaded.readonly) o += k.copy(out, o);
    return out;
  }

  private reserve(bytes: number): Buffer {
    if (this.scratch.length < bytes) this.scratch = Buffer.allocUnsafe(Math.max(bytes, this.scratch.length * 2));
    return this.scratch;
  }
}

function copyIndexes(addresses: Buffer, indexes: Uint8Array, out: Buffer, o: number): number {
  for (let i = 0; i < indexes.length; i++) {
    const s = indexes[i]! * 32;
    addresses.copy(out, o, s, s + 32);
    o += 32;
  }
  return o;
}
