// Where each slot begins on the bus: the stream.slots record of the slot's first shred (its offset and append
// time), for every slot the slots topic still retains. A v2 start from a slot is resolved through it: the slot
// record's offset starts the slot stream, its append time (less a margin) the transaction topic.
//
// Fed in bus order by the hub (it reads stream.slots from its first retained record at start, then live).
// Slots arrive nearly in order; an out-of-order one is inserted in place. Bounded by maxEntries (oldest dropped).

export interface SlotMark {
  slot: bigint;
  partition: number;
  offset: number;
  appendedAtMs: number;
}

export class SlotTimeline {
  private marks: SlotMark[] = [];

  constructor(private readonly maxEntries: number) {}

  get size(): number {
    return this.marks.length;
  }

  get oldest(): SlotMark | undefined {
    return this.marks[0];
  }

  /** The i-th mark in slot order (0 = oldest). */
  at(i: number): SlotMark | undefined {
    return this.marks[i];
  }

  get newest(): SlotMark | undefined {
    return this.marks[this.marks.length - 1];
  }

  add(m: SlotMark): void {
    const a = this.marks;
    let i = a.length;
    while (i > 0 && a[i - 1]!.slot > m.slot) i--;
    if (i > 0 && a[i - 1]!.slot === m.slot) return; // redundant ingest: the first record of a slot counts
    if (i === a.length) a.push(m);
    else a.splice(i, 0, m);
    if (a.length > this.maxEntries) this.marks = a.slice(a.length - Math.floor(this.maxEntries * 0.9));
  }

  /** Forgets slots whose records the bus no longer retains (offset below the partition's start). */
  dropBefore(partition: number, startOffset: number): void {
    this.marks = this.marks.filter((m) => m.partition !== partition || m.offset >= startOffset);
  }

  /**
   * The earliest append time of a mark at or past `offsets` (next offset per partition of the slots topic), or
   * undefined when there is none. Slots arrive nearly in order, so the scan runs back from the newest and stops
   * a little past the first mark below the offsets.
   */
  appendedAtOffset(offsets: readonly number[]): number | undefined {
    let at: number | undefined;
    let below = 0;
    for (let i = this.marks.length - 1; i >= 0 && below < 64; i--) {
      const m = this.marks[i]!;
      if (m.offset >= (offsets[m.partition] ?? 0)) {
        if (at === undefined || m.appendedAtMs < at) at = m.appendedAtMs;
      } else below++;
    }
    return at;
  }

  /** The mark of `slot`, or of the first slot after it the timeline holds; undefined past the newest. */
  atOrAfter(slot: bigint): SlotMark | undefined {
    let lo = 0;
    let hi = this.marks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.marks[mid]!.slot < slot) lo = mid + 1;
      else hi = mid;
    }
    return this.marks[lo];
  }
}
