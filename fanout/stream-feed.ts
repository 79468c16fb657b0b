import type { BusMessage } from '../bus/bus';
import { BLOCK_REF_FIRST_SHRED_OFF, BLOCK_REF_HEADER, BLOCK_REF_SZ, withBlockRef } from '../bus/topics/block-ref';
import { decodeTxRecord, SIGNATURE_SZ, TX_RECORD_SLOT_OFF } from '../bus/topics/stream-transactions';
import type { FanoutConfig } from './config';
import { RecentKeys } from './dedupe';
import type { LookupTables } from './lookup-tables/lookup-tables';
import type { Fanout } from './v1/hub';
import type { V2Hub } from './v2/hub';

// The fanout's one bus reader hands each record to both stream versions, decoded once. A stream.transactions
// record is dropped here for v1 when its signature and block were among the last fanout.dedupeWindow keys
// (redundant ingest workers publish the same transaction); v2 still gets it, since its cursors are bus positions
// and must pass every record. "Its block": the record's slot and its batch's place in the slot (the `blk` header,
// bus/topics/block-ref.ts) — a transaction a leader discarded before an UpdateParent and included again after it
// is at another place of the slot, and is delivered again, while redundant feeds of one block publish it at the
// same place. A record without the header (an older producer) is keyed by its signature alone, as before. A first-seen transaction feeds the lookup-table cache (its table-program
// instructions) before either hub matches it, so neither version depends on the other running to see tables move.
//
// v2 reads the retained slot history first (its slot timeline); v1 sees only live slots.

/** signature (64) ‖ slot (8) ‖ first shred of the batch (4). */
const DEDUPE_KEY_SZ = 64 + 8 + 4;

export class StreamFeed {
  private readonly txSeen: RecentKeys;
  private readonly keyScratch = Buffer.alloc(DEDUPE_KEY_SZ);

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
    this.txSeen = new RecentKeys(dedupeWindow, DEDUPE_KEY_SZ);
  }

  /** signature ‖ slot ‖ the batch's first shred, in one reused buffer; the signature alone without a `blk` header. */
  private dedupeKey(m: BusMessage & { key: Buffer; value: Buffer }): Buffer {
    const blk = m.headers[BLOCK_REF_HEADER];
    if (blk === undefined || blk.length < BLOCK_REF_SZ || m.key.length !== SIGNATURE_SZ || m.value.length < TX_RECORD_SLOT_OFF + 8) return m.key;
    const k = this.keyScratch;
    m.key.copy(k, 0);
    m.value.copy(k, SIGNATURE_SZ, TX_RECORD_SLOT_OFF, TX_RECORD_SLOT_OFF + 8);
    blk.copy(k, SIGNATURE_SZ + 8, BLOCK_REF_FIRST_SHRED_OFF, BLOCK_REF_FIRST_SHRED_OFF + 4);
    return k;
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
    const fresh = this.txSeen.firstSeen(this.dedupeKey(m as BusMessage & { key: Buffer; value: Buffer }));
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
    const r = v2 === undefined ? d.record : withBlockRef(d.record, m.headers);
    if (fresh) {
      this.tables?.observer.observe(r.accountKeys, r.message, r.slot);
      this.v1.transaction(r);
    }
    v2?.onTransaction(m, r);
  }
}
