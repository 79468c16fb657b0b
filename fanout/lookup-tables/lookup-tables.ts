import { jsonRpc, type JsonRpcCall } from '../../infra/base/json-rpc';
import type { LookupTablesConfig } from '../config';
import { lookupMetrics } from './lookup-metrics';
import { MatchKeys } from './match-keys';
import { StreamObserver } from './stream-observer';
import { TableCache } from './table-cache';
import { TableResolver } from './table-resolver';

// The process's lookup-table machinery, built once from fanout.lookupTables: the cache (fed by the node and the
// stream), the resolver every stream shares (LoadedAddressResolver), and the v1 matcher's key builder.

export interface LookupTables {
  cache: TableCache;
  resolver: TableResolver;
  observer: StreamObserver;
  keys: MatchKeys;
  close(): void;
}

/**
 * undefined when no chain node is configured (rpcUrl empty): nothing resolves. `call` replaces the JSON-RPC
 * client of rpcUrl (the benchmark's in-memory node).
 */
export function openLookupTables(cfg: LookupTablesConfig, call?: JsonRpcCall): LookupTables | undefined {
  if (cfg.rpcUrl === '') return undefined;
  const cache = new TableCache({
    call: call ?? jsonRpc(cfg.rpcUrl, cfg.fetchTimeoutMs),
    maxTables: cfg.maxTables,
    maxAddresses: cfg.maxAddresses,
    maxInFlight: cfg.maxInFlight,
    retryMs: cfg.retryMs,
    confirmMs: cfg.confirmMs,
    wsUrl: cfg.wsUrl,
    maxSubscriptions: cfg.maxSubscriptions,
  });
  const resolver = new TableResolver(cache, { waitMs: cfg.waitMs, maxWaiting: cfg.maxWaiting });
  const drop = lookupMetrics.addSource({ tables: () => cache.size.tables, addresses: () => cache.size.addresses, waiting: () => resolver.waiting, subscriptions: () => cache.notifier?.subscribed ?? 0 });
  return {
    cache,
    resolver,
    observer: new StreamObserver(cache),
    keys: new MatchKeys(cache),
    close: () => {
      drop();
      cache.close();
    },
  };
}
