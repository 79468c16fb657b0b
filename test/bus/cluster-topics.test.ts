import assert from 'node:assert/strict';
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { KafkaBus } from '../../bus/kafka';
import { defaultTopicSpecs } from '../../bus/topics';
import { startLocalCluster, type LocalCluster } from '../../infra/local/kafka/cluster';
import { quietLog } from '../support/log-capture';
import { waitFor } from '../support/wait';

// The project's own topic creation on a real 3-broker KRaft cluster: every topic gets what the README's table
// ("What each topic needs on a real cluster") says — partitions, 3 replicas, min.insync.replicas (2; fleet.usage 1),
// cleanup policy and retention — and a second instance creating them again finds them (existing topics are not an
// error). The same check stands in the multi-host test; this one runs in every CI run.

describe('bus: topics on a 3-broker KRaft cluster, as the README states', function () {
  this.timeout(240_000);
  let cluster: LocalCluster | undefined;

  after(async () => {
    await cluster?.destroy();
  });

  it('replicas, min ISR, cleanup and retention per topic; a second creation is not an error', async () => {
    cluster = await startLocalCluster({ hosts: ['127.0.37.11', '127.0.37.12', '127.0.37.13'], replication: 3, minInsync: 2 });
    const specs = defaultTopicSpecs();
    const first = new KafkaBus({ brokers: cluster.brokers, clientId: 'topics-a', log: quietLog('warn').log });
    await first.createTopics(specs);
    await first.close();
    // The next instance starts once every broker knows the topics: right after a creation, a broker the new topic's
    // metadata has not reached yet answers "does not host this topic-partition" (kafkajs logs it as a warning and
    // retries) — the README's known gap for instances started in that moment.
    for (const b of cluster.brokers) {
      const one = new Kafka({ brokers: [b], clientId: 'topics-probe', logLevel: logLevel.NOTHING, retry: { retries: 0 } }).admin();
      await one.connect();
      await waitFor(async () => {
        const m = await one.fetchTopicMetadata({ topics: specs.map((s) => s.name) }).catch(() => null);
        return m !== null && m.topics.every((t) => t.partitions.length > 0 && t.partitions.every((x) => x.leader >= 0));
      }, 30_000, `broker ${b} to know every topic`, 100);
      await one.disconnect();
    }
    // A second instance's start: the topics exist, which it must not report as an error (kafkajs logs "Topic
    // creation errors" for them unless the bus asks first).
    const { log, lines } = quietLog('info');
    const second = new KafkaBus({ brokers: cluster.brokers, clientId: 'topics-b', log });
    await second.createTopics(specs);
    await second.close();
    assert.deepEqual(lines.filter((l) => /"level":(40|50)|creation error|already exists/i.test(l)), [], 'the second creation logs no warning or error');
    const admin = new Kafka({ brokers: cluster.brokers, clientId: 'topics-describe', logLevel: logLevel.NOTHING }).admin();
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
  });
});
