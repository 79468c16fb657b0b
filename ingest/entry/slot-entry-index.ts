// Where a batch's entries sit in their slot: the slot-wide index of its first entry and of its first
// transaction (what stream.entries records carry as index / starting transaction index). A batch starts at a
// known data shred (its first set's fec_set_index) and batches tile a slot from shred 0 with no overlap
// (reassembler.ts), so a batch's entries are numbered when every batch before it in the slot has been counted:
// this keeps, per slot, the frontier of batches counted from shred 0 (the next shred expected, entries and
// transactions so far).
//
// A batch that completes before its predecessor (out-of-order FEC completion, a worker that joined mid-slot) is
// placed without an index, and remembered so that the frontier can pass it once the gap closes: the batches
// after it are numbered again. A batch that failed to decode part-way has an unknown entry count, so the slot's
// frontier stops there: later batches of that slot carry no index. Nothing is ever numbered wrongly.
//
// Bounds: at most `maxSlots` slots (the oldest by slot number goes first) and MAX_WAITING batches waiting per slot.

export interface Placement {
  /** Slot-wide index of the batch's first entry and of its first transaction. */
  entry: number;
  tx: number;
}

interface SlotFrontier {
  /** The first data shred of the batch that comes next; -1 once a broken batch stopped counting. */
  next: number;
  entries: number;
  txs: number;
  /** Batches seen ahead of the frontier, by first shred: their last shred and counts (or null = broken). */
  waiting: Map<number, { last: number; entries: number; txs: number } | null>;
}

/** reassembler.ts MAX_SETS_PER_SLOT: a slot holds at most that many batches. */
const MAX_WAITING = 1024;

export class SlotEntryIndex {
  private readonly slots = new Map<bigint, SlotFrontier>();

  constructor(private readonly maxSlots = 1024) {}

  /**
   * Counts one batch (`firstShred..lastShred`, `entries` whole entries holding `txs` transactions; `complete` =
   * the batch decoded to its end) and answers where its first entry sits, or null when that is not known yet.
   */
  place(slot: bigint, firstShred: number, lastShred: number, entries: number, txs: number, complete: boolean): Placement | null {
    let f = this.slots.get(slot);
    if (f === undefined) {
      f = { next: 0, entries: 0, txs: 0, waiting: new Map() };
      this.slots.set(slot, f);
      if (this.slots.size > this.maxSlots) this.evictOldest();
    }
    if (f.next < 0 || firstShred !== f.next) {
      if (f.next >= 0 && firstShred > f.next && f.waiting.size < MAX_WAITING) f.waiting.set(firstShred, complete ? { last: lastShred, entries, txs } : null);
      return null;
    }
    const at: Placement = { entry: f.entries, tx: f.txs };
    this.advance(f, lastShred, entries, txs, complete);
    // The batches that were waiting on this one: the frontier passes them (they were published without an index).
    for (let w = f.waiting.get(f.next); f.next >= 0 && w !== undefined; w = f.waiting.get(f.next)) {
      f.waiting.delete(f.next);
      if (w === null) f.next = -1;
      else this.advance(f, w.last, w.entries, w.txs, true);
    }
    return at;
  }

  get size(): number {
    return this.slots.size;
  }

  private advance(f: SlotFrontier, lastShred: number, entries: number, txs: number, complete: boolean): void {
    f.entries += entries;
    f.txs += txs;
    f.next = complete ? lastShred + 1 : -1;
    if (f.next < 0) f.waiting.clear();
  }

  private evictOldest(): void {
    let oldest: bigint | undefined;
    for (const s of this.slots.keys()) if (oldest === undefined || s < oldest) oldest = s;
    if (oldest !== undefined) this.slots.delete(oldest);
  }
}
