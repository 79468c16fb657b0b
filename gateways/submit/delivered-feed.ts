import type { Bus, Consumer } from '../../bus/bus';
import { decodeSlotRecord } from '../../bus/topics/stream-slots';
import { SIGNATURE_SZ, decodeTxRecord } from '../../bus/topics/stream-transactions';
import { SignatureCache } from './signature-cache';
import type { TraceStore } from './trace-store';

// Marks signatures as delivered when they appear on `stream.transactions` (key = first signature, 64 raw
// bytes). An independent reader from 'latest': every instance sees every record. With traces on, the same
// reader also gives each traced transaction its "first seen in shreds" step (the record's slot and the time
// ingest observed its shreds: only the 20-byte header is read, and only for signatures being traced), and
// follows `stream.slots` for the slot at acceptance (the newest slot whose shreds ingest has seen).

export interface FeedTopics {
  transactions: string;
  /** Read only when traces are on. */
  slots: string;
}

/** `onSlot`: every slot ingest reports (the `tpu` route's slot estimate); reading slots is then on without traces too. */
export async function followDeliveries(bus: Bus, topics: FeedTopics, cache: SignatureCache, onMark?: () => void, traces?: TraceStore, onSlot?: (slot: number) => void): Promise<Consumer> {
  const slots = traces !== undefined || onSlot !== undefined;
  const consumer = await bus.consume({
    topics: slots ? [topics.transactions, topics.slots] : [topics.transactions],
    from: 'latest',
    onBatch: (messages) => {
      for (const m of messages) {
        if (m.topic === topics.slots && slots) {
          const s = m.value === null ? null : decodeSlotRecord(m.value);
          if (s !== null) {
            traces?.noteSlot(Number(s.slot));
            onSlot?.(Number(s.slot));
          }
          continue;
        }
        const k = m.key;
        if (k === null || k.length !== SIGNATURE_SZ) continue;
        const key = SignatureCache.key(k);
        if (cache.markDelivered(key)) onMark?.();
        if (traces !== undefined && m.value !== null && traces.get(key) !== undefined) {
          const r = decodeTxRecord(m.value);
          if (r.ok) traces.seen(key, Number(r.record.slot), r.record.observedAtMs);
        }
      }
    },
  });
  await consumer.ready;
  return consumer;
}
