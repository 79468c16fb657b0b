import { ConfigError, bool, int, oneOf, section, str, strList } from '../infra/base/config-read';
import { SUBMIT_TRACES_RETENTION_MS, TOPIC } from './topics';

// The `bus` section of the config file: which Bus implementation runs (bus/open.ts) and how it is set up.

export interface BusConfig {
  kind: 'embedded' | 'kafka';
  brokers: string[];
  clientId: string;
  /** Create missing topics at start (dev and single-machine runs); production clusters usually pre-create. */
  createTopics: boolean;
  streamPartitions: number;
  /** Retention of `submit.traces` when this process creates it (ms); default SUBMIT_TRACES_RETENTION_MS (a day). */
  submitTracesRetentionMs?: number;
  /** The embedded bus's memory bounds (bus.embedded); absent = EMBEDDED_LIMITS_DEFAULTS. Kafka ignores them. */
  embedded?: EmbeddedLimits;
}

/** Per-partition bounds of a plain topic in the embedded bus: records kept, and key + value + header bytes kept. */
export interface PartitionBounds {
  maxMessagesPerPartition: number;
  maxBytesPerPartition: number;
}

/**
 * `bus.embedded`: what the in-process bus may retain, per topic (keyed as in TOPIC: streamTransactions, …), with
 * `maxMessagesPerPartition` / `maxBytesPerPartition` for any other plain topic. Compacted topics (rentals) keep
 * their live keys whatever these say. Retention by time (the topic's retentionMs) applies as well.
 */
export interface EmbeddedLimits extends PartitionBounds {
  topics: Record<string, PartitionBounds>;
}

type TopicKey = keyof typeof TOPIC;

const MIB = 1024 * 1024;

/**
 * The one-machine run's bounds, sized so `npm start` (demo traffic at 20 tx/s) stays under ~1 GB RSS for all its
 * processes after an hour (README, "Memory"; measured in test/bench/RUNS.md). What they retain only serves readers
 * that start late or fall behind: every reader on one machine reads live. The bytes counted are keys, values and
 * headers; each retained record costs ~1.2 KiB of RSS more (its message object and Buffer views on the V8 heap,
 * ~0.6 KiB, and its own allocation's bookkeeping: measured with 100k records of 130 and 500 bytes).
 */
export const EMBEDDED_LIMITS_DEFAULTS: { maxMessagesPerPartition: number; maxBytesPerPartition: number; topics: Record<TopicKey, PartitionBounds> } = {
  maxMessagesPerPartition: 200_000,
  maxBytesPerPartition: 256 * MIB,
  topics: {
    // ~42 min of the demo's 20 tx/s (~0.5 KiB a record): how far back a v2 cursor on transactions resumes (README).
    streamTransactions: { maxMessagesPerPartition: 50_000, maxBytesPerPartition: 64 * MIB },
    streamSlots: { maxMessagesPerPartition: 10_000, maxBytesPerPartition: 4 * MIB },
    // Up to ~7 statuses per slot: the same window of slots as stream.slots.
    streamSlotStatus: { maxMessagesPerPartition: 70_000, maxBytesPerPartition: 8 * MIB },
    // Every transaction's wire bytes plus the ticks (~64 entries a slot, ~0.12 KiB each): ~5 min of slots.
    streamEntries: { maxMessagesPerPartition: 50_000, maxBytesPerPartition: 32 * MIB },
    // Read live by the billing job in the same process; a backlog of 200k per partition only made the gateways'
    // heap (and so their GC pauses) grow with every request served. 50k per partition is ~15 s of billing lag at
    // 10k metered requests/s.
    usageEvents: { maxMessagesPerPartition: 50_000, maxBytesPerPartition: 32 * MIB },
    // ~3 events per accepted transaction (~0.4 KiB each); on one machine they serve live readers and GET /trace
    // holds the rest. 20k per partition (3) is ~15 min of the demo's traces.
    submitTraces: { maxMessagesPerPartition: 20_000, maxBytesPerPartition: 16 * MIB },
    rentals: { maxMessagesPerPartition: 200_000, maxBytesPerPartition: 256 * MIB },
    fleetUsage: { maxMessagesPerPartition: 50_000, maxBytesPerPartition: 16 * MIB },
  },
};

function parseBounds(raw: unknown, path: string, dflt: PartitionBounds): PartitionBounds {
  const o = section(raw, path);
  return {
    maxMessagesPerPartition: int(o, 'maxMessagesPerPartition', path, dflt.maxMessagesPerPartition, 1),
    maxBytesPerPartition: int(o, 'maxBytesPerPartition', path, dflt.maxBytesPerPartition, 1024),
  };
}

export function parseEmbeddedLimits(raw: unknown): EmbeddedLimits {
  const p = 'bus.embedded';
  const o = section(raw, p);
  const d = EMBEDDED_LIMITS_DEFAULTS;
  const known = new Set<string>([...Object.keys(TOPIC), 'maxMessagesPerPartition', 'maxBytesPerPartition']);
  const unknown = Object.keys(o).filter((k) => !known.has(k));
  if (unknown.length > 0) throw new ConfigError(`${p}.${unknown[0]}: not a setting of the embedded bus (expected maxMessagesPerPartition, maxBytesPerPartition, or a topic: ${Object.keys(TOPIC).join(', ')})`);
  const base = parseBounds(o, p, d);
  const topics: Record<string, PartitionBounds> = {};
  for (const key of Object.keys(TOPIC) as TopicKey[]) topics[TOPIC[key]] = parseBounds(o[key], `${p}.${key}`, d.topics[key]);
  return { ...base, topics };
}

export function parseBusConfig(raw: unknown): BusConfig {
  const o = section(raw, 'bus');
  const brokers = strList(o, 'brokers', 'bus', []);
  const kind = oneOf(o, 'kind', 'bus', ['embedded', 'kafka'] as const, brokers.length > 0 ? 'kafka' : 'embedded');
  if (kind === 'kafka' && brokers.length === 0) throw new ConfigError('bus.brokers: required when bus.kind is kafka (or set KAFKA_BROKERS)');
  return {
    kind,
    brokers,
    clientId: str(o, 'clientId', 'bus', 'meridian'),
    createTopics: bool(o, 'createTopics', 'bus', true),
    streamPartitions: int(o, 'streamPartitions', 'bus', 1, 1, 1024),
    submitTracesRetentionMs: int(o, 'submitTracesRetentionMs', 'bus', SUBMIT_TRACES_RETENTION_MS, 60_000),
    embedded: parseEmbeddedLimits(o.embedded),
  };
}
