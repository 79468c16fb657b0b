import type { ProduceRecord } from '../bus/bus';
import { TOPIC } from '../bus/topics';
import { encodeSlotStatusRecord, SlotStatusSource } from '../bus/topics/stream-slot-status';
import { encodeEntryRecord, entryKey, type EntryTick, type EntryTx } from '../bus/topics/stream-entries';
import { encodeSlotRecord, slotKey } from '../bus/topics/stream-slots';
import { BLOCK_REF_HEADER } from '../bus/topics/block-ref';
import { PUBKEY_SZ, SIGNATURE_SZ, TX_RECORD_HEADER_SZ, txRecordSize, writeTxRecordHead } from '../bus/topics/stream-transactions';
import { encodeFactsHeaderInto, FACTS_HEADER, factsHeaderSize } from '../bus/topics/stream-transactions-facts';
import { encodeLookupsHeader, LOOKUPS_HEADER } from '../bus/topics/stream-transactions-lookups';
import { encodeTransactionInto, transactionSize } from '../proto/wire';
import { SlotEntryIndex, type Placement } from './entry/slot-entry-index';
import type { BatchOutput, PipelineSink } from './pipeline';
import type { Publisher } from './publisher';
import type { SlotStatusEvent } from './slot-status';

/** What the sink needs of a Publisher (benches measure without a bus through this). */
export type PublishTarget = Pick<Publisher, 'offer'>;

// Pipeline output → bus records. Each transaction is encoded to SubscribeResponseTransaction bytes once, here,
// into its record; a batch's records are one publisher item (key = signatures[0], observed-at = the batch's first shred
// arrival). A slot's first shred becomes one stream.slots record; each status the shreds show for a slot (its first
// shred included) one stream.slot-status record, through the same queue so the topic keeps the derived order. Each
// decoded entry becomes one stream.entries record (a run of ticks rides in the next entry's record), produced after the batch's transactions (their
// latency comes first), with the entry's slot-wide position when known (entry/slot-entry-index.ts) and its
// transactions' wire bytes. Encoding happens inside push(), so queued items hold compact records rather than
// decoded views.

export interface IngestTopics {
  transactions: string;
  slots: string;
  /** Slot statuses (bus/topics/stream-slot-status.ts); absent = not published (callers that name their own topics). */
  slotStatus?: string;
  /** Absent: no entry records are published. */
  entries?: string;
}

export const DEFAULT_TOPICS: IngestTopics = {
  transactions: TOPIC.streamTransactions,
  slots: TOPIC.streamSlots,
  slotStatus: TOPIC.streamSlotStatus,
  entries: TOPIC.streamEntries,
};

/** The lookups header of a transaction without lookups (most of them): one value for all, never written to. */
const NO_LOOKUPS = encodeLookupsHeader([]);

/** Where encodeTransactionInto writes what the facts header needs (module scratch; grows for a long message). */
let positions = new Int32Array(65);
/** Each transaction's message size, between batchRecords' two passes (module scratch; grows for a long batch). */
let sizes = new Int32Array(64);

/**
 * The stream.transactions records of one batch, in transaction order, each with its lookups header (the fanout
 * matches loaded addresses from it without reading the message: stream-transactions-lookups.ts) and its facts
 * header (what the v2 filters on instructions, roles, signatures and votes need: stream-transactions-facts.ts).
 * Every value and facts header of the batch is a view of one allocation: a buffer each drew on Node's 8 KiB pool,
 * which a batch of 1 KiB records ran through every eight records (a fresh ArrayBuffer each time, then its
 * collection) — measured as the largest part of building the records. The records of a batch travel together
 * (one publisher item, one produce), so the allocation is held no longer than any of them would be.
 */
export function batchRecords(out: BatchOutput): ProduceRecord[] {
  const txs = out.txs;
  const records = new Array<ProduceRecord>(txs.length);
  const observedAtMs = out.batch.firstSeenMs;
  const block = out.block;
  if (sizes.length < txs.length) sizes = new Int32Array(Math.max(txs.length, 2 * sizes.length));
  let total = 0;
  for (let i = 0; i < txs.length; i++) {
    const d = txs[i]!;
    const size = transactionSize(d.tx);
    sizes[i] = size;
    total += txRecordSize(d.staticKeys, size) + factsHeaderSize(d.tx);
  }
  const slab = Buffer.allocUnsafe(total);
  let o = 0;
  for (let i = 0; i < txs.length; i++) {
    const d = txs[i]!;
    const tx = d.tx;
    const size = sizes[i]!;
    const len = txRecordSize(d.staticKeys, size);
    const value = slab.subarray(o, o + len);
    o += len;
    writeTxRecordHead(value, tx.slot, observedAtMs, d.staticKeys);
    if (positions.length < 1 + tx.instructions.length) positions = new Int32Array(1 + tx.instructions.length);
    encodeTransactionInto(value, TX_RECORD_HEADER_SZ + d.staticKeys.length, tx, size, positions);
    const lookups = tx.addressTableLookups.length === 0 ? NO_LOOKUPS : encodeLookupsHeader(tx.addressTableLookups);
    const factsLen = factsHeaderSize(tx);
    const facts = slab.subarray(o, o + factsLen);
    o += factsLen;
    // Every record of the batch names its block (block-ref.ts) beside its own lookups and facts.
    const headers: Record<string, Buffer> = block === undefined ? { [LOOKUPS_HEADER]: lookups } : { [BLOCK_REF_HEADER]: block, [LOOKUPS_HEADER]: lookups };
    if (encodeFactsHeaderInto(tx, positions, facts)) headers[FACTS_HEADER] = facts;
    records[i] = { key: tx.signatures[0]!, value, headers };
  }
  return records;
}

