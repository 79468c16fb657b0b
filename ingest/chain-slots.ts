import { SlotStatusCode } from '../bus/topics/stream-slot-status';

// Slot statuses from a chain node, without I/O (chain-watch.ts feeds it). What each input honestly says:
//
//   slotSubscribe {slot S, parent P, root R}
//       The node created bank S on P. A bank is built only on a parent it replayed in full, so P is PROCESSED.
//       (S itself is not: its bank has just started.) R is the node's root: R and its ancestors are FINALIZED as
//       far as this node knows. (The node's root is where its own tower is locked out; the cluster's finalized
//       slot — the supermajority root — can trail it by a little on a real cluster; on a single-node chain they
//       are the same slot.)
//   getSlot {commitment: confirmed} = C (polled)
//       C and its ancestors are CONFIRMED (optimistic confirmation; a confirmed slot's ancestors are too).
//
// slotSubscribe alone never says CONFIRMED; without the poll (no HTTP URL) a slot gets CONFIRMED only when it is
// rooted, just before FINALIZED (a rooted slot is confirmed). Every slot's statuses go out once each, in order;
// a status implied by a later one (PROCESSED by CONFIRMED, CONFIRMED by FINALIZED) is sent just before it when it
// was not sent yet, so a reader sees the whole ladder. Ancestors are walked through the parents the
// notifications named; a slot skipped on the node's fork is never named, and gets nothing.
//
// Memory: one entry per slot named (parent, statuses sent), at most maxSlots; the lowest slot goes first.

export interface ChainStatusEvent {
  slot: bigint;
  status: SlotStatusCode;
  observedAtMs: number;
}

const RANK_PROCESSED = 1;
const RANK_CONFIRMED = 2;
const RANK_FINALIZED = 3;
const STATUS_OF: readonly SlotStatusCode[] = [0 as SlotStatusCode, SlotStatusCode.processed, SlotStatusCode.confirmed, SlotStatusCode.finalized];

interface Entry {
  parent: number;
  rank: number;
}

export class ChainSlotStatuses {
  private readonly slots = new Map<number, Entry>();
  /** Highest slot each rank was reached by an ancestor walk: walks stop there. */
  private readonly walked = [-1, -1, -1, -1];

  constructor(
    private readonly emit: (e: ChainStatusEvent) => void,
    private readonly maxSlots = 4096,
  ) {}

  get size(): number {
    return this.slots.size;
  }

  /** A slotSubscribe notification. */
  slotNotification(slot: number, parent: number, root: number, ms: number): void {
    const e = this.entry(slot);
    if (parent < slot) e.parent = parent;
    if (parent < slot) this.reach(parent, RANK_PROCESSED, ms);
    if (root <= slot) this.reachWithAncestors(root, RANK_FINALIZED, ms);
  }

  /** The node's confirmed slot (getSlot at confirmed). */
  confirmedSlot(slot: number, ms: number): void {
    this.reachWithAncestors(slot, RANK_CONFIRMED, ms);
  }

  private reachWithAncestors(slot: number, rank: number, ms: number): void {
    if (slot <= this.walked[rank]!) return;
    // Collect the chain down to where the last walk of this rank stopped, then send oldest first.
    const chain: number[] = [];
    for (let s = slot; s > this.walked[rank]! && chain.length < this.maxSlots; ) {
      chain.push(s);
      const p = this.slots.get(s)?.parent;
      if (p === undefined || p < 0 || p >= s) break;
      s = p;
    }
    this.walked[rank] = slot;
    for (let i = chain.length - 1; i >= 0; i--) this.reach(chain[i]!, rank, ms);
  }

  /** Sends the statuses of `slot` up to `rank` that it has not had yet, in order. */
  private reach(slot: number, rank: number, ms: number): void {
    if (slot < 0) return;
    const e = this.entry(slot);
    for (let r = e.rank + 1; r <= rank; r++) {
      e.rank = r;
      this.emit({ slot: BigInt(slot), status: STATUS_OF[r]!, observedAtMs: ms });
    }
  }

  private entry(slot: number): Entry {
    let e = this.slots.get(slot);
    if (e !== undefined) return e;
    if (this.slots.size >= this.maxSlots) {
      let low = Infinity;
      for (const s of this.slots.keys()) if (s < low) low = s;
      this.slots.delete(low);
    }
    e = { parent: -1, rank: 0 };
    this.slots.set(slot, e);
    return e;
  }
}
