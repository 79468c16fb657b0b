import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import bs58 from 'bs58';
import { submitLimits } from '../../../gateways/submit/limits';
import { SubmitPipeline, type Outcome } from '../../../gateways/submit/pipeline';
import { SubmitMetrics } from '../../../gateways/submit/metrics';
import { tipRule } from '../../../gateways/submit/tip';
import { Registry } from '../../../infra/base/metrics';
import { waitFor } from '../../support/wait';
import { v1Tx } from '../../support/v1-vectors';
import { post, rpc, sendTx, startHarness, type Harness } from './harness';
import { legacyTx, MIN_TIP, RecordingForwarder, registry, rental, TIP_ACCOUNTS } from './support';
import { v1TipTx } from './v1-support';
import { startUpstream, type Upstream } from './upstream';

// Transaction v1 (SIMD-0385) on every submission route: parsed by the ingest decoder, each signature verified over
// the v1 message (which comes before the signatures), the tip found among its top-level instructions, preflight
// run on it, cached by its first signature. Sizes: the contract's 1,232 by default; gateways.submit.v1MaxBytes
// admits larger v1 transactions on the HTTP routes only.

const sigOf = (tx: Buffer): Buffer => tx.subarray(tx.length - 64);

function setup(v1MaxBytes?: number) {
  const r = rental({ tps: 1000 });
  const forwarder = new RecordingForwarder();
  const pipeline = new SubmitPipeline({
    rentals: registry(r),
    forwarder,
    tips: tipRule(TIP_ACCOUNTS.map((k) => k.toBase58()), MIN_TIP),
    metrics: new SubmitMetrics(new Registry()),
    ...(v1MaxBytes === undefined ? {} : { limits: submitLimits(v1MaxBytes) }),
  });
  const send = (bytes: Buffer, transport: 'binary' | 'jsonrpc' | 'plaintext' | 'udp' | 'quic' = 'binary'): Outcome => pipeline.submitNow({ apiKey: r.apiKeys[0]!, bytes, transport });
  return { forwarder, pipeline, send };
}