/**
 * The stream.entries records of one batch, in entry order: its whole entries (a batch that failed part-way publishes
 * the entries before the failure; the transactions decoded in the entry it stopped in go to stream.transactions
 * only, since that entry's header promises more than was read). A run of ticks (entries without transactions) rides
 * in the record of the entry after it, a run at the batch's end in the record of its last tick
 * (bus/topics/stream-entries.ts, VERSION 2): a tick costs 40 bytes in a record, not a record. `at` = the slot-wide
 * position of the batch's first entry, null when unknown.
 */
export function entryRecords(out: BatchOutput, at: Placement | null): ProduceRecord[] {
  const { slot, firstShred, firstSeenMs } = out.batch;
  const entries = out.entries;
  const records: ProduceRecord[] = [];
  let entry = at?.entry ?? 0;
  let tx = at?.tx ?? 0;
  const headers = out.block === undefined ? undefined : { [BLOCK_REF_HEADER]: out.block };
  let ticks: EntryTick[] | undefined;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    const n = e.txs.length;
    if (n === 0 && i + 1 < entries.length) {
      (ticks ??= []).push({ numHashes: e.numHashes, hash: e.hash });
      entry++;
      continue;
    }
    const signatures = Buffer.allocUnsafe(n * SIGNATURE_SZ);
    const txs = new Array<EntryTx>(n);
    for (let t = 0; t < n; t++) {
      const d = e.txs[t]!;
      d.tx.signatures[0]!.copy(signatures, t * SIGNATURE_SZ);
      const wire = e.wires[t]!;
      // staticKeys is a view into the same batch payload as the wire bytes: its offset within them.
      txs[t] = { wire, keysOffset: d.staticKeys.byteOffset - wire.byteOffset, keyCount: d.staticKeys.length / PUBKEY_SZ };
    }
    records.push({
      key: entryKey(slot, firstShred, i),
      value: encodeEntryRecord({ slot, index: at === null ? null : { entry, firstTx: tx }, batchFirstShred: firstShred, indexInBatch: i, numHashes: e.numHashes, hash: e.hash, observedAtMs: firstSeenMs, signatures, txs, ticks }),
      headers,
    });
    ticks = undefined;
    entry++;
    tx += n;
  }
  return records;
}

export interface PublishSinkOptions {
  topics?: IngestTopics;
  /** Completion of a batch's last set → its produce resolved, ms (bench, latency histogram). */
  onLatency?: (ms: number) => void;
}

export function publishSink(publisher: PublishTarget, opts: PublishSinkOptions = {}): PipelineSink {
  const topics = opts.topics ?? DEFAULT_TOPICS;
  const onLatency = opts.onLatency;
  const statusTopic = topics.slotStatus;
  const entriesTopic = topics.entries;
  const positions = new SlotEntryIndex();
  return {
    batch(out) {
      if (out.txs.length > 0) {
        const completedMs = out.batch.completedMs;
        publisher.offer({
          topic: topics.transactions,
          records: batchRecords(out),
          onPublished: onLatency === undefined ? undefined : (doneMs) => onLatency(doneMs - completedMs),
        });
      }
      if (entriesTopic === undefined) return;
      // Every batch is counted, empty ones too (they tile the slot like the others).
      let txs = 0;
      for (const e of out.entries) txs += e.txs.length;
      const b = out.batch;
      const at = positions.place(b.slot, b.firstShred, b.lastShred, out.entries.length, txs, out.decode.ok);
      if (out.entries.length > 0) publisher.offer({ topic: entriesTopic, records: entryRecords(out, at) });
    },
    slot(slot, firstSeenMs) {
      publisher.offer({ topic: topics.slots, records: [{ key: slotKey(slot), value: encodeSlotRecord({ slot, firstSeenMs }) }] });
    },
    ...(statusTopic === undefined
      ? {}
      : {
          slotStatus(e: SlotStatusEvent) {
            publisher.offer({ topic: statusTopic, records: [{ key: slotKey(e.slot), value: encodeSlotStatusRecord({ ...e, source: SlotStatusSource.shreds }) }] });
          },
        }),
  };
}
