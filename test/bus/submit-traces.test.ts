import assert from 'node:assert/strict';
import { decodeTraceEvent, encodeTraceEvent, type TraceEvent } from '../../bus/topics/submit-traces';
import { Trace } from '../../gateways/submit/trace';

// submit.traces' encoding is written field by field (not JSON.stringify of the object, for its cost per event):
// the bytes must stay those of JSON.stringify for every event the trace model emits, and any string must come out
// escaped as JSON.stringify escapes it.

const SIG = '5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW';

/** One trace through every step, resends and routes of each outcome included: every event shape trace.ts emits. */
function everyEvent(rental: string, route: string, error: string): TraceEvent[] {
  const t0 = 1_700_000_000_000;
  const t = new Trace(SIG, rental, 'k1', 'binary', t0, 100, Buffer.alloc(32, 7).toString('latin1'));
  const withoutSlot = new Trace(SIG, rental, 'k1', 'udp', t0, null, Buffer.alloc(32, 9).toString('latin1'));
  return [
    t.firstEvent(true),
    t.forwarded(t0 + 1, route, 'ok', undefined, 1.23456),
    t.forwarded(t0 + 2, route, 'error', error, 5000),
    t.forwarded(t0 + 2, 'tpu', 'ok', undefined, 0.5, ['Leader1111111111111111111111111111111111111', 'Leader2222222222222222222222222222222222222']),
    t.forwarded(t0 + 3, route, 'skipped'),
    t.resent(t0 + 4, 'jsonrpc', 'k2', false, null),
    t.resent(t0 + 5, 'quic', 'k1', true, 104),
    t.seenInShreds(t0 + 6, 101)!,
    t.landed(t0 + 7, 102, null, 'processed')!,
    t.landed(t0 + 8, 102, { InstructionError: [0, { Custom: 1 }] }, 'confirmed')!,
    withoutSlot.firstEvent(false),
    withoutSlot.seenInShreds(t0 + 1, 5)!,
    withoutSlot.landed(t0 + 2, 5, null, 'finalized')!,
    new Trace(SIG, rental, 'k1', 'binary', t0, 1, Buffer.alloc(32, 3).toString('latin1')).expired(t0 + 90_000)!,
  ];
}

describe('submit.traces encoding', () => {
  it('writes, for every event the trace model emits, the bytes of JSON.stringify; the key is the signature', () => {
    for (const e of everyEvent('rental-1', 'rpc-0', 'HTTP 503')) {
      const r = encodeTraceEvent(e);
      assert.equal(r.value.toString('utf8'), JSON.stringify(e), e.step);
      assert.equal(r.key.toString('utf8'), SIG);
      const d = decodeTraceEvent(r.value);
      assert.ok(d.ok);
      assert.deepEqual(d.event, JSON.parse(JSON.stringify(e)));
    }
  });

  it('escapes strings as JSON.stringify does: quotes, backslashes, control characters, lone surrogates, non-ASCII', () => {
    for (const odd of ['a"b', 'a\\b', 'line\nnext\t\u0001', 'lone \ud800 surrogate', 'pair 😀 é ü', '', '</script>']) {
      for (const e of everyEvent(odd, `route ${odd}`, `error ${odd}`)) assert.equal(encodeTraceEvent(e).value.toString('utf8'), JSON.stringify(e), `${e.step} ${JSON.stringify(odd)}`);
    }
  });

  it('numbers and values as JSON.stringify writes them (non-finite → null, err of any JSON shape, err undefined omitted)', () => {
    const base: TraceEvent = { id: `${SIG}:3`, time: '2026-12-02T00:00:00.000Z', signature: SIG, rental: 'r', step: 'landed', sinceAcceptedMs: 0 };
    const cases: TraceEvent[] = [
      { ...base, sinceAcceptedMs: Number.NaN, slot: 1e21, status: 'failed', err: 'AccountInUse', commitment: 'processed', slotDelta: -0 },
      { ...base, slot: 7, status: 'failed', err: [1, 'x', null, { a: true }], commitment: 'finalized', slotDelta: Number.POSITIVE_INFINITY },
      { ...base, slot: 7, status: 'ok', err: undefined, commitment: 'confirmed' },
      { ...base, step: 'forward', route: 'rpc-0', outcome: 'ok', ms: 0.1 + 0.2 },
    ];
    for (const e of cases) assert.equal(encodeTraceEvent(e).value.toString('utf8'), JSON.stringify(e));
  });
});