describe('submit: transaction v1', () => {
  it('limits default to the contract\'s exactly', () => {
    assert.deepEqual(submitLimits(), { maxTxBytes: 1232, v1MaxBytes: 1232, body: { jsonrpc: 3072, binary: 1232, plaintext: 2048 } });
    const big = submitLimits(4096);
    assert.equal(big.body.binary, 4096);
    assert.equal(big.body.plaintext, 2048 + 5464 - 1644); // base64 of 4096 vs 1232 bytes
    assert.ok(big.body.jsonrpc >= 3072 + bs58.encode(Buffer.alloc(4096, 0xff)).length - bs58.encode(Buffer.alloc(1232, 0xff)).length);
    assert.throws(() => submitLimits(4097), RangeError);
    assert.throws(() => submitLimits(1000), RangeError);
  });

  it('the pipeline accepts a signed v1 with a tip on every transport and answers its first signature', () => {
    const s = setup();
    for (const t of ['binary', 'jsonrpc', 'plaintext', 'udp', 'quic'] as const) {
      const tx = v1TipTx();
      const o = s.send(tx, t);
      assert.ok(o.ok, JSON.stringify(o));
      assert.ok(o.signature.equals(sigOf(tx)));
    }
    assert.equal(s.forwarder.sent.length, 5);
  });

  it('refuses a wrong signature, a missing tip, and a v1 over 1,232 bytes by default', () => {
    const s = setup();
    assert.deepEqual(s.send(v1TipTx({ breakSig: true })), { ok: false, reason: 'invalid_signature', detail: 'signature 0' });
    const noTip = s.send(v1TipTx({ tip: null }));
    assert.equal(noTip.ok ? '' : noTip.reason, 'missing_tip');
    const small = s.send(v1TipTx({ tip: MIN_TIP - 1 }));
    assert.equal(small.ok ? '' : small.reason, 'tip_too_small');
    const big = v1TipTx({ pad: 1500 });
    assert.deepEqual(s.send(big), { ok: false, reason: 'too_large', detail: `${big.length} bytes (max 1232)` });
    // The crate-made vectors: an invalid config mask cannot be deserialized.
    const bad = s.send(v1Tx('bad_mask_fee_low_bit'));
    assert.equal(bad.ok ? '' : bad.reason, 'cannot_deserialize');
    assert.equal(s.forwarder.sent.length, 0);
  });

  it('v1MaxBytes admits larger v1 on stream/HTTP transports, never legacy, never on UDP', () => {
    const s = setup(4096);
    const big = v1TipTx({ pad: 3000 });
    assert.ok(big.length > 3000 && big.length <= 4096);
    assert.ok(s.send(big, 'binary').ok);
    const udp = s.send(v1TipTx({ pad: 3000 }), 'udp');
    assert.equal(udp.ok ? '' : udp.reason, 'too_large');
    const legacy = Buffer.concat([legacyTx(), Buffer.alloc(1100)]);
    assert.ok(legacy.length > 1232);
    const l = s.send(legacy);
    assert.equal(l.ok ? '' : l.reason, 'too_large');
  });

  describe('over HTTP and UDP (service, recording upstream)', function () {
    this.timeout(60_000);
    let up: Upstream;
    let h: Harness;
    before(async () => {
      up = await startUpstream();
      h = await startHarness({ upstreams: [up.url], config: { v1MaxBytes: 4096 } });
    });
    after(async () => {
      await h.close();
      await up.close();
    });

    it('JSON-RPC (base58 and base64, with preflight), /binary, /plaintext and UDP accept v1; the upstream gets the bytes', async () => {
      const before = up.sends.length;
      const a = v1TipTx();
      assert.deepEqual((await rpc(h, sendTx(bs58.encode(a), undefined, 3))).json, { jsonrpc: '2.0', result: bs58.encode(sigOf(a)), id: 3 });
      up.simulate = 'pass';
      const b = v1TipTx({ pad: 2500 });
      const sims = up.simulations.length;
      assert.deepEqual((await rpc(h, sendTx(b.toString('base64'), { encoding: 'base64', skipPreflight: false }, 4))).json, { jsonrpc: '2.0', result: bs58.encode(sigOf(b)), id: 4 });
      assert.equal(up.simulations.length, sims + 1, 'preflight ran on the v1 transaction');
      const c = v1TipTx({ pad: 3500 });
      assert.deepEqual(await post(h, '/binary', c).then((r) => [r.status, r.text]), [200, bs58.encode(sigOf(c))]);
      const d = v1TipTx({ pad: 3500 });
      assert.deepEqual(await post(h, '/plaintext', d.toString('base64'), h.key, 'text/plain').then((r) => [r.status, r.text]), [200, bs58.encode(sigOf(d))]);
      const e = v1TipTx();
      const sock = dgram.createSocket('udp4');
      await new Promise<void>((res, rej) => sock.send(Buffer.concat([Buffer.from(h.key), e]), h.service.udp!.port, '127.0.0.1', (err) => (err ? rej(err) : res())));
      sock.close();
      await waitFor(() => up.sends.length === before + 5, 10_000, 'five forwards');
      const sent = up.sends.slice(before).map((x) => x.tx.toString('hex')).sort();
      assert.deepEqual(sent, [a, b, c, d, e].map((x) => x.toString('hex')).sort());
    });

    it('refuses a wrong v1 signature and a missing tip with the contract\'s errors on JSON-RPC and /binary', async () => {
      const bad = v1TipTx({ breakSig: true });
      const j = (await rpc(h, sendTx(bs58.encode(bad)))).json;
      assert.equal(j.error?.code, -32003);
      assert.match(j.error!.message, /^Transaction signature verification failure/);
      const noTip = v1TipTx({ tip: null });
      const r = await post(h, '/binary', noTip);
      assert.equal(r.status, 400);
      assert.match(r.text, /^missing required tip/);
    });
  });
});
