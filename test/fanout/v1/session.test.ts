import assert from 'node:assert/strict';
import bs58 from 'bs58';
import { status } from '@grpc/grpc-js';
import type { StreamError } from '../../../fanout/errors';
import { FilterIndex } from '../../../fanout/filter/filter-index';
import type { FilterSpec } from '../../../fanout/filter/compile';
import type { SubscribeUpdate } from '../../../fanout/v1/request';
import type { EndReason } from '../../../fanout/errors';
import { Session } from '../../../fanout/v1/session';
import { FakePort } from '../fake-port';
import { SubscriberQueue } from '../../../fanout/subscriber-queue';
import { UpdateRate } from '../../../fanout/update-rate';
import { RecentKeys } from '../../../fanout/dedupe';

// Session rules of Endpoint A, the bounded queue, the update-rate window and dedupe, without a network.


/** The error the port was ended with (fails the test if it was not). */
function endError(p: FakePort): StreamError {
  const e: StreamError | undefined | 'ok' = p.ended;
  if (e === undefined || e === 'ok') return assert.fail(`port not ended with an error (${String(e)})`);
  return e;
}

const key = (i: number): string => {
  const b = Buffer.alloc(32, 1);
  b[0] = i;
  return bs58.encode(b);
};
const keyBuf = (i: number): Buffer => {
  const b = Buffer.alloc(32, 1);
  b[0] = i;
  return b;
};
const upd = (p: Partial<SubscribeUpdate>): SubscribeUpdate => ({ filters: [], pingId: undefined, newSeenSlots: undefined, ...p });
const inc = (...ids: number[]): FilterSpec => ({ include: ids.map(key), exclude: [], required: [] });

function setup(over: { maxFilterUpdatesPerSec?: number; maxMessages?: number; maxBytes?: number } = {}) {
  const index = new FilterIndex<Session>();
  const port = new FakePort();
  const ends: EndReason[] = [];
  let now = 1_000_000;
  const s = new Session(1, port, {
    limits: { maxFilters: 4, maxKeysPerList: 10, maxFilterNameLen: 16, maxFilterUpdatesPerSec: over.maxFilterUpdatesPerSec ?? 50, maxBytes: over.maxBytes ?? 1 << 20, maxMessages: over.maxMessages ?? 100 },
    index,
    pingResponse: (id) => Buffer.from(`ping:${id}`),
    now: () => now,
    onEnd: (_s, r) => ends.push(r),
  });
  return { index, port, ends, s, tick: (ms: number) => (now += ms) };
}

const matchedNames = (index: FilterIndex<Session>, ...ids: number[]): string[] => {
  const r = index.match(Buffer.concat(ids.map(keyBuf)));
  return r.flatMap((m) => m.set.filters.filter((f) => (m.mask & (1 << f.slot)) !== 0).map((f) => f.name));
};

