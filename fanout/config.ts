import { TOPIC } from '../bus/topics';
import os from 'node:os';
import { ConfigError, bool, hostPort, int, oneOf, section, str, type Raw } from '../infra/base/config-read';
import { MAX_FILTERS_PER_SET } from './filter/compile';
import { DEFAULT_FILTER_PART_LIMITS as FP, MAX_TX_BYTES, type FilterPartLimits } from './filter/compile-extra';

export interface FanoutConfig {
  enabled: boolean;
  host: string;
  port: number;
  heartbeatMs: number;
  /** Filter-update messages per second per stream before RESOURCE_EXHAUSTED subscribe_rate_limit. */
  maxFilterUpdatesPerSec: number;
  maxFilters: number;
  maxKeysPerList: number;
  maxFilterNameLen: number;
  /** Filter keys (all lists of all filters) one stream may hold; beyond → INVALID_ARGUMENT too_many_keys. */
  maxKeysPerStream: number;
  /** New or changed filter keys one stream may send per second (updates are charged by size as well as count). */
  maxFilterKeysPerSec: number;
  /** Filter keys all streams together may hold; an update beyond → RESOURCE_EXHAUSTED filter_capacity. */
  maxKeysTotal: number;
  /** New or changed filter keys all streams together may send per second (bounds the CPU spent compiling). */
  maxFilterKeysPerSecTotal: number;
  /** Open streams: on one connection, from one IP address, in the process. Beyond → RESOURCE_EXHAUSTED. */
  maxStreamsPerConnection: number;
  maxStreamsPerIp: number;
  maxStreams: number;
  /** Per-subscriber queue bounds; overflow ends that subscriber with DATA_LOSS. */
  queueMaxBytes: number;
  queueMaxMessages: number;
  /** A subscriber whose oldest queued message is older than this (ms) is ended with DATA_LOSS. */
  queueMaxLagMs: number;
  /** Bytes queued for all subscribers together; beyond it the most lagged are ended (DATA_LOSS) first. */
  queueBudgetBytes: number;
  /** How many recent signatures are remembered to drop duplicates from redundant ingest workers. */
  dedupeWindow: number;
  auth: {
    /** none: anyone (local default). ip: egress IP must be a rental's. token: x-token must be a rental's. */
    mode: 'none' | 'ip' | 'token';
    /** A rental whose pps is below this is refused with PERMISSION_DENIED "PPS limit requirement not met". 0 = off. */
    ppsRequirement: number;
  };
  /**
   * After a stream is ended by the server, how long its status may wait behind unread data before the HTTP/2
   * stream is reset (a subscriber that stopped reading never lets the status through).
   */
  endGraceMs: number;
  /**
   * What carries the streams: `h2`, the fanout's own HTTP/2 server (fanout/h2/: every response of a turn in one
   * socket write per connection), or `grpc-js` (kept as the reference the benchmark compares against).
   */
  transport: 'h2' | 'grpc-js';
  /** Topic names to read (defaults: stream.transactions, stream.slots); tests and shared clusters override them. */
  /**
   * slotStatus: stream.slot-status, read by v2 for slot statuses past the first shred; '' = not read. It defaults to
   * the standard name only when `slots` has its standard name too (a deployment or test that renames its topics
   * names this one as well, rather than reading another's).
   * entries: read by v2 only (entry updates and RAW transactions).
   */
  topics: { transactions: string; slots: string; slotStatus: string; entries: string };
  /**
   * Processes serving subscribers on the one listen port (node:cluster), each reading the bus itself and holding
   * the per-process budgets above. 0 ("auto" in the file) = one per core. More than one needs the Kafka bus.
   * Every cap above is then per worker: the queue budget, the stream caps (per IP too: one address may hold
   * maxStreamsPerIp on each worker its connections land on) and the filter key totals.
   */
  workers: number;
  lookupTables: LookupTablesConfig;
  /** The v2 stream (proto/stream_v2.proto) on the same port. */
  v2: {
    enabled: boolean;
    /** Replays (streams reading the bus from a cursor, slot or time) running at once; more → RESOURCE_EXHAUSTED too_many_replays. */
    maxReplays: number;
    /** Bus records one replay reads per second at most (matched or not). */
    replayRecordsPerSec: number;
    /** Limits of TransactionFilter's instruction filters (fanout/filter/compile-extra.ts; README). */
    filterParts: FilterPartLimits;
  };
}

