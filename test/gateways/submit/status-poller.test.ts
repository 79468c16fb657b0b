import assert from 'node:assert/strict';
import type { Commitment } from '../../../bus/topics/submit-traces';
import { KeySummaries } from '../../../gateways/submit/key-summary';
import { SubmitMetrics } from '../../../gateways/submit/metrics';
import { MAX_BACKOFF_MS, StatusPoller } from '../../../gateways/submit/status-poller';
import type { BlockhashAnswer, SignatureStatus, StatusesAnswer, StatusSource } from '../../../gateways/submit/status-source';
import { TraceMetrics } from '../../../gateways/submit/trace-metrics';
import { TraceStore } from '../../../gateways/submit/trace-store';
import { Registry } from '../../../infra/base/metrics';
import { quietLog } from '../../support/log-capture';

// The poller's bounds and verdicts against a scripted chain view (the end-to-end test runs it against the local
// chain node): ≤ 256 signatures a call, at most the per-tick call budget, round robin, expiry only when the
// blockhash was found invalid before a status query came back empty.

class ScriptedChain implements StatusSource {
  readonly calls: string[][] = [];
  readonly checks: string[] = [];
  landed = new Map<string, SignatureStatus>();
  invalid = new Set<string>();
  /** While true every call fails as a refused connection does. */
  down = false;
  async statuses(signatures: string[]): Promise<StatusesAnswer> {
    this.calls.push(signatures);
    if (this.down) return { ok: false, error: 'connect ECONNREFUSED' };
    return { ok: true, slot: 500, statuses: signatures.map((s) => this.landed.get(s) ?? null) };
  }
  async blockhashValid(blockhash: string, _c: Commitment): Promise<BlockhashAnswer> {
    this.checks.push(blockhash);
    if (this.down) return { ok: false, error: 'connect ECONNREFUSED' };
    return { ok: true, valid: !this.invalid.has(blockhash) };
  }
  async close(): Promise<void> {}
}

function setup(n: number, calls: number, expiryCheckAfterMs = 0) {
  const reg = new Registry();
  let store: TraceStore;
  const metrics = new TraceMetrics(reg, () => store.size);
  store = new TraceStore({ holdMs: 150_000, maxTraces: 10_000, metrics, submitMetrics: new SubmitMetrics(reg), summaries: new KeySummaries() });
  store.noteSlot(490);
  const chain = new ScriptedChain();
  const sigs: string[] = [];
  for (let i = 0; i < n; i++) {
    const sig = Buffer.alloc(64);
    sig.writeUInt32LE(i + 1);
    const bh = Buffer.alloc(32, i % 2 === 0 ? 1 : 2);
    sigs.push(store.accept(sig.toString('latin1'), sig, { transport: 'udp', rental: 'r', apiKey: 'k', blockhash: bh, forwarded: true }).signature);
  }
  const poller = new StatusPoller(store, chain, metrics, { intervalMs: 1000, maxStatusCallsPerTick: calls, maxBlockhashChecksPerTick: 1, expiryCheckAfterMs, blockhashRecheckMs: 0, commitment: 'confirmed', log: quietLog().log });
  return { store, chain, poller, metrics, sigs };
}

describe('submit trace status poller', () => {
  it('≤ 256 signatures per call, at most the call budget per tick, round robin over pending traces', async () => {
    const s = setup(700, 2);
    await s.poller.tick();
    assert.deepEqual(s.chain.calls.map((c) => c.length), [256, 256]);
    assert.equal(s.metrics.pollBacklog.value, 700 - 512);
    await s.poller.tick();
    assert.deepEqual(s.chain.calls.map((c) => c.length), [256, 256, 256, 256]);
    const second = new Set(s.chain.calls.slice(2).flat());
    for (const sig of s.sigs.slice(512)) assert.ok(second.has(sig), 'the traces left out first are polled next');
    assert.equal(s.chain.checks.length, 2, 'one blockhash check per tick (the budget)');
  });

  it('a status lands the trace (polling stops at the target commitment); an invalid blockhash with no status expires it', async () => {
    const s = setup(4, 1);
    s.chain.landed.set(s.sigs[0]!, { slot: 495, err: null, commitment: 'processed' });
    s.chain.landed.set(s.sigs[1]!, { slot: 496, err: { InstructionError: [0, { Custom: 1 }] }, commitment: 'confirmed' });
    // sigs[2] and [3] use blockhashes 1 and 2 (even/odd): blockhash 1 has aged out.
    const bh1 = [...s.store.pending].find((t) => t.signature === s.sigs[2])!.blockhash;
    s.chain.invalid.add(bh1);
    await s.poller.tick();
    /** The pending trace of a signature (undefined once it needs no more polling). */
    const byState = (sig: string) => [...s.store.pending].find((t) => t.signature === sig);
    assert.equal(byState(s.sigs[0]!)?.state, 'landed', 'processed < confirmed: still polled');
    assert.equal(byState(s.sigs[1]!), undefined, 'confirmed: done');
    assert.equal(byState(s.sigs[2]!), undefined, 'expired: done');
    assert.equal(byState(s.sigs[3]!)?.state, 'pending', 'a valid blockhash and no status: still pending');
    assert.deepEqual([s.metrics.landedOk.value, s.metrics.landedFailed.value, s.metrics.expired.value], [1, 1, 1]);
    s.chain.landed.set(s.sigs[0]!, { slot: 495, err: null, commitment: 'finalized' });
    await s.poller.tick();
    assert.equal(byState(s.sigs[0]!), undefined);
    assert.equal(s.metrics.landedOk.value, 1, 'a landing counts once');
  });

  it('a node that refuses costs one call per backoff (doubling from the interval, capped), and polling resumes in full once a call succeeds', async () => {
    // Blockhash checks only after an hour: this test counts status calls alone.
    const s = setup(700, 3, 3_600_000);
    s.chain.down = true;
    const t0 = 1_000_000;
    await s.poller.tick(t0);
    assert.equal(s.chain.calls.length, 1, 'the first refusal ends the tick (the budget was 3 calls)');
    assert.equal(s.metrics.statusErrors.value, 1);
    // Backoff 1 s (the interval), then 2 s, 4 s, 8 s, then 10 s (the cap).
    let at = t0;
    for (const wait of [1000, 2000, 4000, 8000, MAX_BACKOFF_MS, MAX_BACKOFF_MS]) {
      const before: number = s.chain.calls.length;
      await s.poller.tick(at + wait - 1);
      assert.equal(s.chain.calls.length, before, `no call ${wait - 1} ms after a failure that set a ${wait} ms backoff`);
      at += wait;
      await s.poller.tick(at);
      assert.equal(s.chain.calls.length, before + 1, `one call once the ${wait} ms backoff is over`);
    }
    s.chain.down = false;
    const failedCalls = s.chain.calls.length;
    await s.poller.tick(at + MAX_BACKOFF_MS);
    assert.equal(s.chain.calls.length, failedCalls + 3, 'the full budget again');
    await s.poller.tick(at + MAX_BACKOFF_MS + 1);
    assert.equal(s.chain.calls.length, failedCalls + 6, 'and no backoff left behind');
  });
});
