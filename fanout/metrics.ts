import { metrics, type Counter } from '../infra/base/metrics';
import type { EndReason } from './errors';
import type { StreamRefusal } from './stream-limits';
import type { OverflowLimit } from './subscriber-queue';

// The fanout's series in the process-wide registry. Registered once per process (the registry would add a
// second gauge series per call); gauges read live values from every running fanout instance at scrape time.

export interface GaugeSource {
  subscribers(): number;
  queueDepth(): { sum: number; max: number; bytes: number; lagMaxMs: number };
  connections(): number;
  budgetBytes(): number;
  indexKeys(): number;
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

metrics.gauge('meridian_fanout_queue_budget_bytes', 'Configured bound on bytes waiting in all subscriber queues together', undefined, () => sum((s) => s.budgetBytes()));
metrics.gauge('meridian_fanout_queue_lag_max_ms', 'Age of the oldest message waiting in any subscriber queue, ms', undefined, () => {
  let m = 0;
  for (const s of sources) m = Math.max(m, s.queueDepth().lagMaxMs);
  return m;
});
metrics.gauge('meridian_fanout_filter_keys', 'Filter keys held by all streams (bounded by fanout.maxKeysTotal)', undefined, () => sum((s) => s.indexKeys()));
metrics.gauge('meridian_fanout_connections', 'Connections holding at least one Subscribe stream', undefined, () => sum((s) => s.connections()));

const disconnects = new Map<EndReason, Counter>();
const slowConsumers = new Map<string, Counter>();
const refusals = new Map<string, Counter>();
const connectionErrors = new Map<string, Counter>();
const floodCloses = new Map<string, Counter>();

function labelled(m: Map<string, Counter>, name: string, help: string, label: string, value: string): Counter {
  let c = m.get(value);
  if (c === undefined) {
    c = metrics.counter(name, help, { [label]: value });
    m.set(value, c);
  }
  return c;
}

// Series an alert watches exist from the start at 0, not from their first event: increase() and rate() over a
// series that appears at 1 read 0, so the first slow consumer or refusal would otherwise go unseen.
const OVERFLOW_LIMITS: readonly OverflowLimit[] = ['bytes', 'messages', 'lag', 'budget'];
const REFUSALS: ReadonlyArray<StreamRefusal['per']> = ['connection', 'ip', 'server'];

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
  /** Subscribers ended with DATA_LOSS, by the bound they crossed (bytes, messages, lag, budget). */
  slowConsumer(limit: string): Counter {
    return labelled(slowConsumers, 'meridian_fanout_slow_consumers_total', 'Subscribers ended with DATA_LOSS, by the bound crossed (bytes|messages|lag: own queue; budget: all queues)', 'limit', limit);
  },
  /** Streams refused at open, by the cap (connection, ip, server). */
  streamRefused(per: string): Counter {
    return labelled(refusals, 'meridian_fanout_streams_refused_total', 'Subscribe streams refused at open by a stream cap (per connection, per IP, per server)', 'per', per);
  },
  /** Connections the own HTTP/2 server ended with a GOAWAY error, by HTTP/2 error code. */
  connectionError(code: string): Counter {
    return labelled(connectionErrors, 'meridian_fanout_connection_errors_total', 'Stream connections ended for a protocol error or abuse (HTTP/2 GOAWAY code)', 'code', code);
  },
  /**
   * Connections the own HTTP/2 server ended over a per-connection budget (fanout/h2/budget.ts), by what spent most
   * of it: client_reset, refused, stream_error, no_response (the reset budget: rapid reset and its variants);
   * empty_data, window_update, priority, settings, ping, unknown_frame, ignored_frame (frames that do nothing).
   */
  floodClose(reason: string): Counter {
    return labelled(floodCloses, 'meridian_fanout_h2_flood_closes_total', 'Stream connections ended with ENHANCE_YOUR_CALM over a per-connection budget, by what spent most of it', 'reason', reason);
  },
  filterUpdateMs: metrics.histogram('meridian_fanout_filter_update_ms', 'Server time to apply one filter-update message (decode, compile, index), ms', [0.1, 0.5, 1, 2, 5, 10, 20, 50, 100, 250]),
  filterUpdateKeys: metrics.counter('meridian_fanout_filter_update_keys_total', 'Keys carried by accepted filter-update messages'),
  addSource(s: GaugeSource): () => void {
    sources.add(s);
    return () => sources.delete(s);
  },
};

for (const l of OVERFLOW_LIMITS) fanoutMetrics.slowConsumer(l);
for (const p of REFUSALS) fanoutMetrics.streamRefused(p);
