import assert from 'node:assert/strict';
import bs58 from 'bs58';
import { decodeTraceEvent, encodeTraceEvent, type TraceEvent } from '../../../bus/topics/submit-traces';
import { KeySummaries } from '../../../gateways/submit/key-summary';
import { SubmitMetrics } from '../../../gateways/submit/metrics';
import { TraceMetrics } from '../../../gateways/submit/trace-metrics';
import { TraceStore } from '../../../gateways/submit/trace-store';
import { Registry } from '../../../infra/base/metrics';
import { RouteForwarder } from '../../../gateways/submit/forwarder';
import { SubmitPipeline } from '../../../gateways/submit/pipeline';
import type { Route, RouteOutcome } from '../../../gateways/submit/route';
import { tipRule } from '../../../gateways/submit/tip';
import { quietLog } from '../../support/log-capture';
import { legacyTx, MIN_TIP, registry, rental, TIP_ACCOUNTS } from './support';

// The trace model and its store without I/O: transitions, events, bounds, summaries, metrics; and how the
// pipeline's forward opens a trace (routes held by the test).

function setup(o: { holdMs?: number; maxTraces?: number } = {}) {
  let now = 1_700_000_000_000;
  const events: TraceEvent[] = [];
  const reg = new Registry();
  const submitMetrics = new SubmitMetrics(reg);
  const summaries = new KeySummaries(100, 10);
  let store: TraceStore;
  const metrics = new TraceMetrics(reg, () => store.size);
  store = new TraceStore({ holdMs: o.holdMs ?? 90_000, maxTraces: o.maxTraces ?? 100, sink: { emit: (e) => events.push(e) }, metrics, submitMetrics, summaries, now: () => now });
  return { store, events, metrics, submitMetrics, summaries, reg, tick: (ms: number) => (now += ms), at: () => now };
}

const sig = (n: number): Buffer => Buffer.alloc(64, n);
const info = (forwarded = true) => ({ transport: 'binary', rental: 'r1', apiKey: 'k1', blockhash: Buffer.alloc(32, 7), forwarded });

describe('submit traces (model and store)', () => {
  it('accepted → forward → seen → landed: events with ids, slot delta and latencies; resends join; metrics and summary', () => {
    const s = setup();
    s.store.noteSlot(100);
    const key = sig(1).toString('latin1');
    const report = s.store.accept(key, sig(1), info()).report;
    report('rpc-0', { ok: true, ms: 1.234 });
    report('rpc-1', { ok: false, error: 'http 503', ms: 2 });
    s.tick(50);
    s.store.noteSlot(101);
    s.store.accept(key, sig(1), { ...info(), transport: 'udp' }).report('rpc-0', 'skipped');
    s.tick(350);
    s.store.seen(key, 102, s.at());
    s.store.seen(key, 103, s.at()); // only the first counts
    s.tick(400);
    const trace = s.store.get(key)!;
    assert.equal(s.store.landed(trace, 102, null, 'processed', 'confirmed'), false);
    assert.equal(s.store.landed(trace, 102, null, 'processed', 'confirmed'), false, 'no new event for the same commitment');
    assert.equal(s.store.landed(trace, 102, null, 'confirmed', 'confirmed'), true);

    assert.deepEqual(s.events.map((e) => `${e.step}${e.route === undefined ? '' : `/${e.route}/${e.outcome}`}`), [
      'accepted', 'forward/rpc-0/ok', 'forward/rpc-1/error', 'accepted', 'forward/rpc-0/skipped', 'seen', 'landed', 'landed',
    ]);
    assert.deepEqual(s.events.map((e) => e.id.split(':')[1]), ['0', '1', '2', '3', '4', '5', '6', '7']);
    assert.equal(new Set(s.events.map((e) => e.signature)).size, 1);
    const [acc, , fail, resend, , seen, landed, confirmed] = s.events;
    assert.deepEqual([acc!.slot, acc!.resend, acc!.transport], [100, 0, 'binary']);
    assert.deepEqual([resend!.slot, resend!.resend, resend!.transport, resend!.sinceAcceptedMs], [101, 1, 'udp', 50]);
    assert.deepEqual([fail!.error, fail!.ms], ['http 503', 2]);
    assert.deepEqual([seen!.slot, seen!.slotDelta, seen!.sinceAcceptedMs], [102, 2, 400]);
    assert.deepEqual([landed!.status, landed!.commitment, landed!.slotDelta, landed!.err], ['ok', 'processed', 2, null]);
    assert.equal(confirmed!.commitment, 'confirmed');
    for (const e of s.events) assert.deepEqual(decodeTraceEvent(encodeTraceEvent(e).value), { ok: true, event: JSON.parse(JSON.stringify(e)) });

    const v = trace.view();
    assert.equal(v.state, 'landed');
    assert.equal(v.accepted.submissions, 2);
    assert.equal(v.landed!.sinceAcceptedMs, 800);
    assert.equal(v.landed!.sinceSeenMs, 400);
    assert.equal(s.metrics.landedOk.value, 1, 'counted once, not per commitment');
    assert.equal(s.submitMetrics.route('rpc-0').landed.value, 1);
    assert.equal(s.submitMetrics.route('rpc-1').landed.value, 0, 'a route whose attempt failed is not credited');
    assert.equal(s.metrics.acceptToSeenMs.count, 1);
    assert.deepEqual(s.summaries.summary('k1'), { settled: 1, landed: 1, failed: 0, expired: 0, landingRate: 1, slotDelta: { p50: 2, p90: 2, p99: 2, max: 2 } });
  });

  it('failed on chain keeps its error; expired names the blockhash; landing rate counts both', () => {
    const s = setup();
    s.store.noteSlot(10);
    s.store.accept('a', sig(2), info());
    s.store.accept('b', sig(3), info());
    s.store.landed(s.store.get('a')!, 14, { InstructionError: [0, { Custom: 1 }] }, 'confirmed', 'confirmed');
    s.store.expired(s.store.get('b')!);
    s.store.expired(s.store.get('a')!); // landed already: no expiry
    const a = s.events.find((e) => e.step === 'landed')!;
    assert.deepEqual([a.status, a.err, a.slotDelta], ['failed', { InstructionError: [0, { Custom: 1 }] }, 4]);
    const b = s.events.filter((e) => e.step === 'expired');
    assert.equal(b.length, 1);
    assert.equal(b[0]!.blockhash, bs58.encode(Buffer.alloc(32, 7)));
    assert.equal(s.store.get('b')!.view().state, 'expired');
    const sum = s.summaries.summary('k1');
    assert.deepEqual([sum.landed, sum.failed, sum.expired, sum.landingRate], [1, 1, 1, 0.5]);
    assert.equal(s.store.pending.size, 0);
  });

  it('bounded: the hold time and the cap drop the oldest, counted', () => {
    const s = setup({ holdMs: 1000, maxTraces: 3 });
    for (let i = 0; i < 5; i++) s.store.accept(`k${i}`, sig(i), info());
    assert.equal(s.store.size, 3);
    assert.equal(s.metrics.droppedCap.value, 2);
    assert.equal(s.store.get('k0'), undefined);
    assert.equal(s.store.pending.size, 3);
    s.tick(1001);
    s.store.sweep();
    assert.equal(s.store.size, 0);
    assert.equal(s.metrics.droppedUnsettled.value, 3);
    assert.equal(s.store.pending.size, 0);
  });

  it('a slot unknown at acceptance leaves the slot delta out rather than guessing', () => {
    const s = setup();
    s.store.accept('x', sig(9), info());
    s.store.landed(s.store.get('x')!, 50, null, 'confirmed', 'confirmed');
    const l = s.events.find((e) => e.step === 'landed')!;
    assert.equal(l.slotDelta, undefined);
    assert.equal(s.events[0]!.slot, null);
    assert.equal(s.summaries.summary('k1').slotDelta, null);
  });

  it('the codec refuses what is not a trace event', () => {
    for (const bad of ['x', '[]', '{}', JSON.stringify({ id: 'a', time: 'no', signature: 's', rental: 'r', step: 'seen', sinceAcceptedMs: 0 }), JSON.stringify({ id: 'a', time: new Date().toISOString(), signature: 's', rental: 'r', step: 'other', sinceAcceptedMs: 0 })]) {
      assert.equal(decodeTraceEvent(Buffer.from(bad)).ok, false, bad);
    }
  });
});

