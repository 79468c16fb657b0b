import type { TopicSpec } from './bus';

// Topic names of DESIGN.md. One codec module per topic lives in bus/topics/.
export const TOPIC = {
  streamTransactions: 'stream.transactions',
  streamSlots: 'stream.slots',
  usageEvents: 'usage.events',
  rentals: 'rentals',
} as const;

export type TopicName = (typeof TOPIC)[keyof typeof TOPIC];

const HOUR_MS = 3_600_000;

/** Default topic layout. Stream topics keep one partition so every reader sees publish order. */
export function defaultTopicSpecs(partitions: { stream?: number; usage?: number } = {}): TopicSpec[] {
  return [
    { name: TOPIC.streamTransactions, partitions: partitions.stream ?? 1, compacted: false, retentionMs: HOUR_MS },
    { name: TOPIC.streamSlots, partitions: 1, compacted: false, retentionMs: HOUR_MS },
    { name: TOPIC.usageEvents, partitions: partitions.usage ?? 3, compacted: false, retentionMs: 7 * 24 * HOUR_MS },
    { name: TOPIC.rentals, partitions: 1, compacted: true },
  ];
}
