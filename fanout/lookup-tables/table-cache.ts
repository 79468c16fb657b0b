import type { JsonRpcCall } from '../../infra/base/json-rpc';
import { newLookupTable, type LookupTableState } from '../../proto/lookup-table/account';
import type { AltInstruction } from '../../proto/lookup-table/program';
import { deactivated, extended, frozen } from '../../proto/lookup-table/rules';
import { lookupMetrics } from './lookup-metrics';
import { TableFetcher, type FetchResult } from './table-fetcher';
import { TableNotifier } from './table-notifier';
import { equal32, hash32 } from '../filter/key32';

// The process's lookup tables: what the chain node said about each (fetched when a transaction first names the
// table), changed by the table program's instructions seen in the stream (a pending view, used at once), and
// made authoritative again when the node, at `confirmed`, answers from a slot at or after the last change seen.
//
// Memory: at most maxTables entries and maxAddresses addresses over all of them (a table holds ≤ 256, 32 bytes
// each, so the default 1,000,000 addresses is ≤ 32 MiB of keys). Past either cap, tables are evicted in CLOCK
// order (second chance: a table used since the last sweep goes to the back once); tables being fetched, with
// transactions waiting, or with an unconfirmed stream change are never evicted. When nothing can go, a new table
// is not taken in and resolves as unknown.
//
// Account notifications (when a PubSub URL is given, table-notifier.ts): every table taken in as held is watched,
// up to maxSubscriptions; a notification replaces its view as a fetch answer does; eviction or the table's
// closing ends the watch.

export type EntryState = 'loading' | 'held' | 'absent' | 'failed';

/** What waits for a table's first answer (a transaction's resolution). */
export interface TableWaiter {
  tableSettled(): void;
}

const NO_WORDS = new Int32Array(0);

/**
 * A copy in an allocation of its own: `Buffer.from` of a small buffer is a slice of the shared pool slab (64 KiB on
 * Node 24), which a long-lived key would keep alive whole.
 */
function owned(b: Buffer): Buffer {
  const out = Buffer.allocUnsafeSlow(b.length);
  b.copy(out);
  return out;
}

/** The addresses as words: a view when 4-byte aligned, else over a copy. */
function wordsOf(addresses: Buffer): Int32Array {
  const b = addresses.byteOffset % 4 === 0 ? addresses : Buffer.from(addresses);
  return new Int32Array(b.buffer, b.byteOffset, b.length >>> 2);
}

export class TableEntry {
  state: EntryState = 'loading';
  view: LookupTableState | null = null;
  /** The view's addresses as 32-bit words (8 per address), for the matching path's copy. */
  words: Int32Array = NO_WORDS;
  /** The slot of the latest stream change not yet confirmed by the node; -1n: none. */
  pendingSlot = -1n;
  /** Not before this time (ms) is an absent or failed table asked for again. */
  retryAt = 0;
  /** CLOCK bit: set on use, cleared by the eviction sweep. */
  used = true;
  waiters: TableWaiter[] | null = null;
  /** The next entry whose key has the same hash32 (the byte-keyed index of the hot path). */
  nextSameHash: TableEntry | null = null;
  readonly hash: number;
  constructor(readonly key: Buffer) {
    this.hash = hash32(key, 0);
  }

  get addressCount(): number {
    return this.view === null ? 0 : this.view.addresses.length / 32;
  }
}

export interface TableCacheOptions {
  call: JsonRpcCall;
  maxTables: number;
  maxAddresses: number;
  maxInFlight: number;
  /** After a failed fetch or an absent table, how long before the node is asked again (ms). */
  retryMs: number;
  /** How often tables with unconfirmed stream changes are read again at `confirmed` (ms). */
  confirmMs: number;
  /** The node's PubSub WebSocket for account notifications; empty or absent: none. */
  wsUrl?: string;
  /** Tables watched through account notifications at most. */
  maxSubscriptions?: number;
  now?: () => number;
}

export class TableCache {
  private readonly entries = new Map<string, TableEntry>();
  /** The same entries by hash32 of their key (chained on collision): the matching path finds a table from the
   *  message bytes without making a string. */
  private readonly byHash = new Map<number, TableEntry>();
  private readonly fetcher: TableFetcher;
  /** Account notifications; null when no PubSub URL is configured. */
  readonly notifier: TableNotifier | null;
  private readonly confirmTimer: NodeJS.Timeout;
  private readonly now: () => number;
  private addresses = 0;
  private closed = false;

