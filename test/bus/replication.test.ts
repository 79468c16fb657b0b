import assert from 'node:assert/strict';
import { replicationFor } from '../../bus/replication';
import { defaultTopicSpecs, TOPIC } from '../../bus/topics';

// The replication a topic gets on clusters of 1..5 brokers: capped at the broker count, min ISR below it once capped.

describe('bus: topic replication on a cluster', () => {
  it('3 copies and min ISR 2 by default, capped at the brokers, min ISR one below a capped factor', () => {
    assert.deepEqual(replicationFor({}, 1), { replicationFactor: 1, minInsync: 1 });
    assert.deepEqual(replicationFor({}, 2), { replicationFactor: 2, minInsync: 1 });
    assert.deepEqual(replicationFor({}, 3), { replicationFactor: 3, minInsync: 2 });
    assert.deepEqual(replicationFor({}, 5), { replicationFactor: 3, minInsync: 2 });
    assert.deepEqual(replicationFor({ replicas: 5, minInsync: 3 }, 5), { replicationFactor: 5, minInsync: 3 });
    assert.deepEqual(replicationFor({ replicas: 5, minInsync: 3 }, 3), { replicationFactor: 3, minInsync: 2 });
    assert.deepEqual(replicationFor({ minInsync: 1 }, 3), { replicationFactor: 3, minInsync: 1 });
    assert.deepEqual(replicationFor({}, 0), { replicationFactor: 1, minInsync: 1 });
  });

  it('the default topics: fleet.usage keeps taking reports on one broker, every other topic needs two', () => {
    for (const s of defaultTopicSpecs()) assert.equal(replicationFor(s, 3).minInsync, s.name === TOPIC.fleetUsage ? 1 : 2, s.name);
  });
});
