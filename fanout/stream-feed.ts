import type { BusMessage } from '../bus/bus';
import { decodeTxRecord } from '../bus/topics/stream-transactions';
import type { FanoutConfig } from './config';
import { RecentKeys } from './dedupe';
import type { LookupTables } from './lookup-tables/lookup-tables';
import type { Fanout } from './v1/hub';
import type { V2Hub } from './v2/hub';

// The fanout's one bus reader hands each record to both stream versions, decoded once. A stream.transactions
// record is dropped here for v1 when its signature (the record key) was among the last fanout.dedupeWindow keys
// (redundant ingest workers publish the same transaction); v2 still gets it, since its cursors are bus positions
// and must pass every record. A first-seen transaction feeds the lookup-table cache (its table-program
// instructions) before either hub matches it, so neither version depends on the other running to see tables move.
//
// v2 reads the retained slot history first (its slot timeline); v1 sees only live slots.

export class StreamFeed {
  private readonly txSeen: RecentKeys;

  constructor(
    private readonly topics: Pick<FanoutConfig['topics'], 'transactions' | 'slots'>,
    dedupeWindow: number,
    private readonly v1: Fanout,
    private readonly v2: V2Hub | undefined,
    /** The process's lookup-table cache, when one is configured. */
    private readonly tables: LookupTables | undefined,
    /** The v2 topics this reader was started on ('' when absent from the bus). */
    private readonly v2Topics: { slotStatus: string; entries: string } = { slotStatus: '', entries: '' },
  ) {
    this.txSeen = new RecentKeys(dedupeWindow);
  }

  /** The bus handler (one partition's batch, in order). */
  readonly onBatch = (messages: BusMessage[]): void => {
    const { transactions, slots } = this.topics;
    const v2 = this.v2;
    for (const m of messages) {
      if (m.topic === transactions) this.transaction(m);
      else if (m.topic === slots) {
        if (v2 === undefined) this.v1.slot(m);
        else {
          if (!v2.isSlotHistory(m)) this.v1.slot(m);
          v2.onSlot(m);
        }
      } else if (v2 === undefined) continue;
      else if (m.topic === this.v2Topics.slotStatus) v2.onSlotStatus(m);
      else if (m.topic === this.v2Topics.entries) v2.onEntry(m);
    }
  };

  private transaction(m: BusMessage): void {
    const v2 = this.v2;
    if (m.key === null || m.value === null) {
      this.v1.bad('transaction record without key or value');
      v2?.onTransaction(m);
      return;
    }
    const fresh = this.txSeen.firstSeen(m.key);
    if (!fresh) {
      this.v1.duplicate();
      if (v2 === undefined) return;
    }
    const d = decodeTxRecord(m.value, m.headers);
    if (!d.ok) {
      if (fresh) this.v1.bad(d.reason);
      v2?.onTransaction(m);
      return;
    }
    const r = d.record;
    if (fresh) {
      this.tables?.observer.observe(r.accountKeys, r.message, r.slot);
      this.v1.transaction(r);
    }
    v2?.onTransaction(m, r);
  }
}
