import assert from 'node:assert/strict';
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import type { TopicSpec } from '../../bus/bus';

/**
 * Asserts that each topic of `specs` stands on the cluster as the README's table says: its partitions, 3 replicas,
 * min.insync.replicas (2 unless the spec says), cleanup policy and retention.
 */
export async function assertTopicsAsSpecified(brokers: string[], specs: readonly TopicSpec[]): Promise<void> {
  const admin = new Kafka({ brokers, clientId: 'topics-describe', logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const meta = await admin.fetchTopicMetadata({ topics: specs.map((s) => s.name) });
    const described = await admin.describeConfigs({ includeSynonyms: false, resources: specs.map((s) => ({ type: ConfigResourceTypes.TOPIC, name: s.name })) });
    for (const s of specs) {
      const t = meta.topics.find((x) => x.name === s.name)!;
      assert.equal(t.partitions.length, s.partitions, `${s.name} partitions`);
      for (const p of t.partitions) assert.equal(p.replicas.length, 3, `${s.name} replicas`);
      const entries = new Map(described.resources.find((r) => r.resourceName === s.name)!.configEntries.map((e) => [e.configName, e.configValue]));
      assert.equal(entries.get('min.insync.replicas'), String(s.minInsync ?? 2), `${s.name} min.insync.replicas`);
      assert.equal(entries.get('cleanup.policy'), s.compacted ? 'compact' : 'delete', `${s.name} cleanup.policy`);
      if (!s.compacted && s.retentionMs !== undefined) assert.equal(entries.get('retention.ms'), String(s.retentionMs), `${s.name} retention.ms`);
    }
  } finally {
    await admin.disconnect();
  }
}
