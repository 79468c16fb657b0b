import type { Bus, Consumer } from '../../bus/bus';
import { SIGNATURE_SZ } from '../../bus/topics/stream-transactions';
import { SignatureCache } from './signature-cache';

// Marks signatures as delivered when they appear on `stream.transactions` (key = first signature, 64 raw
// bytes; the value is not needed). An independent reader from 'latest': every instance sees every record.

export async function followDeliveries(bus: Bus, topic: string, cache: SignatureCache, onMark?: () => void): Promise<Consumer> {
  const consumer = await bus.consume({
    topics: [topic],
    from: 'latest',
    onBatch: (messages) => {
      for (const m of messages) {
        const k = m.key;
        if (k === null || k.length !== SIGNATURE_SZ) continue;
        if (cache.markDelivered(SignatureCache.key(k))) onMark?.();
      }
    },
  });
  await consumer.ready;
  return consumer;
}
