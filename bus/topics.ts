import type { TopicSpec } from './bus';

// Topic names of DESIGN.md. One codec module per topic lives in bus/topics/.
export const TOPIC = {
  streamTransactions: 'stream.transactions',
  streamSlots: 'stream.slots',
  streamSlotStatus: 'stream.slot-status',
  /** One record per decoded entry, with its transactions' wire bytes (bus/topics/stream-entries.ts). */
  streamEntries: 'stream.entries',
  usageEvents: 'usage.events',
  submitTraces: 'submit.traces',
  rentals: 'rentals',
  /** Gateway instances' per-rental spend, exchanged so a fleet keeps each rental's limits (bus/topics/fleet-usage.ts). */
  fleetUsage: 'fleet.usage',
} as const;

export type TopicName = (typeof TOPIC)[keyof typeof TOPIC];

const HOUR_MS = 3_600_000;

/** fleet.usage's retention: reports older than the longest budget window count for nothing. */
export const FLEET_USAGE_RETENTION_MS = 60_000;

/** Default topic layout. Stream topics keep one partition so every reader sees publish order. */
/** submit.traces' default retention: a day of traces for customers' pipelines to catch up on. */
export const SUBMIT_TRACES_RETENTION_MS = 24 * HOUR_MS;

/** Every topic keeps 3 copies with min.insync.replicas 2 (bus/replication.ts) unless its entry says otherwise. */
export function defaultTopicSpecs(partitions: { stream?: number; usage?: number } = {}, retention: { submitTracesMs?: number } = {}): TopicSpec[] {
  return [
    { name: TOPIC.streamTransactions, partitions: partitions.stream ?? 1, compacted: false, retentionMs: HOUR_MS },
    { name: TOPIC.streamSlots, partitions: 1, compacted: false, retentionMs: HOUR_MS },
    { name: TOPIC.streamSlotStatus, partitions: 1, compacted: false, retentionMs: HOUR_MS },
    // One partition: a slot's entries stay in publish order for every reader.
    { name: TOPIC.streamEntries, partitions: 1, compacted: false, retentionMs: HOUR_MS },
    { name: TOPIC.usageEvents, partitions: partitions.usage ?? 3, compacted: false, retentionMs: 7 * 24 * HOUR_MS },
    { name: TOPIC.submitTraces, partitions: 3, compacted: false, retentionMs: retention.submitTracesMs ?? SUBMIT_TRACES_RETENTION_MS },
    { name: TOPIC.rentals, partitions: 1, compacted: true },
    // One partition (every instance reads every report, in order); a minute is six times the longest default window.
    // min.insync.replicas 1: a report is stale in 200 ms and the next one replaces it, so the exchange keeps going
    // on the one broker left rather than stopping (which would leave every instance counting alone).
    { name: TOPIC.fleetUsage, partitions: 1, compacted: false, retentionMs: FLEET_USAGE_RETENTION_MS, minInsync: 1 },
  ];
}
