import { ConfigError, bool, hostPort, int, section, str, strList, type Raw } from '../../infra/base/config-read';
import { parseProxyLimits, type ProxyLimitsConfig } from '../core/limits-config';
import { DEFAULT_NEVER_RETRY, DEFAULT_SCAN_METHODS, DEFAULT_TPS_METHODS, DEFAULT_WEIGHT, DEFAULT_WEIGHTS } from './methods';

// Section `gateways.rpc`: the chain JSON-RPC gateway. Environment overrides as everywhere
// (MERIDIAN__GATEWAYS__RPC__LISTEN=0.0.0.0:8899, MERIDIAN__GATEWAYS__RPC__UPSTREAMS='[{"http":"…","ws":"…"}]').

export interface RpcUpstreamConfig {
  http: string;
  ws?: string;
}

export interface RpcGatewayConfig {
  enabled: boolean;
  host: string;
  port: number;
  wsHost: string;
  wsPort: number;
  /** Upstream chain nodes. Empty: the launcher uses the local chain node when it runs one. */
  upstreams: RpcUpstreamConfig[];
  /** This deployment's region (fra, ams, lon, nyc, tyo…); rentals of another region get 403 -32004. "" = any. */
  region: string;
  auth: {
    /** rentals: every request needs a rental (by IP or dedicated path), metered. none: open and unmetered (local only). */
    mode: 'rentals' | 'none';
    /** Peers whose X-Forwarded-For names the caller (load balancers). */
    trustedProxies: string[];
  };
  /** RPS units per call by method; any method absent costs defaultWeight. */
  weights: Record<string, number>;
  defaultWeight: number;
  scanMethods: string[];
  tpsMethods: string[];
  neverRetry: string[];
  /** RPS is counted over this sliding window: a rental of R RPS may spend R × window/1 s units in any window. */
  rpsWindowMs: number;
  /** TPS likewise (default 1 s: at most T sendTransaction in any second). */
  tpsWindowMs: number;
  scan: {
    /** Scan calls in flight per rental at most. */
    concurrency: number;
    /** How long a scan call waits for a slot before 429 -32005 "Scan request timed out…". */
    maxWaitMs: number;
    /** Scan requests waiting per rental at most (beyond: refused at once with the same row). */
    maxQueuePerRental: number;
    /** Scan requests waiting over all rentals at most. */
    maxQueueTotal: number;
  };
  /**
   * Fleet-wide limits (README, "Fleet-wide limits"): instances on one Kafka bus exchange what each rental spent every
   * intervalMs and admit against the fleet's spend; a member not heard from for memberExpiryMs is gone.
   */
  fleet: { enabled: boolean; intervalMs: number; memberExpiryMs: number };
  health: { intervalMs: number; timeoutMs: number; maxSlotLag: number };
  upstream: { timeoutMs: number; connections: number; maxResponseBytes: number };
  limits: ProxyLimitsConfig;
}

function weightTable(o: Raw, path: string): Record<string, number> {
  const w = section(o.weights, `${path}.weights`);
  const out: Record<string, number> = { ...DEFAULT_WEIGHTS };
  for (const k of Object.keys(w)) out[k] = int(w, k, `${path}.weights`, 1, 0, 1_000_000);
  return out;
}

function upstreamList(o: Raw, path: string): RpcUpstreamConfig[] {
  const v = o.upstreams;
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new ConfigError(`${path}.upstreams: expected a list of {"http": URL, "ws": URL}`);
  return v.map((u, i) => {
    const p = `${path}.upstreams[${i}]`;
    const e = section(u, p);
    const http = str(e, 'http', p, '');
    if (!/^https?:\/\//.test(http)) throw new ConfigError(`${p}.http: expected an http(s) URL`);
    const ws = e.ws === undefined ? undefined : str(e, 'ws', p, '');
    if (ws !== undefined && !/^wss?:\/\//.test(ws)) throw new ConfigError(`${p}.ws: expected a ws(s) URL`);
    return ws === undefined ? { http } : { http, ws };
  });
}

export function parseRpcGatewayConfig(raw: unknown): RpcGatewayConfig {
  const p = 'gateways.rpc';
  const o = section(raw, p);
  const a = section(o.auth, `${p}.auth`);
  const s = section(o.scan, `${p}.scan`);
  const h = section(o.health, `${p}.health`);
  const f = section(o.fleet, `${p}.fleet`);
  const u = section(o.upstream, `${p}.upstream`);
  const listen = hostPort(o, 'listen', p, '127.0.0.1:8899');
  const wsListen = hostPort(o, 'wsListen', p, '127.0.0.1:8900');
  const mode = str(a, 'mode', `${p}.auth`, 'rentals');
  if (mode !== 'rentals' && mode !== 'none') throw new ConfigError(`${p}.auth.mode: expected rentals or none, got ${JSON.stringify(mode)}`);
  return {
    enabled: bool(o, 'enabled', p, true),
    host: listen.host,
    port: listen.port,
    wsHost: wsListen.host,
    wsPort: wsListen.port,
    upstreams: upstreamList(o, p),
    region: str(o, 'region', p, '').trim().toLowerCase(),
    auth: { mode, trustedProxies: strList(a, 'trustedProxies', `${p}.auth`, []) },
    weights: weightTable(o, p),
    defaultWeight: int(o, 'defaultWeight', p, DEFAULT_WEIGHT, 0, 1_000_000),
    scanMethods: strList(o, 'scanMethods', p, [...DEFAULT_SCAN_METHODS]),
    tpsMethods: strList(o, 'tpsMethods', p, [...DEFAULT_TPS_METHODS]),
    neverRetry: strList(o, 'neverRetry', p, [...DEFAULT_NEVER_RETRY]),
    rpsWindowMs: int(o, 'rpsWindowMs', p, 10_000, 100, 3_600_000),
    tpsWindowMs: int(o, 'tpsWindowMs', p, 1_000, 100, 3_600_000),
    scan: {
      concurrency: int(s, 'concurrency', `${p}.scan`, 2, 1, 10_000),
      maxWaitMs: int(s, 'maxWaitMs', `${p}.scan`, 5_000, 0, 600_000),
      maxQueuePerRental: int(s, 'maxQueuePerRental', `${p}.scan`, 32, 0, 100_000),
      maxQueueTotal: int(s, 'maxQueueTotal', `${p}.scan`, 2_000, 0, 1_000_000),
    },
    fleet: {
      enabled: bool(f, 'enabled', `${p}.fleet`, true),
      intervalMs: int(f, 'intervalMs', `${p}.fleet`, 200, 20, 5_000),
      memberExpiryMs: int(f, 'memberExpiryMs', `${p}.fleet`, 1_000, 100, 60_000),
    },
    health: {
      intervalMs: int(h, 'intervalMs', `${p}.health`, 1_000, 10),
      timeoutMs: int(h, 'timeoutMs', `${p}.health`, 1_000, 10),
      maxSlotLag: int(h, 'maxSlotLag', `${p}.health`, 150, 0),
    },
    upstream: {
      timeoutMs: int(u, 'timeoutMs', `${p}.upstream`, 30_000, 10),
      connections: int(u, 'connections', `${p}.upstream`, 128, 1, 100_000),
      maxResponseBytes: int(u, 'maxResponseBytes', `${p}.upstream`, 128 * 1024 * 1024, 1024),
    },
    limits: parseProxyLimits(o.limits, `${p}.limits`, { maxBodyBytes: 1024 * 1024 }),
  };
}
