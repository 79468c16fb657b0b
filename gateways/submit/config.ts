import { ConfigError, bool, hostPort, int, oneOf, optStr, section, str, strList } from '../../infra/base/config-read';
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
  /** Fleet-wide TPS (README, "Fleet-wide limits"): submissions exchanged with the other instances on a Kafka bus. */
  fleet: { enabled: boolean; intervalMs: number; memberExpiryMs: number };
  maxConnections: number;
  maxConnectionsPerIp: number;
  keepAliveTimeoutMs: number;
  requestTimeoutMs: number;
  /** Plain /binary and /plaintext requests on the pipelined fast path (answers of one read in one write). */
  fastPath: boolean;
  /** v1 transactions (SIMD-0385) up to this many bytes on JSON-RPC, /binary and /plaintext (1,232 = the contract; ≤ 4,096). */
  v1MaxBytes: number;
  topics: { transactions: string; slots: string; traces: string };
  traces: TracesConfig;
  /** Which routes every accepted transaction takes: `rpc` (each forward target), `tpu` (the leaders over QUIC), or both. */
  routes: Array<'rpc' | 'tpu'>;
  tpu: TpuConfig;
}

/** `gateways.submit.tpu`: the `tpu` route (tpu/tpu-route.ts); used when `routes` names it. */
export interface TpuConfig {
  /** A solana-keygen JSON keypair: the QUIC client certificate's identity (staked = stake-weighted QoS). Unset = ephemeral, unstaked. */
  identityFile?: string;
  /** Leader windows (4 slots each) every transaction goes to (Agave client's default 2). */
  sendFanout: number;
  /** Leader windows to hold connections to ahead of their turn (≥ sendFanout; Agave's client: sendFanout + 1). */
  connectFanout: number;
  /** Transactions handed to the sender and not yet answered, at most; past it the route is skipped (counted). */
  maxInFlight: number;
  /** Cached leader connections (Agave's default 64). */
  maxConnections: number;
  /** Batches queued per leader connection; a full queue drops for that leader only (counted). */
  workerQueue: number;
  reconnects: number;
  /** Local UDP address of the sender's QUIC endpoint. */
  bind: string;
  statsIntervalMs: number;
  /** Where the schedule and cluster nodes are read; unset = the first forward target. Never logged. */
  rpcUrl?: string;
  /** Its PubSub WebSocket for slot notifications; unset = the rpcUrl with ws(s):// (same port, as the local chain). */
  wsUrl?: string;
  scheduleSlots: number;
  nodesRefreshMs: number;
  timeoutMs: number;
  /** A prebuilt sender binary instead of building sender/ on first use. */
  senderBinary?: string;
}

