// The chain JSON-RPC gateway (issue 8): the proxy core (gateways/core) configured for the primary chain.
//
//   const gw = await startRpcGateway(parseRpcGatewayConfig(raw), { rentals, log, usage | bus, upstreams? });
//   gw.http.url, gw.ws.url; await gw.close();
//
// Metering (meter.ts): RPS units by method weight over a 10 s sliding window (a rental of R RPS may spend 10·R
// units in any 10 s; WebSocket subscribe/unsubscribe cost 1 from the same window); sendTransaction draws 1 TPS
// unit over a 1 s window and no RPS; scan methods take a per-rental concurrency slot with a bounded wait. A
// request — single or batch — is admitted whole or refused whole (nothing forwarded, nothing charged).
// Errors: errors.ts (the contract's rows). Auth: auth.ts. Health: health.ts (getHealth + slot lag).

export { startRpcGateway, type RpcGateway, type RpcGatewayDeps } from './gateway';
export { parseRpcGatewayConfig, type RpcGatewayConfig, type RpcUpstreamConfig } from './config';
export { RPC_ERRORS, type RpcErrorKind } from './errors';
export { DEFAULT_WEIGHTS, DEFAULT_SCAN_METHODS, DEFAULT_NEVER_RETRY } from './methods';
