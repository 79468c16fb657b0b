import assert from 'node:assert/strict';
import net from 'node:net';
import { waitFor } from '../../support/wait';
import { post, startHarness } from './harness';
import { legacyTx } from './support';
import { startUpstream } from './upstream';

describe('submit forwarding', () => {
  it('sends every accepted transaction to each target in parallel', async () => {
    const a = await startUpstream();
    const b = await startUpstream();
    const h = await startHarness({ upstreams: [a.url, b.url] });
    try {
      const txs = [legacyTx(), legacyTx(), legacyTx()];
      for (const tx of txs) assert.equal((await post(h, '/binary', tx)).status, 200);
      await waitFor(() => a.sends.length === 3 && b.sends.length === 3, 5000, 'both targets');
      assert.deepEqual(a.sends.map((s) => s.tx.toString('hex')), txs.map((t) => t.toString('hex')));
      assert.deepEqual(b.sends.map((s) => s.tx.toString('hex')), txs.map((t) => t.toString('hex')));
      assert.equal(h.service.pipeline.metrics.forwarded.value, 6);
      assert.deepEqual(['rpc-0', 'rpc-1'].map((r) => h.service.pipeline.metrics.route(r).attempts.value), [3, 3], 'per-route attempts');
      assert.match(h.registry.render(), /meridian_submit_route_attempts_total\{route="rpc-1"\} 3/);
    } finally {
      await h.close();
      await a.close();
      await b.close();
    }
  });

  it('a failing target is never reported to the client: the answer is the signature, the failure a metric', async () => {
    // A port with nothing listening: connections are refused.
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const h = await startHarness({ upstreams: [`http://127.0.0.1:${port}/`] });
    try {
      const r = await post(h, '/binary', legacyTx());
      assert.equal(r.status, 200);
      assert.equal(r.text.length > 80, true);
      await waitFor(() => h.service.pipeline.metrics.forwardErrors.value === 1, 5000, 'the forward error metric');
      assert.equal(h.service.pipeline.metrics.route('rpc-0').errors.value, 1, 'the route error metric');
      assert.ok(h.logLines.some((l) => l.includes('forward to upstream failed')));
      assert.equal(h.logLines.some((l) => l.includes(`127.0.0.1:${port}`) || l.includes('http://')), false, 'the target address is not logged');
    } finally {
      await h.close();
    }
  });
});
