import bs58 from 'bs58';
import type { TxFields } from '../../../proto/tx-fields';
import type { ExecMeta } from './svm';

// What the node remembers, bounded: frozen blocks (oldest evicted first once there are more than maxSlots
// blocks or maxTransactions transactions in them), each transaction by signature, each address's
// transactions newest last, and the recent blockhashes a transaction may name. The last MAX_AGE+1 blocks are
// never evicted: the duplicate-signature check and blockhash validity need them.

/** A blockhash stays valid for this many blocks after its own (agave's MAX_PROCESSING_AGE). */
export const MAX_BLOCKHASH_AGE = 150;

export interface TxRecord {
  signature: string;
  raw: Buffer;
  tx: TxFields;
  slot: number;
  meta: ExecMeta;
  /** Set once the slot's block is frozen (confirmed = finalized on this single-node chain). */
  frozen: boolean;
  /** Every account key (static + loaded), base58: the address index and logs `mentions` use them. */
  keys: string[];
  writable: boolean[];
}

export interface Block {
  slot: number;
  parentSlot: number;
  blockHeight: number;
  blockhash: string;
  previousBlockhash: string;
  /** Unix seconds. */
  blockTime: number;
  txs: TxRecord[];
  /** What slotsUpdates' "frozen" notification reports. */
  stats: { maxTransactionsPerEntry: number; numFailedTransactions: number; numSuccessfulTransactions: number; numTransactionEntries: number };
}

/** Append at the end, evict from the front by moving `head` (compacted now and then): no O(n) shift. */
interface AddressList {
  items: TxRecord[];
  head: number;
}

export interface LedgerLimits {
  maxSlots: number;
  maxTransactions: number;
}

export class Ledger {
  private readonly blocks = new Map<number, Block>();
  private readonly order: number[] = [];
  private head = 0;
  private readonly bySig = new Map<string, TxRecord>();
  private readonly byAddress = new Map<string, AddressList>();
  private readonly hashHeights = new Map<string, number>();
  private readonly hashOrder: string[] = [];
  private txCount = 0;
  latest: Block | null = null;

  constructor(private readonly limits: LedgerLimits) {}

  /** A transaction executed in the working slot: visible to statuses (processed) before its block freezes. */
  addProcessed(r: TxRecord): void {
    this.bySig.set(r.signature, r);
    this.txCount++;
    for (const k of r.keys) {
      let list = this.byAddress.get(k);
      if (list === undefined) this.byAddress.set(k, (list = { items: [], head: 0 }));
      if (list.items[list.items.length - 1] !== r) list.items.push(r);
    }
  }

  freeze(b: Block): void {
    for (const r of b.txs) r.frozen = true;
    this.blocks.set(b.slot, b);
    this.order.push(b.slot);
    this.latest = b;
    this.hashHeights.set(b.blockhash, b.blockHeight);
    this.hashOrder.push(b.blockhash);
    while (this.hashOrder.length > MAX_BLOCKHASH_AGE + 1) this.hashHeights.delete(this.hashOrder.shift()!);
    this.evict();
  }

  private evict(): void {
    const keep = MAX_BLOCKHASH_AGE + 1;
    while (this.order.length - this.head > keep && (this.order.length - this.head > this.limits.maxSlots || this.txCount > this.limits.maxTransactions)) {
      const slot = this.order[this.head++]!;
      const b = this.blocks.get(slot)!;
      this.blocks.delete(slot);
      for (const r of b.txs) {
        this.bySig.delete(r.signature);
        this.txCount--;
        for (const k of r.keys) {
          const list = this.byAddress.get(k);
          // Oldest first, so the evicted record is at the front.
          if (list === undefined || list.items[list.head] !== r) continue;
          list.head++;
          if (list.head === list.items.length) this.byAddress.delete(k);
          else if (list.head > 1024 && list.head * 2 > list.items.length) {
            list.items.splice(0, list.head);
            list.head = 0;
          }
        }
      }
    }
    if (this.head > 1024 && this.head * 2 > this.order.length) {
      this.order.splice(0, this.head);
      this.head = 0;
    }
  }

  block(slot: number): Block | undefined {
    return this.blocks.get(slot);
  }

  firstSlot(): number {
    return this.order[this.head] ?? 0;
  }

  /** Frozen slots in [start, end], ascending. */
  slots(start: number, end: number, limit: number): number[] {
    const out: number[] = [];
    for (let i = this.head; i < this.order.length && out.length < limit; i++) {
      const s = this.order[i]!;
      if (s >= start && s <= end) out.push(s);
    }
    return out;
  }

  tx(signature: string): TxRecord | undefined {
    return this.bySig.get(signature);
  }

  /** The address's transactions, newest first. */
  *forAddress(address: string): Generator<TxRecord> {
    const list = this.byAddress.get(address);
    if (list === undefined) return;
    for (let i = list.items.length - 1; i >= list.head; i--) yield list.items[i]!;
  }

  /** Block height at which the blockhash was made, or undefined when it is unknown or too old. */
  blockhashHeight(hash: string): number | undefined {
    return this.hashHeights.get(hash);
  }

  recentBlocks(n: number): Block[] {
    const from = Math.max(this.head, this.order.length - n);
    return this.order.slice(from).map((s) => this.blocks.get(s)!);
  }

  transactionCount(): number {
    return this.txCount;
  }
}

export function b58(b: Uint8Array): string {
  return bs58.encode(b);
}
