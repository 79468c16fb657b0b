import { ConfigError, bool, hostPort, int, optStr, section, str, strList } from '../../infra/base/config-read';
import { TOPIC } from '../../bus/topics';

// Section `gateways.submit`. Every limit of the service is here, with the contract's values as defaults
// where the contract fixes them (tip minimum 0.001 SOL) and conservative ones where it does not.

export interface SubmitConfig {
  enabled: boolean;
  http: { host: string; port: number };
  udp: { enabled: boolean; host: string; port: number };
  /** getVersion's `solana-core`: `<product>/<version>`. */
  version: string;
  tips: { accounts: string[]; minLamports: number };
  /** Forward targets (upstream chain RPC URLs); empty = the launcher's local chain node. Never logged. */
  forwardUrls: string[];
  /** Where preflight simulates; unset = the first forward target. */
  preflightUrl?: string;
  forward: { connectionsPerTarget: number; maxInFlightPerTarget: number; timeoutMs: number };
  preflight: { timeoutMs: number; maxInFlight: number };
  cache: { windowMs: number; maxEntries: number };
  repeats: { windowMs: number; maxEntries: number };
  /** Open HTTP connections at most (over all clients), and per client address. */
  maxConnections: number;
  maxConnectionsPerIp: number;
  keepAliveTimeoutMs: number;
  requestTimeoutMs: number;
  /** Plain /binary and /plaintext requests on the pipelined fast path (answers of one read in one write). */
  fastPath: boolean;
  /** v1 transactions (SIMD-0385) up to this many bytes on JSON-RPC, /binary and /plaintext (1,232 = the contract; ≤ 4,096). */
  v1MaxBytes: number;
  topics: { transactions: string };
}

export function parseSubmitConfig(raw: unknown): SubmitConfig {
  const p = 'gateways.submit';
  const o = section(raw, p);
  const u = section(o.udp, `${p}.udp`);
  const t = section(o.tips, `${p}.tips`);
  const f = section(o.forward, `${p}.forward`);
  const pf = section(o.preflight, `${p}.preflight`);
  const c = section(o.cache, `${p}.cache`);
  const r = section(o.repeats, `${p}.repeats`);
  const tp = section(o.topics, `${p}.topics`);
  const http = hostPort(o, 'listen', p, '127.0.0.1:8080');
  const udp = hostPort(u, 'listen', `${p}.udp`, '127.0.0.1:9000');
  const cfg: SubmitConfig = {
    enabled: bool(o, 'enabled', p, false),
    http,
    udp: { enabled: bool(u, 'enabled', `${p}.udp`, true), ...udp },
    version: str(o, 'version', p, 'meridian/0.1.0'),
    tips: { accounts: strList(t, 'accounts', `${p}.tips`, []), minLamports: int(t, 'minLamports', `${p}.tips`, 1_000_000, 0) },
    forwardUrls: strList(o, 'forwardUrls', p, []),
    forward: {
      connectionsPerTarget: int(f, 'connectionsPerTarget', `${p}.forward`, 16, 1, 1024),
      maxInFlightPerTarget: int(f, 'maxInFlightPerTarget', `${p}.forward`, 1024, 1),
      timeoutMs: int(f, 'timeoutMs', `${p}.forward`, 5_000, 1),
    },
    preflight: { timeoutMs: int(pf, 'timeoutMs', `${p}.preflight`, 2_000, 1), maxInFlight: int(pf, 'maxInFlight', `${p}.preflight`, 256, 1) },
    cache: { windowMs: int(c, 'windowMs', `${p}.cache`, 120_000, 1), maxEntries: int(c, 'maxEntries', `${p}.cache`, 200_000, 1) },
    repeats: { windowMs: int(r, 'windowMs', `${p}.repeats`, 10_000, 0), maxEntries: int(r, 'maxEntries', `${p}.repeats`, 20_000, 1) },
    maxConnections: int(o, 'maxConnections', p, 10_000, 1),
    maxConnectionsPerIp: int(o, 'maxConnectionsPerIp', p, 512, 1),
    keepAliveTimeoutMs: int(o, 'keepAliveTimeoutMs', p, 30_000, 1),
    requestTimeoutMs: int(o, 'requestTimeoutMs', p, 10_000, 1),
    fastPath: bool(o, 'fastPath', p, true),
    v1MaxBytes: int(o, 'v1MaxBytes', p, 1232, 1232, 4096),
    topics: { transactions: str(tp, 'transactions', `${p}.topics`, TOPIC.streamTransactions) },
  };
  const preflightUrl = optStr(o, 'preflightUrl', p);
  if (preflightUrl !== undefined) cfg.preflightUrl = preflightUrl;
  if (cfg.enabled && cfg.tips.accounts.length === 0) throw new ConfigError(`${p}.tips.accounts: at least one tip account is required`);
  for (const u of [...cfg.forwardUrls, ...(cfg.preflightUrl === undefined ? [] : [cfg.preflightUrl])]) {
    // Checked without echoing the value: a URL may carry a credential.
    if (!/^https?:\/\//.test(u)) throw new ConfigError(`${p}.forwardUrls/preflightUrl: expected http(s) URLs`);
  }
  return cfg;
}
