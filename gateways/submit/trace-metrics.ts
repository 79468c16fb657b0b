import type { Counter, Histogram, Registry } from '../../infra/base/metrics';
import { SLOT_DELTA_BUCKETS } from './metrics';

// Overall trace series (per-route ones are in metrics.ts: RouteMetrics). Landing rate = landed / (landed +
// expired), from the counters; slot delta percentiles from the histogram (histogram_quantile).

/** ms from acceptance to first seen in shreds / to landing: slots are ~400 ms, blockhashes live ~60–90 s. */
export const TRACE_MS_BUCKETS = [50, 100, 200, 400, 800, 1200, 1600, 2000, 3000, 5000, 10_000, 20_000, 60_000, 120_000];

export class TraceMetrics {
  readonly landedOk: Counter;
  readonly landedFailed: Counter;
  readonly expired: Counter;
  readonly slotDelta: Histogram;
  readonly acceptToSeenMs: Histogram;
  readonly acceptToLandedMs: Histogram;
  readonly droppedCap: Counter;
  readonly droppedUnsettled: Counter;
  readonly statusCalls: Counter;
  readonly statusErrors: Counter;
  readonly blockhashChecks: Counter;
  readonly pollBacklog: Counter;

  constructor(registry: Registry, held: () => number) {
    const landed = 'Traced transactions that landed (a status from the chain node), by status';
    this.landedOk = registry.counter('meridian_submit_trace_landed_total', landed, { status: 'ok' });
    this.landedFailed = registry.counter('meridian_submit_trace_landed_total', landed, { status: 'failed' });
    this.expired = registry.counter('meridian_submit_trace_expired_total', 'Traced transactions whose blockhash aged out unlanded');
    this.slotDelta = registry.histogram('meridian_submit_trace_slot_delta', 'Landed slot minus slot at acceptance', SLOT_DELTA_BUCKETS);
    this.acceptToSeenMs = registry.histogram('meridian_submit_trace_seen_ms', 'ms from acceptance to first seen in shreds (stream.transactions)', TRACE_MS_BUCKETS);
    this.acceptToLandedMs = registry.histogram('meridian_submit_trace_landed_ms', 'ms from acceptance to the first status from the chain node', TRACE_MS_BUCKETS);
    registry.gauge('meridian_submit_traces_held', 'Traces held in memory', undefined, held);
    const dropped = 'Traces dropped from memory before their time: cap (the oldest made room), unsettled (held past the hold time without landing or expiring)';
    this.droppedCap = registry.counter('meridian_submit_traces_dropped_total', dropped, { reason: 'cap' });
    this.droppedUnsettled = registry.counter('meridian_submit_traces_dropped_total', dropped, { reason: 'unsettled' });
    this.statusCalls = registry.counter('meridian_submit_trace_status_calls_total', 'getSignatureStatuses calls made for traces');
    this.statusErrors = registry.counter('meridian_submit_trace_status_errors_total', 'Status or blockhash calls for traces that failed');
    this.blockhashChecks = registry.counter('meridian_submit_trace_blockhash_checks_total', 'isBlockhashValid calls made for traces');
    this.pollBacklog = registry.counter('meridian_submit_trace_poll_deferred_total', 'Pending traces not polled in a tick because the per-tick call budget was spent');
  }
}
