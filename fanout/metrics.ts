import { metrics, type Counter } from '../infra/metrics';
import type { EndReason } from './session';

// The fanout's series in the process-wide registry. Registered once per process (the registry would add a
// second gauge series per call); gauges read live values from every running fanout instance at scrape time.

export interface GaugeSource {
  subscribers(): number;
  queueDepth(): { sum: number; max: number; bytes: number };
}

const sources = new Set<GaugeSource>();

function sum(f: (s: GaugeSource) => number): number {
  let n = 0;
  for (const s of sources) n += f(s);
  return n;
}

metrics.gauge('meridian_fanout_subscribers', 'Open Subscribe streams', undefined, () => sum((s) => s.subscribers()));
metrics.gauge('meridian_fanout_queue_depth_sum', 'Messages waiting in subscriber queues, all subscribers', undefined, () => sum((s) => s.queueDepth().sum));
metrics.gauge('meridian_fanout_queue_depth_max', 'Messages waiting in the fullest subscriber queue', undefined, () => {
  let m = 0;
  for (const s of sources) m = Math.max(m, s.queueDepth().max);
  return m;
});
metrics.gauge('meridian_fanout_queue_bytes_sum', 'Bytes waiting in subscriber queues, all subscribers', undefined, () => sum((s) => s.queueDepth().bytes));

const disconnects = new Map<EndReason, Counter>();

export const fanoutMetrics = {
  messagesSent: metrics.counter('meridian_fanout_messages_sent_total', 'Responses handed to subscriber streams'),
  bytesSent: metrics.counter('meridian_fanout_bytes_sent_total', 'Response bytes handed to subscriber streams'),
  transactions: metrics.counter('meridian_fanout_transactions_total', 'stream.transactions records processed (after dedupe)'),
  dedupeDrops: metrics.counter('meridian_fanout_dedupe_drops_total', 'Records dropped as duplicates (same signature or slot within the window)'),
  badRecords: metrics.counter('meridian_fanout_bad_records_total', 'Bus records that did not decode'),
  latencyMs: metrics.histogram('meridian_fanout_e2e_latency_ms', 'From ingest observed-at to the write on the subscriber stream, ms'),
  disconnect(reason: EndReason): Counter {
    let c = disconnects.get(reason);
    if (c === undefined) {
      c = metrics.counter('meridian_fanout_disconnects_total', 'Ended Subscribe streams by reason', { reason });
      disconnects.set(reason, c);
    }
    return c;
  },
  addSource(s: GaugeSource): () => void {
    sources.add(s);
    return () => sources.delete(s);
  },
};
