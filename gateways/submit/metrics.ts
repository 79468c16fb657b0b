import { metrics as defaultRegistry, type Counter, type Histogram, type Registry } from '../../infra/base/metrics';
import { REJECT_REASONS, type RejectReason } from './rejections';

// Every submission is counted once, by transport and result (accepted, duplicate = suppressed after delivery,
// or the rejection reason). All series exist from the start, so a scrape shows zeros rather than nothing.

export const TRANSPORTS = ['jsonrpc', 'binary', 'plaintext', 'udp', 'quic'] as const;
export type Transport = (typeof TRANSPORTS)[number];
export type SubmitResult = 'accepted' | 'duplicate' | RejectReason;

/** Slot delta (landed slot − slot at acceptance) buckets: a slot is ~400 ms; a blockhash lives ~150 slots. */
export const SLOT_DELTA_BUCKETS = [0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 75, 100, 150];

/**
 * One route's series. Landing is attributed to every route whose attempt for the transaction succeeded (each
 * route gets every transaction, so which one carried it to the leader is not knowable from here).
 */
export interface RouteMetrics {
  attempts: Counter;
  errors: Counter;
  /** Not tried: the route was at its in-flight cap. */
  skipped: Counter;
  landed: Counter;
  expired: Counter;
  slotDelta: Histogram;
}

export class SubmitMetrics {
  private readonly routes = new Map<string, RouteMetrics>();
  private readonly submissions = {} as Record<Transport, Record<SubmitResult, Counter>>;
  readonly forwarded: Counter;
  readonly forwardDropped: Counter;
  readonly forwardErrors: Counter;
  readonly deliveredMarks: Counter;
  /** Datagrams that never reached the pipeline (too short to hold a key). */
  readonly udpMalformed: Counter;

  constructor(readonly registry: Registry = defaultRegistry) {
    const help = 'Submissions by transport and result (accepted, duplicate, or the rejection reason)';
    for (const t of TRANSPORTS) {
      const byResult = {} as Record<SubmitResult, Counter>;
      for (const r of ['accepted', 'duplicate', ...REJECT_REASONS] as SubmitResult[]) {
        byResult[r] = registry.counter('meridian_submit_submissions_total', help, { transport: t, result: r });
      }
      this.submissions[t] = byResult;
    }
    this.forwarded = registry.counter('meridian_submit_forward_sent_total', 'Forward requests sent to routes (one per route)');
    this.forwardDropped = registry.counter('meridian_submit_forward_dropped_total', 'Forwards not sent to a target because its in-flight cap was reached');
    this.forwardErrors = registry.counter('meridian_submit_forward_errors_total', 'Forwards that failed after dispatch (never reported to clients)');
    this.deliveredMarks = registry.counter('meridian_submit_delivered_marks_total', 'Forwarded signatures later seen on stream.transactions');
    this.udpMalformed = registry.counter('meridian_submit_udp_malformed_total', 'UDP datagrams too short to carry an API key');
  }

  /** The series of a route, registered on first use (routes are fixed at start, so this map is bounded). */
  route(name: string): RouteMetrics {
    let m = this.routes.get(name);
    if (m === undefined) {
      const r = this.registry;
      const l = { route: name };
      m = {
        attempts: r.counter('meridian_submit_route_attempts_total', 'Forward attempts dispatched on a route', l),
        errors: r.counter('meridian_submit_route_errors_total', 'Forward attempts a route answered with a failure (HTTP status, RPC error, timeout, connection)', l),
        skipped: r.counter('meridian_submit_route_skipped_total', 'Transactions a route did not take (at its in-flight cap)', l),
        landed: r.counter('meridian_submit_route_landed_total', 'Traced transactions that landed, counted for every route whose attempt succeeded', l),
        expired: r.counter('meridian_submit_route_expired_total', 'Traced transactions whose blockhash expired unlanded, counted for every route whose attempt succeeded', l),
        slotDelta: r.histogram('meridian_submit_route_slot_delta', 'Landed slot minus slot at acceptance, per route', SLOT_DELTA_BUCKETS, l),
      };
      this.routes.set(name, m);
    }
    return m;
  }

  count(transport: Transport, result: SubmitResult): void {
    this.submissions[transport][result].inc();
  }

  value(transport: Transport, result: SubmitResult): number {
    return this.submissions[transport][result].value;
  }
}
