import { metrics as defaultRegistry, type Counter, type Gauge, type Registry } from '../../../infra/base/metrics';
import { TERMINATOR_EVENTS, CLOSE_REASONS, TX_KINDS, type CloseReason, type TerminatorEvent, type TxKind } from './bridge-codec';

// What the QUIC transport counts on top of the pipeline's per-result counters (transport="quic"): the
// connection limits (per key, total, handshake rate per IP, streams per connection, idle timeout), what arrives
// by which path, every status byte answered, and the stream/datagram pairs collapsed into one submission.

export const ADMISSIONS = ['admitted', 'unknown_key', 'per_key_limit', 'capacity'] as const;
export type Admission = (typeof ADMISSIONS)[number];

export class QuicMetrics {
  readonly open: Gauge;
  private readonly admissions = {} as Record<Admission, Counter>;
  private readonly closes = {} as Record<CloseReason, Counter>;
  private readonly events = {} as Record<TerminatorEvent, Counter>;
  private readonly received = {} as Record<TxKind, Counter>;
  private readonly statuses: Counter[] = [];
  readonly twins: Counter;
  readonly framingErrors: Counter;
  readonly strays: Counter;
  readonly restarts: Counter;

  constructor(readonly registry: Registry = defaultRegistry) {
    this.open = registry.gauge('meridian_submit_quic_connections_open', 'Admitted QUIC connections now open');
    for (const a of ADMISSIONS) this.admissions[a] = registry.counter('meridian_submit_quic_connections_total', 'Completed handshakes by admission result', { result: a });
    for (const r of CLOSE_REASONS) this.closes[r] = registry.counter('meridian_submit_quic_closed_total', 'Admitted connections closed, by reason (idle_timeout = the idle limit)', { reason: r });
    for (const e of Object.values(TERMINATOR_EVENTS)) this.events[e] = registry.counter('meridian_submit_quic_limit_events_total', 'QUIC limits hit: handshakes refused by the per-IP rate or the connection cap, connections at their stream limit, failed handshakes', { event: e });
    for (const k of Object.values(TX_KINDS)) this.received[k] = registry.counter('meridian_submit_quic_received_total', 'Transactions received, by path (stream, uni, datagram)', { kind: k });
    for (let s = 0; s <= 7; s++) this.statuses.push(registry.counter('meridian_submit_quic_stream_status_total', 'Stream answers by status byte', { status: `0x0${s}` }));
    this.twins = registry.counter('meridian_submit_quic_twins_total', 'Second copies (datagram + stream of one send) answered without a second submission');
    this.framingErrors = registry.counter('meridian_submit_quic_framing_errors_total', 'Bidirectional streams not framed as 0x01 + transaction');
    this.restarts = registry.counter('meridian_submit_quic_terminator_restarts_total', 'Times the QUIC terminator process died while serving and was started again');
    this.strays = registry.counter('meridian_submit_quic_strays_total', 'Transactions for a connection that is not admitted (dropped, or answered as unauthorized)');
  }

  admission(a: Admission): void {
    this.admissions[a].inc();
  }
  closed(r: CloseReason): void {
    this.closes[r].inc();
  }
  event(e: TerminatorEvent): void {
    this.events[e].inc();
  }
  receivedBy(k: TxKind): void {
    this.received[k].inc();
  }
  status(s: number): void {
    this.statuses[s]?.inc();
  }

  value(what: 'admission', key: Admission): number;
  value(what: 'closed', key: CloseReason): number;
  value(what: 'event', key: TerminatorEvent): number;
  value(what: 'received', key: TxKind): number;
  value(what: 'status', key: number): number;
  value(what: string, key: string | number): number {
    switch (what) {
      case 'admission':
        return this.admissions[key as Admission].value;
      case 'closed':
        return this.closes[key as CloseReason].value;
      case 'event':
        return this.events[key as TerminatorEvent].value;
      case 'received':
        return this.received[key as TxKind].value;
      default:
        return this.statuses[key as number]?.value ?? 0;
    }
  }
}
