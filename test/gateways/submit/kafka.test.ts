import assert from 'node:assert/strict';
import bs58 from 'bs58';
import { KafkaBus } from '../../../bus/kafka';
import { encodeTxRecord } from '../../../bus/topics/stream-transactions';
import { decodeUsageEvent, type UsageEvent } from '../../../bus/topics/usage-events';
import { kafkaBrokers } from '../../support/kafka';
import { quietLog } from '../../support/log-capture';
import { waitFor } from '../../support/wait';
import { post, startHarness, type Harness } from './harness';
import { legacyTx } from './support';
import { startUpstream, type Upstream } from './upstream';

// The delivery feed and usage events on a real Kafka broker (own topic names on the shared broker).

describe('submit on Kafka: delivery feed and usage events', function () {
  this.timeout(180_000);
  let bus: KafkaBus;
  let up: Upstream;
  let h: Harness;
  const suffix = `${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const txTopic = `submit-test-tx-${suffix}`;
  const usageTopic = `submit-test-usage-${suffix}`;
  const slotsTopic = `submit-test-slots-${suffix}`;
  const tracesTopic = `submit-test-traces-${suffix}`;

  before(async () => {
    bus = new KafkaBus({ brokers: await kafkaBrokers(), clientId: 'meridian-submit-test', log: quietLog().log });
    await bus.createTopics([
      { name: txTopic, partitions: 1, compacted: false },
      { name: usageTopic, partitions: 1, compacted: false },
      { name: slotsTopic, partitions: 1, compacted: false },
      { name: tracesTopic, partitions: 1, compacted: false },
    ]);
    up = await startUpstream();
    h = await startHarness({ upstreams: [up.url], bus, usageTopic, config: { topics: { transactions: txTopic, slots: slotsTopic, traces: tracesTopic }, forward: { connectionsPerTarget: 1 } } });
  });
  after(async () => {
    await h?.close();
    await up?.close();
    await bus?.close();
  });

  it('a resend is forwarded until the signature appears on the transactions topic, then suppressed; usage events reach the topic', async () => {
    const tx = legacyTx();
    const sig = bs58.encode(tx.subarray(1, 65));
    assert.equal((await post(h, '/binary', tx)).text, sig);
    assert.equal((await post(h, '/binary', tx)).text, sig);
    await waitFor(() => up.sends.length === 2, 10_000, 'two forwards');

    await bus.produce(txTopic, [{ key: tx.subarray(1, 65), value: encodeTxRecord({ slot: 1n, observedAtMs: Date.now(), accountKeys: Buffer.alloc(32), message: Buffer.alloc(0) }) }]);
    await waitFor(() => h.service.pipeline.metrics.deliveredMarks.value === 1, 30_000, 'the delivery mark');
    const again = await post(h, '/binary', tx);
    assert.deepEqual([again.status, again.text], [200, sig]);
    // The fence: a later transaction, forwarded on the same (single) connection to the upstream, arrives after
    // anything the resend would have sent.
    const marker = legacyTx();
    assert.equal((await post(h, '/binary', marker)).status, 200);
    await waitFor(() => up.sends.some((s) => s.tx.equals(marker)), 10_000, 'the later transaction at the upstream');
    assert.deepEqual(up.sends.map((s) => bs58.encode(s.tx.subarray(1, 65))), [sig, sig, bs58.encode(marker.subarray(1, 65))], 'suppressed after delivery');

    await h.usage.flush();
    const events: UsageEvent[] = [];
    const c = await bus.consume({ topics: [usageTopic], from: 'beginning', onBatch: (ms) => {
      for (const m of ms) {
        const e = decodeUsageEvent(m.value!);
        if (!('error' in e)) events.push(e);
      }
    } });
    try {
      // Three submissions of tx (two forwarded, one suppressed) and the later one: each an `ok`.
      await waitFor(() => events.length >= 4, 30_000, 'usage events');
      assert.equal(events.length, 4);
      assert.deepEqual(events.map((e) => `${e.surface}/${e.method}/${e.outcome}/${e.rental}`), Array(4).fill(`submit/binary/ok/${h.rental.id}`));
    } finally {
      await c.close();
    }
  });
});
