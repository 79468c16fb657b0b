// The seam between address-lookup-table resolution (the table cache) and the streams that use it (v2 messages and
// filters, and v1 filters when the operator asks). A v0 transaction names accounts as (table, index) pairs; the
// chain loads them in the order writable indexes of every lookup, then readonly indexes of every lookup
// (Agave's `LoadedAddresses`), and that is the order of the lists here.

/** One `MessageAddressTableLookup` of a v0 message. */
export interface TableLookup {
  /** The table's account key, 32 bytes. */
  table: Buffer;
  writableIndexes: Uint8Array;
  readonlyIndexes: Uint8Array;
}

/** What a transaction's lookups load, as far as the table cache knows at the moment of resolution. */
export interface LoadedAddresses {
  writable: Buffer[];
  readonly: Buffer[];
  /** Keys of the tables that could not be resolved within the bound (unknown, or an index out of range). Empty
   *  when every lookup resolved; a transaction with unresolved tables is matched on what is known. */
  unresolvedTables: Buffer[];
  /** When set: the loaded addresses in one block, writable then readonly, 32 bytes each (what `writable` and
   *  `readonly` list). The matching path reads this and never the lists. */
  readonly block?: Buffer;
}

/**
 * LoadedAddresses as the table resolver makes them: one block of keys and a count, the per-key lists made only
 * when something reads them (a test, the v2 encoder for a record that matched). A resolution then costs one
 * allocation whatever the number of keys.
 */
export class LoadedBlock implements LoadedAddresses {
  private w: Buffer[] | null = null;
  private r: Buffer[] | null = null;
  constructor(
    readonly block: Buffer,
    readonly writableCount: number,
    readonly unresolvedTables: Buffer[],
  ) {}

  get writable(): Buffer[] {
    return (this.w ??= views(this.block, 0, this.writableCount));
  }

  get readonly(): Buffer[] {
    return (this.r ??= views(this.block, this.writableCount, this.block.length / 32));
  }
}

function views(b: Buffer, from: number, to: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = from; i < to; i++) out.push(b.subarray(i * 32, i * 32 + 32));
  return out;
}

export interface LoadedAddressResolver {
  /**
   * Resolves `lookups`. Calls `done` exactly once: synchronously when every table is held, otherwise no later than
   * the resolver's configured bound, with what is known by then.
   */
  resolve(lookups: readonly TableLookup[], slot: bigint, done: (loaded: LoadedAddresses) => void): void;
}

const NONE: LoadedAddresses = Object.freeze({ writable: [], readonly: [], unresolvedTables: [] }) as LoadedAddresses;

/** The resolver of a deployment without a table cache: nothing resolves, every table is reported unresolved. */
export const noResolution: LoadedAddressResolver = {
  resolve(lookups, _slot, done) {
    if (lookups.length === 0) return done(NONE);
    done({ writable: [], readonly: [], unresolvedTables: lookups.map((l) => l.table) });
  },
};

/** The static keys followed by the loaded ones, one contiguous block as FilterIndex.match takes them (v1's
 *  matchV1 and v2's flagged filters both match on it). */
export function keysWithLoaded(accountKeys: Buffer, loaded: LoadedAddresses): Buffer {
  const b = loaded.block;
  if (b !== undefined) {
    if (b.length === 0) return accountKeys;
    const out = Buffer.allocUnsafe(accountKeys.length + b.length);
    out.set(accountKeys, 0);
    out.set(b, accountKeys.length);
    return out;
  }
  const n = loaded.writable.length + loaded.readonly.length;
  if (n === 0) return accountKeys;
  const out = Buffer.allocUnsafe(accountKeys.length + n * 32);
  accountKeys.copy(out, 0);
  let o = accountKeys.length;
  for (const k of loaded.writable) o += k.copy(out, o);
  for (const k of loaded.readonly) o += k.copy(out, o);
  return out;
}