  constructor(private readonly o: TableCacheOptions) {
    this.now = o.now ?? Date.now;
    this.fetcher = new TableFetcher({ call: o.call, maxInFlight: o.maxInFlight, onResult: this.onResult });
    this.notifier =
      o.wsUrl === undefined || o.wsUrl === ''
        ? null
        : new TableNotifier({
            url: o.wsUrl,
            maxSubscriptions: o.maxSubscriptions ?? 10_000,
            onAccount: (id, r) => this.apply(id, r),
            reread: (id) => {
              const e = this.entries.get(id);
              if (e !== undefined && e.state === 'held') this.fetcher.request(id, e.key, 'confirmed');
            },
          });
    this.confirmTimer = setInterval(() => this.confirmPending(), o.confirmMs);
    this.confirmTimer.unref();
  }

  get size(): { tables: number; addresses: number } {
    return { tables: this.entries.size, addresses: this.addresses };
  }

  /** The entry as it is (no fetch); marks it used. */
  peek(id: string): TableEntry | undefined {
    const e = this.entries.get(id);
    if (e !== undefined) e.used = true;
    return e;
  }

  /**
   * The entry when a lookup can be resolved against it now without asking the node: held, or absent / failed
   * within its retry time. undefined: not known, being fetched, or due to be asked again (resolve through want).
   */
  ready(id: string): TableEntry | undefined {
    return this.readyEntry(this.entries.get(id));
  }

  /** ready() for the table key at b[off, off + 32). */
  readyAt(b: Uint8Array, off: number): TableEntry | undefined {
    let e = this.byHash.get(hash32(b, off)) ?? null;
    while (e !== null && !equal32(e.key, 0, b, off)) e = e.nextSameHash;
    return this.readyEntry(e ?? undefined);
  }

  private readyEntry(e: TableEntry | undefined): TableEntry | undefined {
    if (e === undefined || e.state === 'loading') return undefined;
    if (e.state !== 'held' && e.pendingSlot < 0n && this.now() >= e.retryAt) return undefined;
    e.used = true;
    return e;
  }

  /**
   * The entry for a table a transaction names: held, absent or failed as known; a new one (or one whose retry time
   * has come) starts loading. undefined when the caps leave no room for a new table.
   */
  want(id: string, key: Buffer): TableEntry | undefined {
    let e = this.entries.get(id);
    if (e !== undefined) {
      e.used = true;
      if ((e.state === 'failed' || e.state === 'absent') && e.pendingSlot < 0n && this.now() >= e.retryAt) {
        e.state = 'loading';
        this.fetcher.request(id, e.key, 'processed');
      }
      return e;
    }
    if (this.closed || !this.makeRoom(0)) return undefined;
    e = this.insert(id, key);
    this.fetcher.request(id, e.key, 'processed');
    return e;
  }

  /**
   * A held table that a transaction indexes past: it may have been extended where the stream cannot see it (by
   * another program, through CPI), so it is read again, at most once per retryMs; the view stays until the answer.
   */
  refresh(e: TableEntry): void {
    if (this.closed || e.state !== 'held' || e.pendingSlot >= 0n) return;
    const now = this.now();
    if (now < e.retryAt) return;
    e.retryAt = now + this.o.retryMs;
    this.fetcher.request(e.key.toString('latin1'), e.key, 'processed');
  }

  /**
   * A table-program instruction seen in the stream at `slot`, applied to the pending view (the transaction may
   * still fail on chain: the node's confirmed answer replaces the view). `authority` is the create instruction's.
   */
  applyInstruction(id: string, key: Buffer, ix: AltInstruction, slot: bigint, authority: Buffer | null): void {
    if (this.closed) return;
    let e = this.entries.get(id);
    if (ix.kind === 'create') {
      if (authority === null) return;
      if (e === undefined) {
        if (!this.makeRoom(0)) return;
        e = this.insert(id, key);
      } else if (e.state === 'held' && e.view !== null) return; // the program refuses to create over a table
      this.setView(e, newLookupTable(owned(authority)));
      e.state = 'held';
      this.notifier?.watch(id, e.key);
      this.changed(e, slot, 'create');
      return;
    }
    // A change to a table we do not hold: whoever names it next fetches it.
    if (e === undefined || e.state !== 'held' || e.view === null) return;
    if (ix.kind === 'close') {
      this.setView(e, null);
      e.state = 'absent';
      this.notifier?.unwatch(id);
      e.retryAt = this.now();
      this.changed(e, slot, 'close');
      return;
    }
    const next = ix.kind === 'extend' ? extended(e.view, ix.addresses, slot) : ix.kind === 'deactivate' ? deactivated(e.view, slot) : frozen(e.view);
    if (next === null) return; // the program refuses it: the table stays as it is
    if (ix.kind === 'extend' && this.addresses + ix.addresses.length / 32 > this.o.maxAddresses) this.makeRoom(ix.addresses.length / 32, e);
    this.setView(e, next);
    this.changed(e, slot, ix.kind);
  }

