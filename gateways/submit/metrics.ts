import { metrics as defaultRegistry, type Counter, type Registry } from '../../infra/base/metrics';
import { REJECT_REASONS, type RejectReason } from './rejections';

// Every submission is counted once, by transport and result (accepted, duplicate = suppressed after delivery,
// or the rejection reason). All series exist from the start, so a scrape shows zeros rather than nothing.

export const TRANSPORTS = ['jsonrpc', 'binary', 'plaintext', 'udp', 'quic'] as const;
export type Transport = (typeof TRANSPORTS)[number];
export type SubmitResult = 'accepted' | 'duplicate' | RejectReason;

export class SubmitMetrics {
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
    this.forwarded = registry.counter('meridian_submit_forward_sent_total', 'Forward requests sent to upstream targets (one per target)');
    this.forwardDropped = registry.counter('meridian_submit_forward_dropped_total', 'Forwards not sent to a target because its in-flight cap was reached');
    this.forwardErrors = registry.counter('meridian_submit_forward_errors_total', 'Forwards that failed after dispatch (never reported to clients)');
    this.deliveredMarks = registry.counter('meridian_submit_delivered_marks_total', 'Forwarded signatures later seen on stream.transactions');
    this.udpMalformed = registry.counter('meridian_submit_udp_malformed_total', 'UDP datagrams too short to carry an API key');
  }

  count(transport: Transport, result: SubmitResult): void {
    this.submissions[transport][result].inc();
  }

  value(transport: Transport, result: SubmitResult): number {
    return this.submissions[transport][result].value;
  }
}
