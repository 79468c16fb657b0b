import { ConfigError, bool, hostPort, int, oneOf, optStr, section } from '../infra/base/config-read';

export type LeaderSource =
  | { mode: 'off' }
  | { mode: 'fixed'; key: string }
  /** Leader schedule from a chain RPC node (getEpochInfo + getLeaderSchedule). */
  | { mode: 'rpc'; rpcUrl: string; refreshMs: number };

export interface IngestConfig {
  enabled: boolean;
  host: string;
  port: number;
  /** SO_RCVBUF request; the kernel may cap it (net.core.rmem_max). */
  recvBufferBytes: number;
  /** The config asked for recvBufferBytes itself (production): a kernel cap below it is a warning, not info. */
  recvBufferExplicit: boolean;
  /** null = accept any shred version (local default); production sets the cluster's. */
  shredVersion: number | null;
  leader: LeaderSource;
  /** Slots kept around the highest completed slot; older state is evicted. */
  slotWindow: number;
  /** Quiet time (no FEC set completed) after which traffic outside the slot window re-anchors ingest. */
  windowResetMs: number;
  /** Packets waiting between the socket and the pipeline; beyond it packets are dropped and counted. */
  queuePackets: number;
  /** Entry batches waiting to be published; beyond it batches are dropped and counted. */
  publishQueueBatches: number;
  /**
   * A chain node whose slot notifications become processed/confirmed/finalized statuses on stream.slot-status
   * (ingest/chain-watch.ts). Absent or wsUrl '' = none (the launcher fills in the local chain's when it runs one).
   */
  chain?: ChainStatusConfig;
}

export interface ChainStatusConfig {
  /** PubSub WebSocket (slotSubscribe); '' = no chain statuses. */
  wsUrl: string;
  /** JSON-RPC over HTTP, polled with getSlot at confirmed; '' = CONFIRMED only when a slot is rooted. */
  rpcUrl: string;
  confirmedPollMs: number;
  /** How long a chain status waits for ingest to decode its slot before it is published anyway (chain-hold.ts). */
  holdMs: number;
}

export function parseIngestConfig(raw: unknown): IngestConfig {
  const p = 'ingest';
  const o = section(raw, p);
  const l = section(o.leader, `${p}.leader`);
  const mode = oneOf(l, 'mode', `${p}.leader`, ['off', 'fixed', 'rpc'] as const, 'off');
  let leader: LeaderSource;
  if (mode === 'fixed') {
    const key = optStr(l, 'key', `${p}.leader`);
    if (key === undefined) throw new ConfigError(`${p}.leader.key: required when leader.mode is fixed (base58 public key)`);
    leader = { mode, key };
  } else if (mode === 'rpc') {
    const rpcUrl = optStr(l, 'rpcUrl', `${p}.leader`);
    if (rpcUrl === undefined) throw new ConfigError(`${p}.leader.rpcUrl: required when leader.mode is rpc (or set SOLANA_RPC_URL)`);
    leader = { mode, rpcUrl, refreshMs: int(l, 'refreshMs', `${p}.leader`, 60_000, 1000) };
  } else {
    leader = { mode: 'off' };
  }
  const sv = o.shredVersion;
  const shredVersion = sv === undefined || sv === null || sv === 'any' ? null : int(o, 'shredVersion', p, 0, 0, 0xffff);
  const listen = hostPort(o, 'listen', p, '127.0.0.1:8002');
  return {
    enabled: bool(o, 'enabled', p, true),
    host: listen.host,
    port: listen.port,
    recvBufferBytes: int(o, 'recvBufferBytes', p, 64 * 1024 * 1024, 0),
    recvBufferExplicit: o.recvBufferBytes !== undefined,
    shredVersion,
    leader,
    slotWindow: int(o, 'slotWindow', p, 512, 4, 1_000_000),
    windowResetMs: int(o, 'windowResetMs', p, 10_000, 0, 3_600_000),
    queuePackets: int(o, 'queuePackets', p, 65_536, 16),
    publishQueueBatches: int(o, 'publishQueueBatches', p, 4096, 1),
    chain: parseChainStatus(o.chain, `${p}.chain`),
  };
}

function parseChainStatus(raw: unknown, p: string): ChainStatusConfig {
  const o = section(raw, p);
  const wsUrl = optStr(o, 'wsUrl', p) ?? '';
  const rpcUrl = optStr(o, 'rpcUrl', p) ?? '';
  if (wsUrl !== '' && !/^wss?:\/\//.test(wsUrl)) throw new ConfigError(`${p}.wsUrl: a ws:// or wss:// URL`);
  if (rpcUrl !== '' && !/^https?:\/\//.test(rpcUrl)) throw new ConfigError(`${p}.rpcUrl: an http:// or https:// URL`);
  if (rpcUrl !== '' && wsUrl === '') throw new ConfigError(`${p}.rpcUrl: set ${p}.wsUrl too (the slot notifications come from the WebSocket)`);
  return { wsUrl, rpcUrl, confirmedPollMs: int(o, 'confirmedPollMs', p, 400, 50, 60_000), holdMs: int(o, 'holdMs', p, 1000, 0, 60_000) };
}
