import type { Counter, Gauge, Registry } from '../../../infra/base/metrics';
import { DISPATCH, PEER_ERROR_KINDS, type Dispatch, type PeerErrorKind, type PeerStats } from './sender-codec';

// The `tpu` route's own series, beside the per-route ones every route has (metrics.ts): per leader (labelled by
// identity, a public key — never its address) what the sender did with each transaction and what its QUIC
// connection did. Leader series are registered on first sight, at most `maxLeaders` of them; later leaders
// share the label `other`, so a cluster of thousands of validators cannot grow the registry without bound.

export const NO_ROUTE_REASONS = ['no_slot', 'no_schedule', 'no_address', 'sender_down', 'in_flight_cap'] as const;
export type NoRouteReason = (typeof NO_ROUTE_REASONS)[number];

interface LeaderSeries {
  dispatch: Record<Dispatch, Counter>;
  sent: Counter;
  errors: Record<PeerErrorKind, Counter>;
  connected: Gauge;
}

export class TpuMetrics {
  private readonly leaders = new Map<string, LeaderSeries>();
  private readonly noRoute = {} as Record<NoRouteReason, Counter>;
  private readonly refreshes = new Map<string, Counter>();
  readonly senderRestarts: Counter;
  readonly unusableContacts: Gauge;
  readonly windowsSkipped: Counter;

  constructor(private readonly registry: Registry, private readonly maxLeaders = 512) {
    for (const r of NO_ROUTE_REASONS) this.noRoute[r] = registry.counter('meridian_submit_tpu_not_routed_total', 'Transactions the tpu route did not take (they still go to the other routes), by reason', { reason: r });
    this.senderRestarts = registry.counter('meridian_submit_tpu_sender_restarts_total', 'Times the TPU sender process was started again after it exited');
    this.unusableContacts = registry.gauge('meridian_submit_tpu_unusable_contacts', 'Cluster nodes in the last getClusterNodes answer without a usable tpuQuic address');
    this.windowsSkipped = registry.counter('meridian_submit_tpu_leaders_without_address_total', 'Leader windows a transaction skipped because the leader had no usable tpuQuic address');
    for (const what of ['schedule', 'nodes']) for (const result of ['ok', 'error']) this.refreshes.set(`${what}/${result}`, registry.counter('meridian_submit_tpu_refresh_total', 'Leader schedule (getSlotLeaders) and address book (getClusterNodes) fetches', { what, result }));
  }

  notRouted(reason: NoRouteReason): void {
    this.noRoute[reason].inc();
  }

  notRoutedCount(reason: NoRouteReason): number {
    return this.noRoute[reason].value;
  }

  refresh(what: 'schedule' | 'nodes', result: 'ok' | 'error'): void {
    this.refreshes.get(`${what}/${result}`)!.inc();
  }

  leader(identity: string): LeaderSeries {
    let s = this.leaders.get(identity);
    if (s !== undefined) return s;
    const label = this.leaders.size < this.maxLeaders ? identity : 'other';
    s = this.leaders.get(label);
    if (s === undefined) {
      const r = this.registry;
      const l = { leader: label };
      const dispatch = {} as Record<Dispatch, Counter>;
      for (const d of DISPATCH) dispatch[d] = r.counter('meridian_submit_tpu_dispatch_total', "What the sender did with a transaction for a leader (queued for its connection, its queue full, its worker gone, address unusable)", { ...l, result: d });
      const errors = {} as Record<PeerErrorKind, Counter>;
      for (const k of PEER_ERROR_KINDS) errors[k] = r.counter('meridian_submit_tpu_leader_errors_total', "QUIC errors on a leader's connection (Agave client's SendTransactionStats, per leader)", { ...l, kind: k });
      s = {
        dispatch,
        sent: r.counter('meridian_submit_tpu_leader_streams_total', 'Transactions written to a leader on their own unidirectional stream', l),
        errors,
        connected: r.gauge('meridian_submit_tpu_leader_connected', "1 while the sender holds a worker (connection or reconnect) for the leader", l),
      };
      this.leaders.set(label, s);
    }
    this.leaders.set(identity, s);
    return s;
  }

  peerStats(identity: string, p: PeerStats): void {
    const s = this.leader(identity);
    s.sent.inc(p.sent);
    for (const k of PEER_ERROR_KINDS) if (p[k] > 0) s.errors[k].inc(p[k]);
    s.connected.set(p.active ? 1 : 0);
  }
}
