import { ConfigError, bool, hostPort, int, oneOf, optStr, section } from '../../base/config-read';
import { splitHostPort } from '../../base/host-port';

// Config section `localchain` (overridable as MERIDIAN__LOCALCHAIN__<KEY>). Defaults are the single-machine
// run's: HTTP JSON-RPC and PubSub WebSocket on 127.0.0.1:18899, 400 ms slots.

export interface LocalChainConfig {
  enabled: boolean;
  host: string;
  port: number;
  slotMs: number;
  ticksPerSlot: number;
  hashesPerTick: number;
  slotsPerEpoch: number;
  /** How long transactions wait before their entries are flushed (and shredded) mid-slot. */
  entryBatchMs: number;
  /** "HOST:PORT" of an ingest UDP port; absent = the node does not shred. */
  shredTo?: string;
  /** Shred version on the wire; absent = derived from the genesis hash as agave does. */
  shredVersion?: number;
  /**
   * How slots are made and shredded: 'alpenglow' (default: Header · batches · Footer · one final tick, low-power PoH;
   * chain.ts, shred-sender.ts) or 'tower' (64 ticks between the entries, batches only: what old captures hold).
   */
  blockFormat: 'tower' | 'alpenglow';
  /** Alpenglow: the first slot of every Nth leader window (4 slots) carries an UpdateParent (fast leader handover); 0 = never. */
  updateParentEvery: number;
  /** Initial balance of the demo payer (lamports). */
  faucetLamports: bigint;
  /** Ledger bounds: blocks kept, and transactions kept across them (the newest 151 blocks are always kept). */
  ledgerSlots: number;
  ledgerTransactions: number;
  maxBodyBytes: number;
  maxBatch: number;
  maxConnections: number;
  maxSubscriptions: number;
  maxSubscriptionsPerConnection: number;
  maxWsBufferedBytes: number;
}

export const LOCALCHAIN_DEFAULTS: Omit<LocalChainConfig, 'shredTo' | 'shredVersion'> = {
  enabled: true,
  host: '127.0.0.1',
  port: 18899,
  slotMs: 400,
  ticksPerSlot: 64,
  hashesPerTick: 8,
  blockFormat: 'alpenglow',
  updateParentEvery: 0,
  slotsPerEpoch: 8192,
  entryBatchMs: 20,
  faucetLamports: 1_000_000n * 1_000_000_000n,
  ledgerSlots: 4096,
  ledgerTransactions: 20_000,
  maxBodyBytes: 256 * 1024,
  maxBatch: 256,
  maxConnections: 1024,
  maxSubscriptions: 10_000,
  maxSubscriptionsPerConnection: 1000,
  maxWsBufferedBytes: 4 * 1024 * 1024,
};

function lamports(o: Record<string, unknown>, key: string, path: string, dflt: bigint): bigint {
  const v = o[key];
  if (v === undefined) return dflt;
  const s = typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : typeof v === 'string' ? v.trim() : '';
  if (!/^\d{1,20}$/.test(s) || BigInt(s) >= 2n ** 64n) throw new ConfigError(`${path}.${key}: expected lamports as an integer (number or string) below 2^64, got ${JSON.stringify(v)}`);
  return BigInt(s);
}

export function parseLocalChainConfig(raw: unknown): LocalChainConfig {
  const p = 'localchain';
  const o = section(raw, p);
  const d = LOCALCHAIN_DEFAULTS;
  const listen = hostPort(o, 'listen', p, `${d.host}:${d.port}`);
  const shredTo = optStr(o, 'shredTo', p);
  if (shredTo !== undefined && splitHostPort(shredTo, '127.0.0.1') === null) throw new ConfigError(`${p}.shredTo: expected HOST:PORT, got ${JSON.stringify(shredTo)}`);
  const sv = o.shredVersion;
  const blockFormat = oneOf(o, 'blockFormat', p, ['tower', 'alpenglow'] as const, d.blockFormat);
  const cfg: LocalChainConfig = {
    enabled: bool(o, 'enabled', p, d.enabled),
    host: listen.host,
    port: listen.port,
    slotMs: int(o, 'slotMs', p, d.slotMs, 10, 60_000),
    ticksPerSlot: int(o, 'ticksPerSlot', p, d.ticksPerSlot, 1, 64),
    hashesPerTick: int(o, 'hashesPerTick', p, d.hashesPerTick, 1, 100_000),
    slotsPerEpoch: int(o, 'slotsPerEpoch', p, d.slotsPerEpoch, 32, 432_000),
    entryBatchMs: int(o, 'entryBatchMs', p, d.entryBatchMs, 1, 60_000),
    shredTo,
    blockFormat,
    updateParentEvery: int(o, 'updateParentEvery', p, d.updateParentEvery, 0, 1_000_000),
    shredVersion: sv === undefined || sv === null || sv === '' ? undefined : int(o, 'shredVersion', p, 0, 0, 0xffff),
    faucetLamports: lamports(o, 'faucetLamports', p, d.faucetLamports),
    ledgerSlots: int(o, 'ledgerSlots', p, d.ledgerSlots, 151),
    ledgerTransactions: int(o, 'ledgerTransactions', p, d.ledgerTransactions, 1),
    maxBodyBytes: int(o, 'maxBodyBytes', p, d.maxBodyBytes, 4096, 64 * 1024 * 1024),
    maxBatch: int(o, 'maxBatch', p, d.maxBatch, 1, 100_000),
    maxConnections: int(o, 'maxConnections', p, d.maxConnections, 1),
    maxSubscriptions: int(o, 'maxSubscriptions', p, d.maxSubscriptions, 1),
    maxSubscriptionsPerConnection: int(o, 'maxSubscriptionsPerConnection', p, d.maxSubscriptionsPerConnection, 1),
    maxWsBufferedBytes: int(o, 'maxWsBufferedBytes', p, d.maxWsBufferedBytes, 1024),
  };
  if (cfg.updateParentEvery > 0 && blockFormat !== 'alpenglow') throw new ConfigError(`${p}.updateParentEvery: an UpdateParent exists in Alpenglow blocks only; set ${p}.blockFormat to "alpenglow" or updateParentEvery to 0`);
  return cfg;
}
