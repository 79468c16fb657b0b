import type { Bus } from './bus';
import { EmbeddedBus } from './embedded';
import { KafkaBus } from './kafka';
import { TOPIC, defaultTopicSpecs } from './topics';
import type { BusConfig } from './config';
import type { Log } from '../infra/base/log';

// The one place that knows which Bus implementation runs (DESIGN.md: nothing but bus/ knows).

export interface OpenBusOptions {
  /** Kafka only: the idempotent producer, for a bus that carries usage.events (see UsageProducer). */
  idempotent?: boolean;
  /** Kafka only: where the client's own log lines go (default the process logger). */
  log?: Log;
  /** Kafka only: where the brokers were set, for the one line an unreachable cluster gets (default bus.brokers). */
  setting?: string;
}

// On one machine the stream and usage topics are read live; what they retain only serves late readers, so keep it
// small instead of the embedded default of 200k messages per partition.
const EMBEDDED_STREAM_LIMITS = {
  [TOPIC.streamTransactions]: { maxMessagesPerPartition: 50_000, maxBytesPerPartition: 64 * 1024 * 1024 },
  [TOPIC.streamSlots]: { maxMessagesPerPartition: 10_000 },
  // Up to ~7 statuses per slot: the same window of slots as stream.slots.
  [TOPIC.streamSlotStatus]: { maxMessagesPerPartition: 70_000 },
  // Every transaction's wire bytes plus the ticks (~64 entries a slot): about the transactions topic's volume.
  [TOPIC.streamEntries]: { maxMessagesPerPartition: 50_000, maxBytesPerPartition: 64 * 1024 * 1024 },
  // Read live by the billing job in the same process; a backlog of 200k per partition only made the gateways'
  // heap (and so their GC pauses) grow with every request served. 50k per partition is ~15 s of billing lag at
  // 10k metered requests/s.
  [TOPIC.usageEvents]: { maxMessagesPerPartition: 50_000, maxBytesPerPartition: 32 * 1024 * 1024 },
  // Several events per accepted transaction; on one machine they serve live readers and GET /trace holds the rest.
  [TOPIC.submitTraces]: { maxMessagesPerPartition: 50_000, maxBytesPerPartition: 32 * 1024 * 1024 },
};

export async function openBus(cfg: BusConfig, opts: OpenBusOptions = {}): Promise<Bus> {
  const bus: Bus =
    cfg.kind === 'kafka' ? new KafkaBus({ brokers: cfg.brokers, clientId: cfg.clientId, idempotent: opts.idempotent ?? false, ...(opts.log === undefined ? {} : { log: opts.log }), ...(opts.setting === undefined ? {} : { setting: opts.setting }) }) : new EmbeddedBus({ topicLimits: EMBEDDED_STREAM_LIMITS });
  if (cfg.createTopics) {
    try {
      await bus.createTopics(defaultTopicSpecs({ stream: cfg.streamPartitions }, cfg.submitTracesRetentionMs === undefined ? {} : { submitTracesMs: cfg.submitTracesRetentionMs }));
    } catch (e) {
      await bus.close();
      throw e;
    }
  }
  return bus;
}
