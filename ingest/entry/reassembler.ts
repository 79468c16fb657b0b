import { DATA_SHREDS_PER_SET, type CompletedFecSet } from '../fec-set';

// FEC sets → entry batches. Batches start and end on set boundaries: a batch runs from a start set (fec 0 of
// the slot, or the set after one whose last data shred carries DATA_COMPLETE) through the next DATA_COMPLETE
// set, with no set missing. Sets arrive in any order; a slot's sets wait here until their run is whole.
//
// Joining mid-slot (or after a set was lost outright) leaves a run whose predecessor is unknown. Such a run
// is emitted only if its payload decodes cleanly as a batch with at least one entry (`decode` says ok): a run
// that starts mid-batch practically never does, and otherwise a receiver that starts late would lose the
// rest of the slot. An empty decode is refused there, because a padding-only set in the middle of a batch
// would pass and then orphan the real start.
//
// Bounds: slots older than `slotWindow` below the highest slot seen are evicted; at most `maxPendingSets`
// sets wait in all (the oldest slot goes first). What is evicted unfinished is counted as abandoned. When the
// resolver re-anchors its window (a cluster restart to a lower slot, a jump), reset() starts over with it.

/** index < 32768 (spec §1) → at most 1024 sets per slot. */
export const MAX_SETS_PER_SLOT = 1024;
const DONE = 1;
const START = 2;

export interface EntryBatch {
  slot: bigint;
  parentOffset: number;
  /** = fec_set_index of the first set = index of the first data shred. */
  firstShred: number;
  /** Index of the last data shred (last set's fec_set_index + 31). */
  lastShred: number;
  sets: number;
  /** The data shreds' entry bytes, concatenated in index order. */
  payload: Buffer;
  lastInSlot: boolean;
  /** false = the start was inferred from a clean decode (predecessor set never seen). */
  startKnown: boolean;
  /** Earliest first-shred arrival over the batch's sets, and when the last of its sets completed. */
  firstSeenMs: number;
  completedMs: number;
}

export interface Reassembled<D> {
  batch: EntryBatch;
  decoded: D;
}

export interface Decodes {
  ok: boolean;
  entries: readonly unknown[];
}

export interface ReassemblerOptions<D extends Decodes> {
  slotWindow: number;
  maxPendingSets?: number;
  decode: (payload: Buffer, slot: bigint) => D;
}

export interface ReassemblerStats {
  batches: number;
  batchesInferredStart: number;
  probeRefused: number;
  duplicateSets: number;
  staleSets: number;
  badSets: number;
  abandonedSets: number;
  abandonedBatches: number;
}

interface SlotState {
  pending: Map<number, CompletedFecSet>; // by set position (fec / 32)
  flags: Uint8Array; // DONE | START per position
}

export class BatchReassembler<D extends Decodes> {
  readonly stats: ReassemblerStats = {
    batches: 0,
    batchesInferredStart: 0,
    probeRefused: 0,
    duplicateSets: 0,
    staleSets: 0,
    badSets: 0,
    abandonedSets: 0,
    abandonedBatches: 0,
  };
  private readonly slots = new Map<bigint, SlotState>();
  private pendingSets = 0;
  private highest = -1n;
  private readonly window: bigint;
  private readonly maxPending: number;
  private readonly decode: (payload: Buffer, slot: bigint) => D;

  constructor(opts: ReassemblerOptions<D>) {
    this.window = BigInt(opts.slotWindow);
    this.maxPending = opts.maxPendingSets ?? 2048;
    this.decode = opts.decode;
  }

  /**
   * Forgets every slot (pending sets count as abandoned) and the highest slot, as at construction. Called when
   * the FEC resolver re-anchors its window: slots below the old window would otherwise be dropped as stale, and
   * a slot number seen before the jump must not inherit its DONE marks.
   */
  reset(): void {
    for (const slot of [...this.slots.keys()]) this.evict(slot);
    this.highest = -1n;
  }

  sizes(): { slots: number; pendingSets: number } {
    return { slots: this.slots.size, pendingSets: this.pendingSets };
  }

  push(set: CompletedFecSet): Array<Reassembled<D>> {
    const out: Array<Reassembled<D>> = [];
    const pos = set.fecSetIndex / DATA_SHREDS_PER_SET;
    if (!Number.isInteger(pos) || pos < 0 || pos >= MAX_SETS_PER_SLOT || set.payloads.length !== DATA_SHREDS_PER_SET) {
      this.stats.badSets++;
      return out;
    }
    if (set.slot > this.highest) {
      this.highest = set.slot;
      this.evictBelow(this.highest - this.window);
    } else if (set.slot < this.highest - this.window) {
      this.stats.staleSets++;
      return out;
    }
    const st = this.slotState(set.slot);
    if ((st.flags[pos]! & DONE) !== 0 || st.pending.has(pos)) {
      this.stats.duplicateSets++;
      return out;
    }
    st.pending.set(pos, set);
    this.pendingSets++;
    if (set.dataComplete && pos + 1 < MAX_SETS_PER_SLOT) st.flags[pos + 1]! |= START;
    this.tryRun(set.slot, st, this.runStart(st, pos), out);
    if (set.dataComplete) this.tryRun(set.slot, st, pos + 1, out);
    while (this.pendingSets > this.maxPending) this.evictOldest();
    return out;
  }

