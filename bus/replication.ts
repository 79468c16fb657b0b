import type { TopicSpec } from './bus';

// How many copies of a topic a Kafka cluster keeps, and how many must hold a record before a produce is
// acknowledged. Every produce of the project asks acks=all (bus/kafka.ts), so min.insync.replicas is what an
// acknowledgement means: with 3 replicas and min ISR 2, an acknowledged record survives the loss of any one broker,
// and with two brokers down a produce fails (NOT_ENOUGH_REPLICAS) rather than being kept on one disk only.

/** What a topic asks for on a cluster large enough (TopicSpec.replicas / minInsync when it does not say). */
export const DEFAULT_REPLICAS = 3;
export const DEFAULT_MIN_INSYNC = 2;

export interface Replication {
  replicationFactor: number;
  minInsync: number;
}

/**
 * The spec's replication on a cluster of `brokers` nodes: the replication factor capped at the broker count (one
 * node cannot hold three copies), and min.insync.replicas at most one below it when the factor is above one, so a
 * topic capped to fewer replicas than it asked for still takes produces with one broker down.
 */
export function replicationFor(spec: Pick<TopicSpec, 'replicas' | 'minInsync'>, brokers: number): Replication {
  const wanted = spec.replicas ?? DEFAULT_REPLICAS;
  const replicationFactor = Math.max(1, Math.min(wanted, brokers));
  const wantedIsr = spec.minInsync ?? DEFAULT_MIN_INSYNC;
  const capped = replicationFactor < wanted ? Math.max(1, replicationFactor - 1) : replicationFactor;
  return { replicationFactor, minInsync: Math.max(1, Math.min(wantedIsr, capped)) };
}
