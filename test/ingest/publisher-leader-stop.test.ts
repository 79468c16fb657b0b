import { KafkaBus } from '../../bus/kafka';
import { defaultTopicSpecs, TOPIC } from '../../bus/topics';
import { Publisher } from '../../ingest/publisher';
import { startLocalCluster, type LocalCluster } from '../../infra/local/kafka/cluster';
import { quietLog } from '../support/log-capture';
import { waitFor } from '../support/wait';

// Ingest's publisher on a real 3-broker cluster while the leader of stream.transactions stops (a controlled
// shutdown: leadership moves to another replica): one record per 20 ms to each of ingest's topics in turn, it must
// keep publishing after the stop. (The multi-host test's "ingests stop publishing" was not a stall at the stop but
// a publisher one item per round trip behind its feed, at 100–400 ms a produce with acks=all on a loaded machine:
// ingest/publisher.ts now coalesces what queued; this test's 50 items/s is what one round trip at a time kept up.)

describe('ingest publisher: the partition leader broker stops', function () {
  this.timeout(240_000);
  let cluster: LocalCluster | undefined;
  let bus: KafkaBus | undefined;

  after(async () => {
    await bus?.close().catch(() => undefined);
    await cluster?.destroy();
  });

  it('keeps publishing once leadership moved', async () => {
    cluster = await startLocalCluster({ hosts: ['127.0.38.11', '127.0.38.12', '127.0.38.13'], replication: 3, minInsync: 2 });
    const { log } = quietLog('warn');
    bus = new KafkaBus({ brokers: cluster.brokers, clientId: 'leader-stop', log });
    // Every topic ingest publishes to, in turn, as a slot's records go (transactions, entries, slot, statuses).
    const topics: string[] = [TOPIC.streamTransactions, TOPIC.streamEntries, TOPIC.streamSlots, TOPIC.streamSlotStatus];
    await bus.createTopics(defaultTopicSpecs().filter((s) => topics.includes(s.name)));
    const publisher = new Publisher(bus, { maxItems: 1024, log, warnEveryMs: 0 });
    let n = 0;
    const offer = (): void => void publisher.offer({ topic: topics[n % topics.length]!, records: [{ key: Buffer.from(`k${n}`), value: Buffer.from(`v${n++}`) }] });
    const timer = setInterval(offer, 20);
    try {
      await waitFor(() => publisher.stats().published >= 50, 60_000, 'publishing before the stop');
      const leader = await cluster.leaderOf(TOPIC.streamTransactions, 0);
      const node = cluster.nodes.find((x) => x.nodeId === leader)!;
      await node.stop();
      const atStop = publisher.stats().published;
      // Leadership moves within the session timeout (3 s): well within 30 s the publisher must be publishing again.
      await waitFor(() => publisher.stats().published >= atStop + 200, 60_000, 'publishing after the stop');
    } finally {
      clearInterval(timer);
    }
  });
});