describe('fanout session', () => {
  it('starts empty: no filters, slots off, nothing written', () => {
    const { s, port, index } = setup();
    assert.equal(s.newSeenSlots, false);
    assert.equal(s.filters, null);
    assert.equal(index.size.subscribers, 0);
    assert.equal(port.written.length, 0);
  });

  it('a non-empty map replaces the whole set; an empty map changes nothing', () => {
    const { s, index, port } = setup();
    s.handle(upd({ filters: [['a', inc(1)], ['b', inc(2)]] }));
    assert.deepEqual(matchedNames(index, 1, 2), ['a', 'b']);
    s.handle(upd({ filters: [['c', inc(3)]] }));
    assert.deepEqual(matchedNames(index, 1, 2), [], 'a and b are gone: replacement, not patch');
    assert.deepEqual(matchedNames(index, 3), ['c']);
    s.handle(upd({ filters: [], newSeenSlots: true }));
    assert.deepEqual(matchedNames(index, 3), ['c'], 'empty map keeps the filters');
    assert.equal(port.written.length, 0, 'no acknowledgement of filter changes');
  });

  it('new_seen_slots is independent and sticky', () => {
    const { s } = setup();
    s.handle(upd({ newSeenSlots: true }));
    s.handle(upd({ filters: [['a', inc(1)]] }));
    assert.equal(s.newSeenSlots, true, 'absent keeps the value');
    s.handle(upd({ pingId: 3 }));
    assert.equal(s.newSeenSlots, true);
    s.handle(upd({ newSeenSlots: false }));
    assert.equal(s.newSeenSlots, false);
  });

  it('echoes ping_id, including in the same message as filters', () => {
    const { s, port, index } = setup();
    s.handle(upd({ filters: [['a', inc(1)]], pingId: 42 }));
    s.handle(upd({ pingId: 0 }));
    assert.deepEqual(port.written.map(String), ['ping:42', 'ping:0']);
    assert.deepEqual(matchedNames(index, 1), ['a']);
  });

  it('an invalid key ends the stream with INVALID_ARGUMENT, unanswered, and the session leaves the index', () => {
    const { s, port, index, ends } = setup();
    s.handle(upd({ filters: [['a', inc(1)]] }));
    s.handle(upd({ filters: [['b', { include: ['not*base58'], exclude: [], required: [] }]], pingId: 5 }));
    assert.equal(endError(port).code, status.INVALID_ARGUMENT);
    assert.deepEqual(ends, ['invalidPubkey']);
    assert.equal(index.size.subscribers, 0, 'an ended session leaves the index');
    assert.equal(port.written.length, 0, 'the ping of the rejected message is not answered');
    s.handle(upd({ pingId: 6 }));
    assert.equal(port.written.length, 0, 'nothing after the end');
  });

  it('more than maxFilterUpdatesPerSec filter updates within a second → RESOURCE_EXHAUSTED subscribe_rate_limit', () => {
    const { s, port, ends, tick } = setup({ maxFilterUpdatesPerSec: 5 });
    for (let i = 0; i < 5; i++) {
      s.handle(upd({ filters: [['a', inc(i)]] }));
      tick(100);
    }
    for (let i = 0; i < 50; i++) s.handle(upd({ pingId: i })); // pings do not count
    assert.equal(port.ended, undefined);
    s.handle(upd({ filters: [['a', inc(9)]] })); // the 6th within 1 s
    const e = endError(port);
    assert.equal(e.code, status.RESOURCE_EXHAUSTED);
    assert.match(e.details, /subscribe_rate_limit/);
    assert.deepEqual(e.metadata?.get('x-error-reason'), ['subscribe_rate_limit']);
    assert.deepEqual(ends, ['subscribeRateLimit']);
  });

  it('updates spread over more than a second are fine', () => {
    const { s, port, tick } = setup({ maxFilterUpdatesPerSec: 5 });
    for (let i = 0; i < 30; i++) {
      s.handle(upd({ filters: [['a', inc(i % 10)]] }));
      tick(201);
    }
    assert.equal(port.ended, undefined);
  });

  it('queue overflow ends only this session with DATA_LOSS and frees its queue', () => {
    const { s, port, ends } = setup({ maxMessages: 3 });
    port.accepting = false;
    s.send(Buffer.from('x')); // handed to the port, which pushes back
    s.send(Buffer.from('1'));
    s.send(Buffer.from('2'));
    s.send(Buffer.from('3'));
    assert.equal(s.queueDepth, 3);
    assert.equal(port.ended, undefined);
    s.send(Buffer.from('4'));
    const e = endError(port);
    assert.equal(e.code, status.DATA_LOSS);
    assert.match(e.details, /slow consumer/);
    assert.deepEqual(ends, ['slowConsumer']);
    assert.equal(s.queueDepth, 0);
    assert.equal(s.queueBytes, 0);
  });

  it('clientGone ends silently and once', () => {
    const { s, port, ends, index } = setup();
    s.handle(upd({ filters: [['a', inc(1)]] }));
    s.clientGone();
    s.clientGone();
    s.shutdown();
    assert.equal(port.ended, undefined);
    assert.deepEqual(ends, ['client']);
    assert.equal(index.size.subscribers, 0);
  });
});

