import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SlidingWindow, Slots, clientIp, pathOf } from '../../../gateways/core';
import { trustedProxies } from '../../../gateways/core/client-ip';
import { batchReplyLength, isJsonContentType, looksLikeJsonObject, parseRequest } from '../../../gateways/core/jsonrpc';

describe('gateway core: sliding window', () => {
  it('allows at most the limit within any window and frees units as they age out', () => {
    const w = new SlidingWindow(10_000, 100);
    const t0 = 1_000_000;
    assert.equal(w.tryTake(60, 100, t0), true);
    assert.equal(w.tryTake(40, 100, t0 + 5_000), true);
    assert.equal(w.tryTake(1, 100, t0 + 9_999), false);
    assert.equal(w.used(t0 + 9_999), 100);
    // The first 60 units leave the window 10 s after they were taken (to the 100 ms slice).
    assert.equal(w.tryTake(60, 100, t0 + 10_000), true);
    assert.equal(w.used(t0 + 10_000), 100);
    assert.equal(w.used(t0 + 30_000), 0);
  });

  it('matches a brute-force model of the window (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 1, max: 30 })), { minLength: 1, maxLength: 200 }), (steps) => {
        const w = new SlidingWindow(1_000, 10); // 100 ms slices
        const taken: Array<[number, number]> = [];
        let now = 0;
        for (const [dt, units] of steps) {
          now += dt;
          const slice = Math.floor(now / 100);
          const used = taken.filter(([t]) => Math.floor(t / 100) > slice - 10).reduce((a, [, u]) => a + u, 0);
          const ok = w.tryTake(units, 50, now);
          assert.equal(ok, used + units <= 50);
          if (ok) taken.push([now, units]);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('gateway core: concurrency slots', () => {
  it('grants up to the limit at once, queues FIFO, times out, refuses when the queue is full', async () => {
    const s = new Slots({ maxWaitMs: 100, maxQueuePerKey: 1, maxQueueTotal: 10 });
    const a = s.acquire('r', 1, 2);
    const b = s.acquire('r', 1, 2);
    assert.ok(!(a instanceof Promise) && a.ok);
    assert.ok(!(b instanceof Promise) && b.ok);
    const c = s.acquire('r', 1, 2);
    assert.ok(c instanceof Promise);
    const d = s.acquire('r', 1, 2);
    assert.deepEqual(d, { ok: false, why: 'queue_full' });
    a.release();
    const got = await c;
    assert.equal(got.ok, true);
    const e = await s.acquire('r', 1, 2);
    assert.deepEqual(e, { ok: false, why: 'timeout' });
    b.release();
    if (got.ok) got.release();
    assert.equal(s.held('r'), 0);
  });
});

describe('gateway core: request parsing and helpers', () => {
  it('classifies bodies', () => {
    assert.deepEqual(parseRequest(Buffer.from('{"method":"a","id":1}'), 10), { ok: true, batch: false, calls: [{ method: 'a', id: 1 }] });
    const b = parseRequest(Buffer.from('[{"method":"a","id":1},5,{"id":2}]'), 10);
    assert.ok(b.ok);
    assert.equal(b.calls.length, 3);
    assert.deepEqual(b.calls.map((c) => c.method), ['a', '', '']);
    for (const bad of ['', '{', '1', '"x"', 'null', '[]']) assert.equal(parseRequest(Buffer.from(bad), 10).ok, false, bad);
    assert.equal(parseRequest(Buffer.from('[1,2,3]'), 2).ok, false);
  });

  it('content types, reply shapes, paths, forwarded-for', () => {
    assert.ok(isJsonContentType('Application/JSON; charset=utf-8'));
    assert.ok(!isJsonContentType('text/json'));
    assert.ok(!isJsonContentType(undefined));
    assert.ok(looksLikeJsonObject(Buffer.from(' {"a":1}\n')));
    assert.ok(!looksLikeJsonObject(Buffer.from('{"a":')));
    assert.equal(batchReplyLength(Buffer.from('[1,2]')), 2);
    assert.equal(batchReplyLength(Buffer.from('{}')), null);
    assert.equal(pathOf('/abc?x=1'), '/abc');
    assert.equal(pathOf(''), '/');
    const t = trustedProxies(['10.0.0.1', '10.0.0.2']);
    assert.equal(clientIp('::ffff:10.0.0.1', '1.2.3.4, 10.0.0.2', t), '1.2.3.4');
    assert.equal(clientIp('10.0.0.9', '1.2.3.4', t), '10.0.0.9');
    assert.equal(clientIp('10.0.0.1', undefined, t), '10.0.0.1');
  });
});
