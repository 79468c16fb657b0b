import { ConfigError, bool, hostPort, int, oneOf, section, strList, type Raw } from '../../infra/base/config-read';
import { parseProxyLimits, type ProxyLimitsConfig } from '../core/limits-config';
import type { UpstreamEndpoint } from '../core';

// Section `gateways.evm`. A deployment serves the chains listed in `serve` (each chain lives in one metro:
// 56 Frankfurt, 137 Amsterdam), each on its own HTTP (8545) and WebSocket (8546) listener.
//
//   "gateways": { "evm": {
//     "serve": [56, 137],
//     "auth": { "mode": "ip" },                       // ip: rentals' EVM allowlist; none: open (local runs)
//     "chains": {
//       "56":  { "http": "0.0.0.0:8545", "ws": "0.0.0.0:8546",
//                "upstreams": ["http://node-a:8545", { "http": "http://node-b:8545", "ws": "ws://node-b:8546" }] },
//       "137": { ..., "anvil": true, "anvilBlockTime": 2 } // local: start an anvil for this chain as its upstream
//     } } }
//
// An upstream given as one string serves HTTP and WebSocket on the same port (anvil, reth with both enabled):
// its ws URL is the http URL with the scheme swapped. Give an object when they differ.
//
// On one machine both chains need distinct addresses to keep the standard ports: the local config puts chain 56
// on 127.0.0.56 and chain 137 on 127.0.0.137 (Linux routes all of 127.0.0.0/8 to the loopback interface; on
// macOS add the aliases first: `sudo ifconfig lo0 alias 127.0.0.56`), or choose other ports here.

export interface EvmChainConfig {
  chainId: number;
  http: { host: string; port: number };
  ws: { host: string; port: number };
  upstreams: UpstreamEndpoint[];
  /** Start a local anvil with this chain id and use it as an upstream (npm start, tests). */
  anvil: boolean;
  /** anvil --block-time in seconds; 0 = a block per transaction (and on evm_mine). */
  anvilBlockTime: number;
  /**
   * anvil --prune-history: keep no historical states (calls at past blocks fail). Without it anvil keeps every
   * block's state in memory, ~1.7 MiB a minute at 2 s blocks, with no bound; the local config sets it.
   */
  anvilPruneHistory: boolean;
  /**
   * This chain's stall limit (health.maxStallMs unless the chain sets its own). A local anvil without a block
   * time mines only on demand, so for it the default is 0 (off).
   */
  maxStallMs: number;
}

export interface EvmGatewayConfig {
  enabled: boolean;
  /** The chains this deployment serves, with their listeners and upstreams. */
  chains: EvmChainConfig[];
  auth: { mode: 'none' | 'ip' };
  /** Load balancers whose X-Forwarded-For names the caller. */
  trustedProxies: string[];
  /** Methods never retried, hedged or sent twice. */
  neverResend: string[];
  /** maxStallMs: a block number unchanged this long makes an upstream unhealthy; 0 = off (on-demand dev nodes). */
  health: { intervalMs: number; timeoutMs: number; maxLagBlocks: number; maxStallMs: number };
  upstream: { timeoutMs: number; connections: number };
  limits: ProxyLimitsConfig;
}

/** Transaction submission: sending one twice could broadcast twice (or fail confusingly as "already known"). */
export const DEFAULT_NEVER_RESEND = ['eth_sendRawTransaction', 'eth_sendTransaction', 'eth_sendRawTransactionSync', 'eth_sendRawTransactionConditional', 'eth_sendBundle', 'eth_sendPrivateTransaction'];

/** Standard local listeners per known chain id; other chain ids must say where they listen. */
const LOCAL_LISTEN: Record<number, string> = { 56: '127.0.0.56', 137: '127.0.0.137' };

function upstreamList(o: Raw, path: string): UpstreamEndpoint[] {
  const v = o.upstreams;
  if (v === undefined) return [];
  const list = typeof v === 'string' ? v.split(',').map((s) => s.trim()).filter((s) => s.length > 0) : v;
  if (!Array.isArray(list)) throw new ConfigError(`${path}.upstreams: expected a list of URLs or { http, ws } objects`);
  return list.map((u, i) => {
    const where = `${path}.upstreams[${i}]`;
    if (typeof u === 'string') return { http: checkUrl(u, where, ['http:', 'https:']), ws: checkUrl(u.replace(/^http/, 'ws'), where, ['ws:', 'wss:']) };
    const e = section(u, where);
    if (typeof e.http !== 'string') throw new ConfigError(`${where}.http: expected an http(s) URL`);
    const ep: UpstreamEndpoint = { http: checkUrl(e.http, `${where}.http`, ['http:', 'https:']) };
    if (e.ws !== undefined) {
      if (typeof e.ws !== 'string') throw new ConfigError(`${where}.ws: expected a ws(s) URL`);
      return { ...ep, ws: checkUrl(e.ws, `${where}.ws`, ['ws:', 'wss:']) };
    }
    return ep;
  });
}