  /** Walks back over pending sets that cannot end a batch, to where the run containing `pos` begins. */
  private runStart(st: SlotState, pos: number): number {
    let s = pos;
    while (s > 0 && (st.flags[s]! & START) === 0) {
      const prev = st.pending.get(s - 1);
      if (prev === undefined || prev.dataComplete) break;
      s--;
    }
    return s;
  }

  private tryRun(slot: bigint, st: SlotState, start: number, out: Array<Reassembled<D>>): void {
    for (let s = start; s < MAX_SETS_PER_SLOT && st.pending.has(s); ) {
      let e = s;
      while (st.pending.has(e) && !st.pending.get(e)!.dataComplete) e++;
      if (!st.pending.has(e)) return; // a set of the run is still missing
      const known = (st.flags[s]! & START) !== 0;
      // A pending predecessor that did not complete a batch means `s` is mid-batch: wait for the real start.
      if (!known && st.pending.has(s - 1)) return;
      const batch = this.assemble(slot, st, s, e, known);
      const decoded = this.decode(batch.payload, slot);
      if (!known && (!decoded.ok || decoded.entries.length === 0)) {
        this.stats.probeRefused++;
        return;
      }
      for (let q = s; q <= e; q++) {
        st.pending.delete(q);
        st.flags[q]! |= DONE;
      }
      this.pendingSets -= e - s + 1;
      this.stats.batches++;
      if (!known) this.stats.batchesInferredStart++;
      out.push({ batch, decoded });
      s = e + 1; // e completed a batch, so the next set starts one
    }
  }

  private assemble(slot: bigint, st: SlotState, s: number, e: number, startKnown: boolean): EntryBatch {
    const parts: Buffer[] = [];
    let firstSeenMs = Infinity;
    let completedMs = 0;
    let last: CompletedFecSet | undefined;
    for (let q = s; q <= e; q++) {
      const set = st.pending.get(q)!;
      for (const p of set.payloads) parts.push(p);
      if (set.firstSeenMs < firstSeenMs) firstSeenMs = set.firstSeenMs;
      if (set.completedMs > completedMs) completedMs = set.completedMs;
      last = set;
    }
    const first = st.pending.get(s)!;
    return {
      slot,
      parentOffset: first.parentOffset,
      firstShred: s * DATA_SHREDS_PER_SET,
      lastShred: e * DATA_SHREDS_PER_SET + DATA_SHREDS_PER_SET - 1,
      sets: e - s + 1,
      payload: Buffer.concat(parts),
      lastInSlot: last!.lastInSlot,
      startKnown,
      firstSeenMs,
      completedMs,
    };
  }

  private slotState(slot: bigint): SlotState {
    let st = this.slots.get(slot);
    if (st === undefined) {
      st = { pending: new Map(), flags: new Uint8Array(MAX_SETS_PER_SLOT) };
      st.flags[0] = START;
      this.slots.set(slot, st); // at most window + 1 slots: older ones were evicted when `highest` moved
    }
    return st;
  }

  private evictBelow(floor: bigint): void {
    for (const slot of [...this.slots.keys()]) if (slot < floor) this.evict(slot);
  }

  /** Over the pending cap: drop the oldest slot that holds pending sets (keeping DONE marks elsewhere). */
  private evictOldest(): void {
    let oldest: bigint | null = null;
    for (const [slot, st] of this.slots) if (st.pending.size > 0 && (oldest === null || slot < oldest)) oldest = slot;
    if (oldest !== null) this.evict(oldest);
  }

  private evict(slot: bigint): void {
    const st = this.slots.get(slot);
    if (st === undefined) return;
    this.slots.delete(slot);
    if (st.pending.size === 0) return;
    // Each maximal group of pending sets that could belong to one batch counts as one abandoned batch.
    const positions = [...st.pending.keys()].sort((a, b) => a - b);
    let prev = -2;
    for (const p of positions) {
      if (p !== prev + 1 || st.pending.get(prev)?.dataComplete === true) this.stats.abandonedBatches++;
      prev = p;
    }
    this.stats.abandonedSets += st.pending.size;
    this.pendingSets -= st.pending.size;
  }
}