/** `gateways.submit.traces`: a trace per accepted transaction (trace-store.ts, status-poller.ts). */
export interface TracesConfig {
  enabled: boolean;
  /** How long a trace is held from its first acceptance: a blockhash lives ~60–90 s; then a margin for GET /trace. */
  holdMs: number;
  maxTraces: number;
  /** Where statuses are polled; unset = the first forward target. Never logged. */
  statusUrl?: string;
  statusTimeoutMs: number;
  pollIntervalMs: number;
  /** getSignatureStatuses calls per tick at most (≤ 256 signatures each). */
  maxStatusCallsPerTick: number;
  maxBlockhashChecksPerTick: number;
  /** Blockhash validity is asked only for traces at least this old (a fresh blockhash is valid for ~60 s). */
  expiryCheckAfterMs: number;
  blockhashRecheckMs: number;
  /** Polling of a landed transaction stops at this commitment. */
  commitment: 'processed' | 'confirmed' | 'finalized';
  /** Events waiting for the bus at most (oldest dropped first, counted). */
  maxBufferedEvents: number;
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
  const tr = section(o.traces, `${p}.traces`);
  const trp = `${p}.traces`;
  const fl = section(o.fleet, `${p}.fleet`);
  const tq = section(o.tpu, `${p}.tpu`);
  const tqp = `${p}.tpu`;
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
    fleet: {
      enabled: bool(fl, 'enabled', `${p}.fleet`, true),
      intervalMs: int(fl, 'intervalMs', `${p}.fleet`, 200, 20, 5_000),
      memberExpiryMs: int(fl, 'memberExpiryMs', `${p}.fleet`, 1_000, 100, 60_000),
    },
    maxConnections: int(o, 'maxConnections', p, 10_000, 1),
    maxConnectionsPerIp: int(o, 'maxConnectionsPerIp', p, 512, 1),
    keepAliveTimeoutMs: int(o, 'keepAliveTimeoutMs', p, 30_000, 1),
    requestTimeoutMs: int(o, 'requestTimeoutMs', p, 10_000, 1),
    fastPath: bool(o, 'fastPath', p, true),
    v1MaxBytes: int(o, 'v1MaxBytes', p, 1232, 1232, 4096),
    topics: {
      transactions: str(tp, 'transactions', `${p}.topics`, TOPIC.streamTransactions),
      slots: str(tp, 'slots', `${p}.topics`, TOPIC.streamSlots),
      traces: str(tp, 'traces', `${p}.topics`, TOPIC.submitTraces),
    },
    traces: {
      enabled: bool(tr, 'enabled', trp, true),
      holdMs: int(tr, 'holdMs', trp, 150_000, 1_000),
      maxTraces: int(tr, 'maxTraces', trp, 100_000, 1),
      statusTimeoutMs: int(tr, 'statusTimeoutMs', trp, 2_000, 1),
      pollIntervalMs: int(tr, 'pollIntervalMs', trp, 500, 10),
      maxStatusCallsPerTick: int(tr, 'maxStatusCallsPerTick', trp, 4, 1, 64),
      maxBlockhashChecksPerTick: int(tr, 'maxBlockhashChecksPerTick', trp, 8, 0, 256),
      expiryCheckAfterMs: int(tr, 'expiryCheckAfterMs', trp, 5_000, 0),
      blockhashRecheckMs: int(tr, 'blockhashRecheckMs', trp, 5_000, 0),
      commitment: oneOf(tr, 'commitment', trp, ['processed', 'confirmed', 'finalized'] as const, 'confirmed'),
      maxBufferedEvents: int(tr, 'maxBufferedEvents', trp, 100_000, 1),
    },
    routes: strList(o, 'routes', p, ['rpc']) as Array<'rpc' | 'tpu'>,
    tpu: {
      sendFanout: int(tq, 'sendFanout', tqp, 2, 1, 16),
      connectFanout: int(tq, 'connectFanout', tqp, 3, 1, 32),
      maxInFlight: int(tq, 'maxInFlight', tqp, 4096, 1),
      maxConnections: int(tq, 'maxConnections', tqp, 64, 1, 4096),
      workerQueue: int(tq, 'workerQueue', tqp, 64, 1, 65_536),
      reconnects: int(tq, 'reconnects', tqp, 2, 0, 100),
      bind: str(tq, 'bind', tqp, '0.0.0.0:0'),
      statsIntervalMs: int(tq, 'statsIntervalMs', tqp, 1_000, 50),
      scheduleSlots: int(tq, 'scheduleSlots', tqp, 400, 16, 5_000),
      nodesRefreshMs: int(tq, 'nodesRefreshMs', tqp, 300_000, 1_000),
      timeoutMs: int(tq, 'timeoutMs', tqp, 5_000, 1),
    },
  };
  for (const r of cfg.routes) if (r !== 'rpc' && r !== 'tpu') throw new ConfigError(`${p}.routes: expected a list of "rpc" and "tpu", got ${JSON.stringify(r)}`);
  if (cfg.routes.length === 0) throw new ConfigError(`${p}.routes: at least one route ("rpc", "tpu") is required`);
  if (cfg.tpu.connectFanout < cfg.tpu.sendFanout) throw new ConfigError(`${tqp}.connectFanout: must be ≥ sendFanout (${cfg.tpu.sendFanout})`);
  if (!/^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):\d{1,5}$/.test(cfg.tpu.bind)) throw new ConfigError(`${tqp}.bind: expected ip:port, got ${JSON.stringify(cfg.tpu.bind)}`);
  for (const k of ['identityFile', 'rpcUrl', 'wsUrl', 'senderBinary'] as const) {
    const v = optStr(tq, k, tqp);
    if (v !== undefined) cfg.tpu[k] = v;
  }
  if (cfg.tpu.rpcUrl !== undefined && !/^https?:\/\//.test(cfg.tpu.rpcUrl)) throw new ConfigError(`${tqp}.rpcUrl: expected an http(s) URL`);
  if (cfg.tpu.wsUrl !== undefined && !/^wss?:\/\//.test(cfg.tpu.wsUrl)) throw new ConfigError(`${tqp}.wsUrl: expected a ws(s) URL`);
  const statusUrl = optStr(tr, 'statusUrl', trp);
  if (statusUrl !== undefined) cfg.traces.statusUrl = statusUrl;
  const preflightUrl = optStr(o, 'preflightUrl', p);
  if (preflightUrl !== undefined) cfg.preflightUrl = preflightUrl;
  if (cfg.enabled && cfg.tips.accounts.length === 0) throw new ConfigError(`${p}.tips.accounts: at least one tip account is required`);
  for (const u of [...cfg.forwardUrls, ...(cfg.preflightUrl === undefined ? [] : [cfg.preflightUrl]), ...(statusUrl === undefined ? [] : [statusUrl])]) {
    // Checked without echoing the value: a URL may carry a credential.
    if (!/^https?:\/\//.test(u)) throw new ConfigError(`${p}.forwardUrls/preflightUrl/traces.statusUrl: expected http(s) URLs`);
  }
  return cfg;
}