/** The URL is never echoed back: it may carry a key. */
function checkUrl(u: string, where: string, schemes: string[]): string {
  let p: URL;
  try {
    p = new URL(u);
  } catch {
    throw new ConfigError(`${where}: not a valid URL`);
  }
  if (!schemes.includes(p.protocol)) throw new ConfigError(`${where}: expected a ${schemes.join(' or ')} URL`);
  return u;
}

function parseChain(raw: unknown, chainId: number, p: string, defaultStallMs: number): EvmChainConfig {
  const o = section(raw, p);
  const host = LOCAL_LISTEN[chainId];
  if (host === undefined && (o.http === undefined || o.ws === undefined)) throw new ConfigError(`${p}: set http and ws listen addresses for chain ${chainId}`);
  const cfg: EvmChainConfig = {
    chainId,
    http: hostPort(o, 'http', p, `${host}:8545`),
    ws: hostPort(o, 'ws', p, `${host}:8546`),
    upstreams: upstreamList(o, p),
    anvil: bool(o, 'anvil', p, false),
    anvilBlockTime: int(o, 'anvilBlockTime', p, 0, 0, 3600),
    anvilPruneHistory: bool(o, 'anvilPruneHistory', p, false),
    maxStallMs: 0,
  };
  cfg.maxStallMs = int(o, 'maxStallMs', p, cfg.anvil && cfg.anvilBlockTime === 0 ? 0 : defaultStallMs, 0);
  if (cfg.upstreams.length === 0 && !cfg.anvil) throw new ConfigError(`${p}: no upstreams (set ${p}.upstreams, or ${p}.anvil for a local node)`);
  return cfg;
}

export function parseEvmConfig(raw: unknown): EvmGatewayConfig {
  const p = 'gateways.evm';
  const o = section(raw, p);
  const a = section(o.auth, `${p}.auth`);
  const h = section(o.health, `${p}.health`);
  const u = section(o.upstream, `${p}.upstream`);
  const chainsRaw = section(o.chains, `${p}.chains`);
  const enabled = bool(o, 'enabled', p, false);
  // serve: a JSON list of chain ids ([56, 137]) or, from the environment, "56,137".
  const rawServe = o.serve;
  const serve = Array.isArray(rawServe) ? rawServe.map((v) => String(v).trim()) : strList(o, 'serve', p, []);
  const ids = serve.map((s) => {
    if (!/^\d+$/.test(s)) throw new ConfigError(`${p}.serve: expected chain ids, got ${JSON.stringify(s)}`);
    return Number(s);
  });
  if (new Set(ids).size !== ids.length) throw new ConfigError(`${p}.serve: a chain id is listed twice`);
  for (const k of Object.keys(chainsRaw)) if (!/^\d+$/.test(k)) throw new ConfigError(`${p}.chains.${k}: keys are chain ids`);
  const defaultStallMs = int(h, 'maxStallMs', `${p}.health`, 60_000, 0);
  const chains = enabled ? ids.map((id) => parseChain(chainsRaw[String(id)], id, `${p}.chains.${id}`, defaultStallMs)) : [];
  if (enabled && chains.length === 0) throw new ConfigError(`${p}.serve: list the chain ids this deployment serves`);
  const cfg: EvmGatewayConfig = {
    enabled,
    chains,
    auth: { mode: oneOf(a, 'mode', `${p}.auth`, ['none', 'ip'] as const, 'ip') },
    trustedProxies: strList(o, 'trustedProxies', p, []),
    neverResend: strList(o, 'neverResend', p, DEFAULT_NEVER_RESEND),
    health: {
      intervalMs: int(h, 'intervalMs', `${p}.health`, 1_000, 50),
      timeoutMs: int(h, 'timeoutMs', `${p}.health`, 1_000, 10),
      maxLagBlocks: int(h, 'maxLagBlocks', `${p}.health`, 5, 0),
      // BSC and Polygon make a block every few seconds; a minute without one is a stuck node.
      maxStallMs: defaultStallMs,
    },
    upstream: {
      timeoutMs: int(u, 'timeoutMs', `${p}.upstream`, 30_000, 100),
      connections: int(u, 'connections', `${p}.upstream`, 128, 1, 4096),
    },
    limits: parseProxyLimits(o.limits, `${p}.limits`, { maxBodyBytes: 5 * 1024 * 1024 }),
  };
  for (const c of chains) {
    if (c.http.host === c.ws.host && c.http.port === c.ws.port && c.http.port !== 0) throw new ConfigError(`${p}.chains.${c.chainId}: http and ws need distinct addresses`);
  }
  return cfg;
}