describe('fanout subscriber queue', () => {
  it('writes straight through while the sink accepts, queues in order after push-back, resumes on drain', () => {
    const port = new FakePort();
    const tags: number[] = [];
    const q = new SubscriberQueue(port, { maxBytes: 100, maxMessages: 100 }, { onOverflow: () => assert.fail('no overflow'), onWrite: (_b, t) => tags.push(t) });
    q.push(Buffer.from('a'), 1);
    port.accepting = false;
    q.push(Buffer.from('b'), 2);
    q.push(Buffer.from('c'), 3);
    q.push(Buffer.from('d'), 4);
    assert.deepEqual(port.written.map(String), ['a', 'b']);
    assert.equal(q.depth, 2);
    assert.equal(q.bytes, 2);
    port.drain();
    assert.deepEqual(port.written.map(String), ['a', 'b', 'c', 'd']);
    assert.deepEqual(tags, [1, 2, 3, 4]);
    assert.equal(q.depth, 0);
  });

  it('overflows on bytes as well as messages', () => {
    const port = new FakePort();
    let over: unknown;
    const q = new SubscriberQueue(port, { maxBytes: 10, maxMessages: 100 }, { onOverflow: (o) => (over = o) });
    port.accepting = false;
    q.push(Buffer.alloc(4));
    assert.equal(q.push(Buffer.alloc(6)), true);
    assert.equal(q.push(Buffer.alloc(4)), true);
    assert.equal(q.bytes, 10);
    assert.equal(q.push(Buffer.alloc(1)), false);
    assert.deepEqual(over, { limit: 'bytes', max: 10 });
    assert.equal(q.isClosed, true);
    assert.equal(q.push(Buffer.alloc(1)), false);
    port.drain();
    assert.equal(port.written.length, 1, 'nothing written after the overflow');
  });

  it('stays correct over many block/drain cycles (compaction of the backing array)', () => {
    const port = new FakePort();
    const q = new SubscriberQueue(port, { maxBytes: 1 << 30, maxMessages: 1 << 20 }, { onOverflow: () => assert.fail('no overflow') });
    let n = 0;
    for (let round = 0; round < 20; round++) {
      port.accepting = false;
      for (let i = 0; i < 3000; i++) q.push(Buffer.from(String(n++)));
      // accept only a part, then push back again mid-drain
      let budget = 1500;
      port.write = function (chunk: Buffer): boolean {
        this.written.push(chunk);
        return --budget > 0;
      };
      port.drain();
    }
    port.write = function (chunk: Buffer): boolean {
      this.written.push(chunk);
      return true;
    };
    while (q.depth > 0) port.drain();
    assert.equal(port.written.length, n);
    assert.deepEqual(port.written.map(Number), Array.from({ length: n }, (_v, i) => i));
  });
});

describe('fanout update rate and dedupe', () => {
  it('allows N per sliding second, refuses N+1', () => {
    const r = new UpdateRate(3);
    assert.deepEqual([r.allow(0), r.allow(10), r.allow(20), r.allow(999)], [true, true, true, false]);
    assert.equal(r.allow(1000), true); // the update at 0 left the window
    assert.equal(r.allow(1005), false);
    assert.equal(r.allow(1010), true);
  });

  it('drops a key seen within the window and forgets the oldest beyond it', () => {
    const d = new RecentKeys(3);
    const k = (s: string): Buffer => Buffer.from(s);
    assert.deepEqual(['a', 'b', 'a', 'c', 'd', 'a', 'd'].map((s) => d.firstSeen(k(s))), [true, true, false, true, true, true, false]);
    assert.equal(d.size, 3);
  });
});
