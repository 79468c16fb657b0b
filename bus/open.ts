import type { Bus } from './bus';
import { EmbeddedBus } from './embedded';
import { KafkaBus } from './kafka';
import { defaultTopicSpecs } from './topics';
import { parseEmbeddedLimits, type BusConfig, type EmbeddedLimits } from './config';
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

export async function openBus(cfg: BusConfig, opts: OpenBusOptions = {}): Promise<Bus> {
  const bus: Bus =
    cfg.kind === 'kafka' ? new KafkaBus({ brokers: cfg.brokers, clientId: cfg.clientId, idempotent: opts.idempotent ?? false, ...(opts.log === undefined ? {} : { log: opts.log }), ...(opts.setting === undefined ? {} : { setting: opts.setting }) }) : new EmbeddedBus(embeddedOptions(cfg.embedded ?? parseEmbeddedLimits(undefined)));
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

/** bus.embedded as the embedded bus's options: the bounds for topics not named, and each named topic's own. */
function embeddedOptions(l: EmbeddedLimits): ConstructorParameters<typeof EmbeddedBus>[0] {
  return { maxMessagesPerPartition: l.maxMessagesPerPartition, maxBytesPerPartition: l.maxBytesPerPartition, topicLimits: l.topics };
}