/** The address-lookup-table cache (fanout/lookup-tables/): one per process, shared by every stream. */
export interface LookupTablesConfig {
  /**
   * The chain node's JSON-RPC the tables are fetched from (getMultipleAccounts). Empty: no cache, nothing
   * resolves. The launcher fills in the local chain's when it runs one and this is empty.
   */
  rpcUrl: string;
  /** v1 filters also match the addresses a transaction loads through its tables (the response is unchanged). */
  matchV1: boolean;
  /** The most a transaction waits for an unknown table's fetch before it is matched on what is known (ms). */
  waitMs: number;
  /** Transactions waiting at once; beyond, a transaction with an unknown table is matched at once. */
  maxWaiting: number;
  /** Tables held, and addresses over all of them (32 bytes each); past either, CLOCK eviction. */
  maxTables: number;
  maxAddresses: number;
  /** getMultipleAccounts calls out at once (each ≤ 100 tables). */
  maxInFlight: number;
  /** A table the node did not have, or whose fetch failed, is not asked for again before this (ms). */
  retryMs: number;
  /** Tables changed by instructions seen in the stream are read again at `confirmed` this often (ms). */
  confirmMs: number;
  /** Timeout of one fetch (ms). */
  fetchTimeoutMs: number;
  /**
   * The chain node's PubSub WebSocket: held tables are kept current from its account notifications
   * (accountSubscribe). Empty: none. The launcher fills in the local chain's when it fills in rpcUrl.
   */
  wsUrl: string;
  /** Tables watched through account notifications at most (one subscription each). */
  maxSubscriptions: number;
}

function parseLookupTables(raw: unknown, p: string): LookupTablesConfig {
  const o = section(raw, p);
  const wsUrl = str(o, 'wsUrl', p, '');
  // Checked here: the notifier would otherwise fail at startup on a URL the WebSocket client refuses. The value
  // is not echoed (it may carry an API key).
  if (wsUrl !== '' && !/^wss?:\/\/[^\s]+$/.test(wsUrl)) throw new ConfigError(`${p}.wsUrl: expected a ws:// or wss:// URL`);
  return {
    rpcUrl: str(o, 'rpcUrl', p, ''),
    matchV1: bool(o, 'matchV1', p, false),
    waitMs: int(o, 'waitMs', p, 50, 0, 10_000),
    maxWaiting: int(o, 'maxWaiting', p, 10_000, 0),
    maxTables: int(o, 'maxTables', p, 50_000, 1),
    maxAddresses: int(o, 'maxAddresses', p, 1_000_000, 256),
    maxInFlight: int(o, 'maxInFlight', p, 4, 1, 64),
    retryMs: int(o, 'retryMs', p, 1_000, 0),
    confirmMs: int(o, 'confirmMs', p, 400, 10),
    fetchTimeoutMs: int(o, 'fetchTimeoutMs', p, 2_000, 10),
    wsUrl,
    maxSubscriptions: int(o, 'maxSubscriptions', p, 10_000, 0, 1_000_000),
  };
}

/** fanout.v2.filterParts: per filter and per stream; a prefix or bytes beyond a transaction's size mean nothing. */
function parseFilterParts(o: Raw, p: string): FilterPartLimits {
  return {
    maxInstructionFilters: int(o, 'maxInstructionFilters', p, FP.maxInstructionFilters, 0, 256),
    maxInstructionFiltersPerStream: int(o, 'maxInstructionFiltersPerStream', p, FP.maxInstructionFiltersPerStream, 0, 8192),
    maxDataPrefixBytes: int(o, 'maxDataPrefixBytes', p, FP.maxDataPrefixBytes, 0, MAX_TX_BYTES),
    maxDataAt: int(o, 'maxDataAt', p, FP.maxDataAt, 0, 64),
    maxDataAtBytes: int(o, 'maxDataAtBytes', p, FP.maxDataAtBytes, 0, MAX_TX_BYTES),
  };
}

/** fanout.workers: a count, or "auto" / 0 for one per core. */
function workerCount(o: Raw, p: string): number {
  if (o.workers === 'auto') return 0;
  return int(o, 'workers', p, 1, 0, 256);
}