  close(): void {
    this.closed = true;
    clearInterval(this.confirmTimer);
    this.fetcher.close();
    this.notifier?.close();
    for (const e of this.entries.values()) this.settle(e);
    this.entries.clear();
    this.byHash.clear();
    this.addresses = 0;
  }

  private insert(id: string, key: Buffer): TableEntry {
    const e = new TableEntry(owned(key));
    this.entries.set(id, e);
    e.nextSameHash = this.byHash.get(e.hash) ?? null;
    this.byHash.set(e.hash, e);
    return e;
  }

  private unhash(e: TableEntry): void {
    let head = this.byHash.get(e.hash) ?? null;
    if (head === e) {
      if (e.nextSameHash === null) this.byHash.delete(e.hash);
      else this.byHash.set(e.hash, e.nextSameHash);
      return;
    }
    while (head !== null && head.nextSameHash !== e) head = head.nextSameHash;
    if (head !== null) head.nextSameHash = e.nextSameHash;
  }

  private changed(e: TableEntry, slot: bigint, kind: string): void {
    if (slot > e.pendingSlot) e.pendingSlot = slot;
    lookupMetrics.streamUpdate(kind).inc();
  }

  private setView(e: TableEntry, v: LookupTableState | null): void {
    this.addresses += (v === null ? 0 : v.addresses.length / 32) - e.addressCount;
    e.view = v;
    e.words = v === null ? NO_WORDS : wordsOf(v.addresses);
  }

  private confirmPending(): void {
    for (const [id, e] of this.entries) if (e.pendingSlot >= 0n) this.fetcher.request(id, e.key, 'confirmed');
  }

  private readonly onResult = (id: string, r: FetchResult, ms: number): void => {
    lookupMetrics.fetchMs.observe(ms);
    this.apply(id, r);
  };

  /** A fetch answer or an account notification. */
  private apply(id: string, r: FetchResult): void {
    const e = this.entries.get(id);
    if (e === undefined) return;
    if (r.kind === 'failed') {
      lookupMetrics.fetchErrors.inc();
      if (e.state === 'loading') {
        e.state = 'failed';
        e.retryAt = this.now() + this.o.retryMs;
      }
      return this.settle(e);
    }
    // An answer from before the latest change the stream showed would undo it: keep the pending view.
    if (e.pendingSlot >= 0n && r.contextSlot < e.pendingSlot) return this.settle(e);
    e.pendingSlot = -1n;
    if (r.kind === 'table') {
      const add = r.table.addresses.length / 32 - e.addressCount;
      if (add > 0 && this.addresses + add > this.o.maxAddresses) this.makeRoom(add, e);
      this.setView(e, r.table);
      e.state = 'held';
      this.notifier?.watch(id, e.key);
    } else {
      this.setView(e, null);
      e.state = 'absent';
      e.retryAt = this.now() + this.o.retryMs;
      this.notifier?.unwatch(id);
    }
    this.settle(e);
  }

  private settle(e: TableEntry): void {
    const w = e.waiters;
    if (w === null) return;
    e.waiters = null;
    for (const x of w) x.tableSettled();
  }

  /**
   * Evicts until one more table and `addresses` more addresses fit (CLOCK). `keep` is never evicted. False when
   * the caps cannot be met (everything left is in use).
   */
  private makeRoom(addresses: number, keep?: TableEntry): boolean {
    const needTable = keep === undefined ? 1 : 0;
    let budget = this.entries.size * 2 + 2; // two passes: one to clear the bits, one to evict
    while (this.entries.size + needTable > this.o.maxTables || this.addresses + addresses > this.o.maxAddresses) {
      if (budget-- <= 0) return false;
      const first = this.entries.entries().next();
      if (first.done === true) return false;
      const [id, e] = first.value;
      this.entries.delete(id);
      if (e === keep || e.used || e.waiters !== null || e.pendingSlot >= 0n || e.state === 'loading') {
        e.used = false;
        this.entries.set(id, e); // to the back
        continue;
      }
      this.unhash(e);
      this.notifier?.unwatch(id);
      this.addresses -= e.addressCount;
      lookupMetrics.evictions.inc();
    }
    return true;
  }
}