describe('submit traces: the forward opens the trace', () => {
  /** A route that is at its cap (`full`) or holds each attempt until the test answers it. */
  class HeldRoute implements Route {
    full = false;
    readonly held: Array<(o: RouteOutcome) => void> = [];
    constructor(readonly name: string) {}
    send(): Promise<RouteOutcome> | null {
      if (this.full) return null;
      return new Promise((r) => this.held.push(r));
    }
    async close(): Promise<void> {}
  }

  function traced(routes: HeldRoute[]) {
    const s = setup();
    const r = rental();
    const metrics = s.submitMetrics;
    const pipeline = new SubmitPipeline({
      rentals: registry(r),
      forwarder: new RouteForwarder({ routes, log: quietLog().log, metrics }),
      tips: tipRule(TIP_ACCOUNTS.map((k) => k.toBase58()), MIN_TIP),
      metrics,
      traces: s.store,
    });
    const steps = (): string[] => s.events.map((e) => `${e.step}${e.route === undefined ? '' : `/${e.route}/${e.outcome}`}`);
    return { ...s, steps, send: (tx: Buffer) => pipeline.submitNow({ apiKey: r.apiKeys[0]!, bytes: tx, transport: 'binary' }) };
  }

  it('routes skipped before and after the first that takes the transaction are reported after `accepted`, outcomes later', async () => {
    const routes = [new HeldRoute('rpc-0'), new HeldRoute('rpc-1'), new HeldRoute('rpc-2')];
    routes[0]!.full = true;
    routes[2]!.full = true;
    const t = traced(routes);
    const tx = legacyTx();
    const o = t.send(tx);
    assert.ok(o.ok);
    assert.equal(o.signatureText, bs58.encode(tx.subarray(1, 65)), 'the answer carries the trace’s signature text');
    assert.deepEqual(t.steps(), ['accepted', 'forward/rpc-0/skipped', 'forward/rpc-2/skipped']);
    routes[1]!.held[0]!({ ok: true, ms: 3 });
    await new Promise<void>((r) => setImmediate(r));
    assert.deepEqual(t.steps(), ['accepted', 'forward/rpc-0/skipped', 'forward/rpc-2/skipped', 'forward/rpc-1/ok']);
    assert.deepEqual(t.events.map((e) => e.id.split(':')[1]), ['0', '1', '2', '3']);
    assert.equal(t.store.get(tx.subarray(1, 65).toString('latin1'))?.forwards.length, 3);
  });

  it('no route taking the transaction: forward_failed, and no trace and no event', () => {
    const routes = [new HeldRoute('rpc-0'), new HeldRoute('rpc-1')];
    for (const r of routes) r.full = true;
    const t = traced(routes);
    const o = t.send(legacyTx());
    assert.equal(o.ok ? 'accepted' : o.reason, 'forward_failed');
    assert.equal(t.store.size, 0);
    assert.deepEqual(t.steps(), []);
  });
});
