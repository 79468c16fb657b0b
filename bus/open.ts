import type { Bus } from './bus';
import { EmbeddedBus } from './embedded';
import { KafkaBus } from './kafka';
import { defaultTopicSpecs } from './topics';
import type { BusConfig } from '../infra/config';

// The one place that knows which Bus implementation runs (DESIGN.md: nothing but bus/ knows).

export interface OpenBusOptions {
  /** Kafka only: the idempotent producer, for a bus that carries usage.events (see UsageProducer). */
  idempotent?: boolean;
}

export async function openBus(cfg: BusConfig, opts: OpenBusOptions = {}): Promise<Bus> {
  const bus: Bus =
    cfg.kind === 'kafka' ? new KafkaBus({ brokers: cfg.brokers, clientId: cfg.clientId, idempotent: opts.idempotent ?? false }) : new EmbeddedBus();
  if (cfg.createTopics) {
    try {
      await bus.createTopics(defaultTopicSpecs({ stream: cfg.streamPartitions }));
    } catch (e) {
      await bus.close();
      throw e;
    }
  }
  return bus;
}
