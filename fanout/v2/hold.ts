import type { BusMessage } from '../../bus/bus';
import type { TxRecord } from '../../bus/topics/stream-transactions';
import { allUnresolved } from './loaded-match';
import type { LoadedAddresses, TableLookup } from '../filter/loaded-addresses';

// The live hub's in-order hold (hub.ts): while a transaction record waits for its lookup tables, it and every
// record after it (of every topic) wait in bus order, so positions, cursors and every stream's seq follow the bus
// exactly as without resolution. A record is held at most the resolver's bound after its own arrival (resolution
// starts as it arrives). Capped: past HOLD_MAX_*, the oldest waiting record stops waiting and goes on with every
// table named unresolved.

/**
 * Records held behind one waiting for its tables, at most. A hold lasts at most waitMs (default 50 ms): at a
 * 4,000 tx/s stream that is ~200 records, so the cap is only reached with a much longer waitMs or a far faster
 * stream; the bytes cap bounds the memory the held records keep alive (records are ≤ 1232-byte transactions plus
 * keys, ~2 KiB).
 */
const HOLD_MAX_RECORDS = 16_384;
const HOLD_MAX_BYTES = 32 << 20;

export type HeldKind = 'tx' | 'slot' | 'status' | 'entry';

/** A bus record held in order behind one whose lookup tables are being resolved. */
export interface Held {
  m: BusMessage;
  kind: HeldKind;
  record: TxRecord | null;
  lookups: readonly TableLookup[] | null;
  loaded: LoadedAddresses | null;
  ready: boolean;
}

export class InOrderHold {
  private held: Array<Held | undefined> = [];
  private head = 0;
  private bytes = 0;
  private draining = false;
  private closed = false;
  readonly counts = { held: 0, capped: 0 };

  /** `process` takes each record once it is ready, in bus order. */
  constructor(private readonly process: (e: Held) => void) {}

  /** Nothing is held: a record that is ready may be processed at once. */
  get empty(): boolean {
    return this.head === this.held.length;
  }

  /** Queues a record, within the caps (past them, the oldest waiting record stops waiting), and drains. */
  push(e: Held): void {
    if (this.closed) return;
    this.held.push(e);
    this.counts.held++;
    this.bytes += e.m.value?.length ?? 0;
    while (this.held.length - this.head > HOLD_MAX_RECORDS || this.bytes > HOLD_MAX_BYTES) {
      // The head is the waiting record whenever something is held (drain runs up to the first one that waits).
      const w = this.held[this.head];
      if (w === undefined || w.ready) break;
      w.loaded = allUnresolved(w.lookups!);
      w.ready = true;
      this.counts.capped++;
      this.drain();
    }
    this.drain();
  }

  /** Processes held records from the head while they are ready, in bus order. */
  drain(): void {
    if (this.draining || this.closed) return;
    this.draining = true;
    try {
      while (this.head < this.held.length) {
        const e = this.held[this.head]!;
        if (!e.ready) break;
        this.held[this.head++] = undefined; // processed: not kept alive by the queue
        this.bytes -= e.m.value?.length ?? 0;
        this.process(e);
      }
      if (this.head === this.held.length) {
        this.held = [];
        this.head = 0;
      } else if (this.head > 1024 && this.head * 2 > this.held.length) {
        this.held = this.held.slice(this.head);
        this.head = 0;
      }
    } finally {
      this.draining = false;
    }
  }

  close(): void {
    this.closed = true;
    this.held = [];
    this.head = 0;
    this.bytes = 0;
  }
}
