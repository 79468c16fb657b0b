import assert from 'node:assert/strict';
import { Kafka, logLevel } from 'kafkajs';
import { KafkaBus } from '../../bus/kafka';
import { defaultTopicSpecs } from '../../bus/topics';
import { startLocalCluster, type LocalCluster } from '../../infra/local/kafka/cluster';
import { assertTopicsAsSpecified } from '../support/cluster-topics';
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
    await assertTopicsAsSpecified(cluster.brokers, specs);
  });
});
