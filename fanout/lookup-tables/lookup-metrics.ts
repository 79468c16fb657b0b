import { metrics, type Counter } from '../../infra/base/metrics';

// The table cache's series in the process-wide registry (registered once per process; gauges read every live
// cache at scrape time).

export interface CacheGauges {
  tables(): number;
  addresses(): number;
  waiting(): number;
  /** Tables with a live account subscription (0 without notifications). */
  subscriptions(): number;
}

const sources = new Set<CacheGauges>();
const sum = (f: (s: CacheGauges) => number): number => {
  let n = 0;
  for (const s of sources) n += f(s);
  return n;
};

metrics.gauge('meridian_fanout_lookup_tables', 'Address lookup tables held by the table cache', undefined, () => sum((s) => s.tables()));
metrics.gauge('meridian_fanout_lookup_addresses', 'Addresses held by the table cache, all tables (bounded by fanout.lookupTables.maxAddresses)', undefined, () => sum((s) => s.addresses()));
metrics.gauge('meridian_fanout_lookup_subscriptions', 'Tables with a live accountSubscribe on the chain node (bounded by fanout.lookupTables.maxSubscriptions)', undefined, () => sum((s) => s.subscriptions()));
metrics.gauge('meridian_fanout_lookup_waiting', 'Transactions waiting for a table fetch (each at most fanout.lookupTables.waitMs)', undefined, () => sum((s) => s.waiting()));

const unresolved = new Map<string, Counter>();
const updates = new Map<string, Counter>();

export type UnresolvedReason = 'unknown' | 'absent' | 'deactivated' | 'index';

export const lookupMetrics = {
  hits: metrics.counter('meridian_fanout_lookup_hits_total', 'Table lookups answered from the cache without waiting'),
  misses: metrics.counter('meridian_fanout_lookup_misses_total', 'Table lookups whose table was not held when the transaction arrived'),
  fetches: metrics.counter('meridian_fanout_lookup_fetches_total', 'getMultipleAccounts calls made for lookup tables'),
  fetchErrors: metrics.counter('meridian_fanout_lookup_fetch_errors_total', 'Lookup-table fetches that failed (node down, timeout, bad answer), per table'),
  fetchMs: metrics.histogram('meridian_fanout_lookup_fetch_ms', 'Duration of a getMultipleAccounts call for lookup tables, ms'),
  evictions: metrics.counter('meridian_fanout_lookup_evictions_total', 'Tables dropped from the cache to stay within its caps'),
  waitedTransactions: metrics.counter('meridian_fanout_lookup_waited_total', 'Transactions that waited for a table fetch'),
  notifications: metrics.counter('meridian_fanout_lookup_notifications_total', 'Account notifications from the chain node applied to a held table'),
  notifyReconnects: metrics.counter('meridian_fanout_lookup_notify_reconnects_total', 'Reconnections of the account-notification WebSocket (each re-subscribes every watched table)'),
  notifySkipped: metrics.counter('meridian_fanout_lookup_notify_skipped_total', 'Tables taken in but not watched because fanout.lookupTables.maxSubscriptions were in use'),
  partialTransactions: metrics.counter('meridian_fanout_lookup_partial_total', 'Transactions matched with at least one table unresolved'),
  unresolved(reason: UnresolvedReason): Counter {
    let c = unresolved.get(reason);
    if (c === undefined) {
      c = metrics.counter('meridian_fanout_lookup_unresolved_total', 'Table lookups left unresolved, by reason (unknown: no answer within the bound; absent: no such table; deactivated; index: beyond the usable length)', { reason });
      unresolved.set(reason, c);
    }
    return c;
  },
  streamUpdate(kind: string): Counter {
    let c = updates.get(kind);
    if (c === undefined) {
      c = metrics.counter('meridian_fanout_lookup_stream_updates_total', 'Lookup-table program instructions seen in the stream and applied to the pending view, by kind', { kind });
      updates.set(kind, c);
    }
    return c;
  },
  addSource(s: CacheGauges): () => void {
    sources.add(s);
    return () => sources.delete(s);
  },
};
