import { ConfigError, bool, int, oneOf, section, str, strList } from '../infra/base/config-read';
import { SUBMIT_TRACES_RETENTION_MS } from './topics';

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
  };
}
