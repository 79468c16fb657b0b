import type { Counter, Gauge, Registry } from '../../infra/base/metrics';

// Counters of one proxy surface. Registered once per surface (labels fixed), incremented on the hot path.

export interface ProxyMetrics {
  requests: Counter;
  errors: Counter;
  upstreamFailures: Counter;
  wsConnections: Gauge;
  wsSlowClosed: Counter;
  wsMessages: Counter;
}

export function proxyMetrics(registry: Registry, surface: string): ProxyMetrics {
  const l = { surface };
  return {
    requests: registry.counter('meridian_gateway_http_requests_total', 'HTTP requests received', l),
    errors: registry.counter('meridian_gateway_errors_total', 'Answers taken from the error table (HTTP and WebSocket)', l),
    upstreamFailures: registry.counter('meridian_gateway_upstream_failures_total', 'Requests no upstream answered usably', l),
    wsConnections: registry.gauge('meridian_gateway_ws_connections', 'Proxied WebSocket connections open', l),
    wsSlowClosed: registry.counter('meridian_gateway_ws_slow_closed_total', 'WebSocket clients closed for not reading fast enough', l),
    wsMessages: registry.counter('meridian_gateway_ws_client_messages_total', 'Messages from WebSocket clients', l),
  };
}