export function parseFanoutConfig(raw: unknown): FanoutConfig {
  const p = 'fanout';
  const o = section(raw, p);
  const a = section(o.auth, `${p}.auth`);
  const t = section(o.topics, `${p}.topics`);
  const v2 = section(o.v2, `${p}.v2`);
  const listen = hostPort(o, 'listen', p, '127.0.0.1:20202');
  const cfg: FanoutConfig = {
    enabled: bool(o, 'enabled', p, true),
    host: listen.host,
    port: listen.port,
    heartbeatMs: int(o, 'heartbeatMs', p, 10_000, 10),
    maxFilterUpdatesPerSec: int(o, 'maxFilterUpdatesPerSec', p, 50, 1),
    maxFilters: int(o, 'maxFilters', p, 16, 1),
    maxKeysPerList: int(o, 'maxKeysPerList', p, 1000, 1),
    maxFilterNameLen: int(o, 'maxFilterNameLen', p, 128, 1),
    maxKeysPerStream: int(o, 'maxKeysPerStream', p, 48_000, 1),
    maxFilterKeysPerSec: int(o, 'maxFilterKeysPerSec', p, 100_000, 1),
    maxFilterKeysPerSecTotal: int(o, 'maxFilterKeysPerSecTotal', p, 500_000, 1),
    maxKeysTotal: int(o, 'maxKeysTotal', p, 2_000_000, 1),
    maxStreamsPerConnection: int(o, 'maxStreamsPerConnection', p, 128, 1),
    maxStreamsPerIp: int(o, 'maxStreamsPerIp', p, 1024, 1),
    maxStreams: int(o, 'maxStreams', p, 20_000, 1),
    queueMaxBytes: int(o, 'queueMaxBytes', p, 16 * 1024 * 1024, 1024),
    queueMaxMessages: int(o, 'queueMaxMessages', p, 20_000, 1),
    queueMaxLagMs: int(o, 'queueMaxLagMs', p, 10_000, 1),
    queueBudgetBytes: int(o, 'queueBudgetBytes', p, 256 * 1024 * 1024, 1024 * 1024),
    dedupeWindow: int(o, 'dedupeWindow', p, 100_000, 1),
    auth: {
      mode: oneOf(a, 'mode', `${p}.auth`, ['none', 'ip', 'token'] as const, 'none'),
      ppsRequirement: int(a, 'ppsRequirement', `${p}.auth`, 0, 0),
    },
    endGraceMs: int(o, 'endGraceMs', p, 15_000, 0),
    transport: oneOf(o, 'transport', p, ['h2', 'grpc-js'] as const, 'h2'),
    // fanout.directWrites: only `true` is left. grpc-js's own per-message write path (false) stalled under
    // non-reading peers, cost more per message than direct writes (README, measured figures) and no test ran it;
    // it was removed rather than kept as a third, untested response path.
    ...(bool(o, 'directWrites', p, true) ? {} : directWritesGone(p)),
    topics: {
      transactions: str(t, 'transactions', `${p}.topics`, TOPIC.streamTransactions),
      slots: str(t, 'slots', `${p}.topics`, TOPIC.streamSlots),
      slotStatus: str(t, 'slotStatus', `${p}.topics`, str(t, 'slots', `${p}.topics`, TOPIC.streamSlots) === TOPIC.streamSlots ? TOPIC.streamSlotStatus : ''),
      entries: str(t, 'entries', `${p}.topics`, TOPIC.streamEntries),
    },
    workers: workerCount(o, p),
    lookupTables: parseLookupTables(o.lookupTables, `${p}.lookupTables`),
    v2: {
      enabled: bool(v2, 'enabled', `${p}.v2`, true),
      maxReplays: int(v2, 'maxReplays', `${p}.v2`, 64, 0),
      replayRecordsPerSec: int(v2, 'replayRecordsPerSec', `${p}.v2`, 100_000, 1),
      filterParts: parseFilterParts(section(v2.filterParts, `${p}.v2.filterParts`), `${p}.v2.filterParts`),
    },
  };
  if (cfg.maxFilters > MAX_FILTERS_PER_SET) throw new ConfigError(`${p}.maxFilters: at most ${MAX_FILTERS_PER_SET} (matches travel as a 32-bit mask)`);
  return cfg;
}

/**
 * How many worker processes to run on this bus. Workers read the bus each for themselves, and an embedded bus
 * lives inside one process: there "auto" means 1, and an explicit count above 1 is refused (parseConfig says so
 * before anything starts).
 */
export function resolveWorkers(cfg: Pick<FanoutConfig, 'workers'>, busKind: 'embedded' | 'kafka'): number {
  if (busKind === 'embedded') return 1;
  return cfg.workers === 0 ? Math.max(1, os.availableParallelism()) : cfg.workers;
}

function directWritesGone(p: string): never {
  throw new ConfigError(`${p}.directWrites: false is no longer supported: grpc-js's own write path was removed (with fanout.transport grpc-js, responses are always written straight to the HTTP/2 stream); remove the key`);
}
