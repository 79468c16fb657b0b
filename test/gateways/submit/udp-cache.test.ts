import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import dgram from 'node:dgram';
import bs58 from 'bs58';
import type { BusMessage } from '../../../bus/bus';
import { TOPIC } from '../../../bus/topics';
import { encodeTxRecord } from '../../../bus/topics/stream-transactions';
import { decodeUsageEvent, type UsageEvent } from '../../../bus/topics/usage-events';
import { uuidToRaw } from '../../../gateways/submit/api-key';
import { waitFor } from '../../support/wait';
import { post, startHarness, type Harness } from './harness';
import { legacyTx } from './support';
import { startUpstream, type Upstream } from './upstream';

describe('submit UDP transport, delivery-aware cache, usage events', function () {
  let up: Upstream;
  let h: Harness;
  let client: dgram.Socket;
  const answers: Buffer[] = [];
  before(async () => {
    up = await startUpstream();
    h = await startHarness({ upstreams: [up.url] });
    client = dgram.createSocket('udp4');
    client.on('message', (m) => answers.push(m));
    await new Promise<void>((r) => client.bind(0, '127.0.0.1', r));
  });
  after(async () => {
    client.close();
    await h.close();
    await up.close();
  });

  const send = (b: Buffer): Promise<void> => new Promise((resolve, reject) => client.send(b, h.service.udp!.port, '127.0.0.1', (e) => (e ? reject(e) : resolve())));
  const m = (result: Parameters<Harness['service']['pipeline']['metrics']['value']>[1]): number => h.service.pipeline.metrics.value('udp', result);

  it('raw 16-byte key and 36-character text key are accepted and forwarded; a bad key, an oversized and a short datagram are counted; nothing is answered', async () => {
    const sends = up.sends.length;
    const raw = legacyTx();
    const text = legacyTx();
    await send(Buffer.concat([uuidToRaw(h.key), raw]));
    await send(Buffer.concat([Buffer.from(h.key.toUpperCase(), 'ascii'), text]));
    await send(Buffer.concat([uuidToRaw(crypto.randomUUID()), legacyTx()]));
    await send(Buffer.concat([uuidToRaw(h.key), Buffer.alloc(1233, 3)]));
    await send(Buffer.from([1, 2, 3]));
    await waitFor(() => m('accepted') === 2 && m('unauthorized') === 1 && m('too_large') === 1 && h.service.pipeline.metrics.udpMalformed.value === 1, 5000, 'udp metrics');
    await waitFor(() => up.sends.length === sends + 2, 5000, 'two forwards');
    const forwarded = up.sends.slice(sends).map((s) => s.tx.toString('hex')).sort();
    assert.equal(forwarded.length, 2);
    assert.deepEqual(forwarded, [raw.toString('hex'), text.toString('hex')].sort());
    const scrape = h.registry.render();
    assert.match(scrape, /meridian_submit_submissions_total\{transport="udp",result="accepted"\} 2/);
    assert.match(scrape, /meridian_submit_submissions_total\{transport="udp",result="unauthorized"\} 1/);
    assert.match(scrape, /meridian_submit_submissions_total\{transport="udp",result="too_large"\} 1/);
    // The fence: every datagram above has been handled (its metric counted, in the same synchronous call that
    // would have answered it), so any answer is already queued at the client's socket. A marker the client
    // sends itself now queues behind it; once the marker is read, nothing else may have been.
    const marker = crypto.randomBytes(16);
    await new Promise<void>((resolve, reject) => client.send(marker, client.address().port, '127.0.0.1', (e) => (e ? reject(e) : resolve())));
    await waitFor(() => answers.some((a) => a.equals(marker)), 5000, 'the marker at the client');
    assert.deepEqual(answers, [marker], 'UDP never answers');
    answers.length = 0;
  });

  it('a resend before delivery is forwarded again; once the signature is on stream.transactions it is not', async () => {
    const tx = legacyTx();
    const sends = up.sends.length;
    const sig = bs58.encode(tx.subarray(1, 65));
    assert.deepEqual((await post(h, '/binary', tx)).text, sig);
    assert.deepEqual((await post(h, '/binary', tx)).text, sig);
    await waitFor(() => up.sends.length === sends + 2, 5000, 'both forwards');
    const forwarded = h.service.pipeline.metrics.forwarded.value;

    const marks = h.service.pipeline.metrics.deliveredMarks.value;
    const record = encodeTxRecord({ slot: 7n, observedAtMs: Date.now(), accountKeys: Buffer.alloc(32), message: Buffer.from([0x0a, 0x00]) });
    await h.bus.produce(TOPIC.streamTransactions, [{ key: tx.subarray(1, 65), value: record }]);
    await waitFor(() => h.service.pipeline.metrics.deliveredMarks.value === marks + 1, 5000, 'the delivery mark');

    const again = await post(h, '/binary', tx);
    assert.deepEqual([again.status, again.text], [200, sig]);
    const viaUdp = h.service.pipeline.metrics.value('udp', 'duplicate');
    await send(Buffer.concat([uuidToRaw(h.key), tx]));
    await waitFor(() => h.service.pipeline.metrics.value('udp', 'duplicate') === viaUdp + 1, 5000, 'the UDP duplicate');
    // A forward is dispatched (and counted) in the same synchronous call that counts the outcome: nothing was.
    assert.equal(h.service.pipeline.metrics.forwarded.value, forwarded, 'suppressed after delivery: no forward dispatched');
    assert.equal(up.sends.length, sends + 2, 'suppressed after delivery');
    assert.equal(h.service.pipeline.metrics.value('binary', 'duplicate'), 1);
  });

  it('emits one usage event per submission on usage.events (surface submit, method = transport)', async () => {
    await h.usage.flush();
    const events: UsageEvent[] = [];
    const c = await h.bus.consume({
      topics: [TOPIC.usageEvents],
      from: 'beginning',
      onBatch: (ms: BusMessage[]) => {
        for (const msg of ms) {
          const e = decodeUsageEvent(msg.value!);
          if (!('error' in e)) events.push(e);
        }
      },
    });
    try {
      // Before: 2 udp ok + 1 udp too_large (bad key has no rental), 2 binary ok, 1 binary + 1 udp duplicate (ok).
      await waitFor(() => events.length >= 7, 5000, 'usage events');
      assert.equal(events.length, 7);
      assert.ok(events.every((e) => e.surface === 'submit' && e.rental === h.rental.id && e.units === 1));
      const summary = events.map((e) => `${e.method}:${e.outcome}`).sort();
      assert.deepEqual(summary, ['binary:ok', 'binary:ok', 'binary:ok', 'udp:ok', 'udp:ok', 'udp:ok', 'udp:rejected']);
    } finally {
      await c.close();
    }
  });
});
