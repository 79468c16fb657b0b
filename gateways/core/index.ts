// The JSON-RPC proxy core that the chain gateway (gateways/rpc) and the EVM endpoints (gateways/evm) configure.
// This file is its whole public API; import from here, not from the files behind it.
//
//   const pool = new UpstreamPool({ surface, upstreams: [{ http, ws }], probe, maxLag, log });
//   await pool.start();                                   // first health round before serving
//   const proxy = await startProxy({
//     surface, http: { host, port }, ws: { host, port },  // ws optional
//     errors,            // ErrorTable<K>: the surface's rows + the core's kinds (CoreErrorKind)
//     pool,
//     auth,              // (ClientInfo{ip, path, transport}) → { ok: true, caller } | refuse(kind, detail?)
//     meter,             // { admit(caller, calls, transport) → { ok: true, units[], release? } | refuse(...) } (sync or async)
//     usage,             // (caller, calls, units, outcome, transport) → void; usageEvents(producer, surface, rentalOf, chain?): one event per method and request
//     neverRetry,        // methods never retried, hedged or duplicated
//     trustedProxies, limits, log,
//   });
//   proxy.http.url / proxy.ws?.url; await proxy.close(); await pool.close();
//
// Behaviour (what a surface gets without writing it):
//   - HTTP: POST only; content-type application/json; body ≤ limits.maxBodyBytes; single object or non-empty
//     batch (≤ maxBatch items); the body is forwarded byte for byte; the node's reply (status and bytes) comes
//     back unchanged. Batch replies must be a JSON array with one element per item, else batchFailed (whole
//     batch). Single replies must look like a JSON object, else upstreamFailed.
//   - Upstreams: undici keep-alive pools; health probes (pluggable: HealthProbe) and lag; passive mark-down on
//     connection failures; failover to another healthy upstream for requests with no neverRetry method; none
//     healthy → unavailable.
//   - WebSocket: auth on the upgrade (refusal = the row's HTTP status + JSON-RPC error body); one upstream socket
//     per client; client messages metered and forwarded in order; upstream messages forwarded verbatim; either
//     side's close closes the other; a slow client is closed with 1013 (SLOW_CONSUMER_CLOSE).
//   - Metrics: meridian_gateway_* with label surface. No URL ever reaches a log line.

export { errorJson, errorMessage, refuse, type CoreErrorKind, type ErrorRow, type ErrorTable, type Refusal } from './errors';
export { MAX_METHOD_LEN, type RpcCall } from './jsonrpc';
export { clientIp, pathOf } from './client-ip';
export { unmetered, type Admission, type AdmitResult, type AuthResult, type ClientInfo, type Meter, type Transport, type UsageHook } from './policy';
export { emitRequestUsage, usageEvents } from './usage';
export { UpstreamPool, type HealthProbe, type ProbeCall, type ProbeResult, type UpstreamPoolOptions } from './upstream-pool';
export type { UpstreamEndpoint } from './upstream';
export { startProxy, type Listen, type ProxyLimits, type ProxyOptions, type RunningProxy } from './proxy';
export { SLOW_CONSUMER_CLOSE, UPSTREAM_GONE_CLOSE } from './ws-proxy';
export { SlidingWindow, SlidingWindows } from './sliding-window';
export { LocalBudget, type RentalBudget } from './rental-budget';
export { FleetBudget, type FleetBudgetOptions } from './fleet-budget';
export { startFleetExchange, type FleetExchange, type FleetExchangeOptions } from './fleet-exchange';
export { Slots, type SlotGrant, type SlotOptions } from './slots';
