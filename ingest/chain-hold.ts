import type { ChainStatusEvent } from './chain-slots';

// Chain statuses wait, for a while, for the shreds. A leader's node — and the local chain is one — knows a slot is
// processed the moment it freezes it, which is when its last shreds leave; the notification then beats the shreds
// to ingest, and a reader that sends each status once and in order would never show that slot as completed or
// decoded. So a chain status of a slot waits until ingest has decoded the slot (or found it dead), or `holdMs`
// after it arrived, whichever comes first; then it goes out, in arrival order per slot. On a cluster where ingest
// hears the slot from turbine, the shreds come well before the node's notifications and nothing waits long; a slot
// ingest never sees waits the full holdMs.
//
// Bounded: at most maxHeld statuses wait; past that the oldest goes out at once.

export interface ChainHoldOptions {
  holdMs: number;
  maxHeld: number;
  release: (e: ChainStatusEvent) => void;
  now?: () => number;
}

interface Waiting {
  e: ChainStatusEvent;
  dueMs: number;
}

/** Slots ingest finished, remembered so later chain statuses of them go out at once (bounded, oldest first). */
const MAX_DONE = 4096;

export class ChainStatusHold {
  private held: Waiting[] = [];
  private readonly done = new Set<bigint>();
  private readonly now: () => number;
  released = 0;
  timedOut = 0;

  constructor(private readonly o: ChainHoldOptions) {
    this.now = o.now ?? Date.now;
  }

  get size(): number {
    return this.held.length;
  }

  offer(e: ChainStatusEvent): void {
    if (this.done.has(e.slot) && !this.held.some((w) => w.e.slot === e.slot)) return this.out(e);
    this.held.push({ e, dueMs: this.now() + this.o.holdMs });
    while (this.held.length > this.o.maxHeld) this.out(this.held.shift()!.e);
  }

  /** Ingest decoded the slot, or found it dead: its waiting statuses go out now. */
  ingestDone(slot: bigint): void {
    this.done.add(slot);
    if (this.done.size > MAX_DONE) this.done.delete(this.done.values().next().value!);
    if (!this.held.some((w) => w.e.slot === slot)) return;
    const keep: Waiting[] = [];
    for (const w of this.held) {
      if (w.e.slot === slot) this.out(w.e);
      else keep.push(w);
    }
    this.held = keep;
  }

  /** Lets out what waited its holdMs (called on a timer); in arrival order. */
  tick(): void {
    const t = this.now();
    let i = 0;
    while (i < this.held.length && this.held[i]!.dueMs <= t) {
      this.timedOut++;
      this.out(this.held[i]!.e);
      i++;
    }
    if (i > 0) this.held = this.held.slice(i);
  }

  /** Everything waiting goes out (shutdown). */
  flush(): void {
    for (const w of this.held) this.out(w.e);
    this.held = [];
  }

  private out(e: ChainStatusEvent): void {
    this.released++;
    this.o.release(e);
  }
}
