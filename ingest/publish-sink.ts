import type { ProduceRecord } from '../bus/bus';
import { TOPIC } from '../bus/topics';
import { encodeSlotStatusRecord, SlotStatusSource } from '../bus/topics/stream-slot-status';
import { encodeSlotRecord, slotKey } from '../bus/topics/stream-slots';
import { encodeTxRecord } from '../bus/topics/stream-transactions';
import { encodeTransaction } from '../proto/wire';
import type { BatchOutput, PipelineSink } from './pipeline';
import type { Publisher } from './publisher';
import type { SlotStatusEvent } from './slot-status';

/** What the sink needs of a Publisher (benches measure without a bus through this). */
export type PublishTarget = Pick<Publisher, 'offer'>;

// Pipeline output → bus records. Each transaction is encoded to SubscribeResponseTransaction bytes once, here;
// a batch's records go out in one produce (key = signatures[0], observed-at = the batch's first shred
// arrival). A slot's first shred becomes one stream.slots record; each status the shreds show for a slot (its first
// shred included) one stream.slot-status record, through the same queue so the topic keeps the derived order. Encoding happens inside push(), so queued
// items hold compact records rather than decoded views.

export interface IngestTopics {
  transactions: string;
  slots: string;
  /** Slot statuses (bus/topics/stream-slot-status.ts); absent = not published (callers that name their own topics). */
  slotStatus?: string;
}

export const DEFAULT_TOPICS: IngestTopics = { transactions: TOPIC.streamTransactions, slots: TOPIC.streamSlots, slotStatus: TOPIC.streamSlotStatus };

/** The stream.transactions records of one batch, in transaction order. */
export function batchRecords(out: BatchOutput): ProduceRecord[] {
  const records = new Array<ProduceRecord>(out.txs.length);
  const observedAtMs = out.batch.firstSeenMs;
  for (let i = 0; i < out.txs.length; i++) {
    const d = out.txs[i]!;
    records[i] = {
      key: d.tx.signatures[0]!,
      value: encodeTxRecord({ slot: d.tx.slot, observedAtMs, accountKeys: d.staticKeys, message: encodeTransaction(d.tx) }),
    };
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
  return {
    batch(out) {
      if (out.txs.length === 0) return; // ticks only: nothing to stream
      const completedMs = out.batch.completedMs;
      publisher.offer({
        topic: topics.transactions,
        records: batchRecords(out),
        onPublished: onLatency === undefined ? undefined : (doneMs) => onLatency(doneMs - completedMs),
      });
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
