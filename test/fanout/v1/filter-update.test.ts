import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import type { StreamError } from '../../../fanout/errors';
import type { FilterSpec } from '../../../fanout/filter/compile';
import { FilterIndex } from '../../../fanout/filter/filter-index';
import type { EndReason } from '../../../fanout/errors';
import { Session } from '../../../fanout/v1/session';
import { FakePort } from '../fake-port';
import { testKey, testKey58 } from '../support';

// A full-size filter map (16 filters × 3 lists × 1,000 keys) is valid and cheap to re-send: unchanged filters
// keep their compiled lists and index entries; the per-stream key cap and the keys-per-second charge hold.

const FILTERS = 16;
const KEYS = 1000;

function fullMap(salt: number, changed = -1): Array<[string, FilterSpec]> {
  return Array.from({ length: FILTERS }, (_v, f) => {
    const s = f === changed ? salt + 1000 : salt;
    const list = (l: number): string[] => Array.from({ length: KEYS }, (_w, k) => testKey58(f * 3000 + l * 1000 + k, s));
    return [`filter-${f}`, { include: list(0), exclude: list(1), required: list(2) }] as [string, FilterSpec];
  });
}

function setup(limits: { maxKeysPerStream?: number; maxFilterKeysPerSec?: number; maxKeysTotal?: number } = {}) {
  const index = new FilterIndex<Session>();
  const port = new FakePort();
  const ends: EndReason[] = [];
  let now = 1_000_000;
  const s = new Session(1, port, {
    limits: { maxFilters: 16, maxKeysPerList: 1000, maxFilterNameLen: 128, maxFilterUpdatesPerSec: 50, maxBytes: 1 << 20, maxMessages: 100, ...limits },
    index,
    pingResponse: (id) => Buffer.from(`ping:${id}`),
    now: () => now,
    onEnd: (_s, r) => ends.push(r),
  });
  return { s, index, port, ends, tick: (ms: number) => (now += ms) };
}

const upd = (filters: Array<[string, FilterSpec]>) => ({ filters, pingId: undefined, newSeenSlots: undefined });

function endError(p: FakePort): StreamError {
  const e = p.ended;
  if (e === undefined || e === 'ok') return assert.fail(`port not ended with an error (${String(e)})`);
  return e;
}

describe('fanout filter updates at full size', () => {
  it('a full-size map is accepted; re-sending it keeps every compiled filter; changing one recompiles that one only', () => {
    const { s, index, ends, tick } = setup({ maxKeysPerStream: 48_000, maxFilterKeysPerSec: 250_000 });
    s.handle(upd(fullMap(1)));
    assert.deepEqual(ends, []);
    assert.equal(s.filters?.filters.length, FILTERS);
    assert.equal(index.totalKeys, FILTERS * 3 * KEYS);
    const first = s.filters!.filters.map((f) => f.include);
    tick(1000);
    s.handle(upd(fullMap(1)));
    const again = s.filters!.filters.map((f) => f.include);
    assert.equal(again.length, FILTERS);
    assert.ok(again.every((l, i) => l === first[i]), 'same compiled lists: nothing decoded again');
    tick(1000);
    s.handle(upd(fullMap(1, 5)));
    const third = s.filters!.filters.map((f) => f.include);
    assert.equal(third.filter((l, i) => l !== first[i]).length, 1, 'only filter-5 recompiled');
    assert.equal(index.totalKeys, FILTERS * 3 * KEYS);
    // The index follows the change: filter-5's old keys are gone, its new ones match.
    const oldKey = testKey(5 * 3000, 1);
    const newKey = Buffer.concat([testKey(5 * 3000, 1001), ...Array.from({ length: KEYS }, (_v, k) => testKey(5 * 3000 + 2000 + k, 1001))]);
    assert.equal(index.match(oldKey).length, 0);
    const m = index.match(newKey);
    assert.equal(m.length, 1);
    assert.equal(m[0]!.mask, 1 << 5);
    assert.deepEqual(ends, []);
  });

  it('more keys than maxKeysPerStream → INVALID_ARGUMENT too_many_keys, before anything is decoded', () => {
    const { s, port, ends, index } = setup({ maxKeysPerStream: 47_999 });
    s.handle(upd(fullMap(2)));
    assert.deepEqual(ends, ['tooManyKeysTotal']);
    const e = endError(port);
    assert.equal(e.code, status.INVALID_ARGUMENT);
    assert.equal(e.reason, 'too_many_keys');
    assert.match(e.details, /48000 keys in all \(at most 47999 per stream\)/);
    assert.equal(index.totalKeys, 0);
  });

  it('updates are charged by the keys they change: new maps beyond maxFilterKeysPerSec → RESOURCE_EXHAUSTED subscribe_rate_limit; re-sends are free', () => {
    const { s, port, ends, tick } = setup({ maxFilterKeysPerSec: 100_000 });
    s.handle(upd(fullMap(3)));
    for (let i = 0; i < 20; i++) {
      tick(10);
      s.handle(upd(fullMap(3))); // unchanged: nothing to decode, nothing charged
    }
    tick(10);
    s.handle(upd(fullMap(4)));
    assert.deepEqual(ends, [], 'two new maps (96,000 keys) and 20 re-sends fit in one second');
    tick(10);
    s.handle(upd(fullMap(5)));
    assert.deepEqual(ends, ['subscribeRateLimit']);
    const e = endError(port);
    assert.equal(e.code, status.RESOURCE_EXHAUSTED);
    assert.match(e.details, /^subscribe_rate_limit: filter updates carrying more than 100000 keys per second/);
  });

  it('the keys of all streams are capped (RESOURCE_EXHAUSTED filter_capacity); a stream replacing its own map is not double-counted', () => {
    const index = new FilterIndex<Session>();
    const mk = (id: number) => {
      const port = new FakePort();
      const s = new Session(id, port, {
        limits: { maxFilters: 16, maxKeysPerList: 1000, maxFilterNameLen: 128, maxFilterUpdatesPerSec: 50, maxBytes: 1 << 20, maxMessages: 100, maxKeysTotal: 60_000 },
        index,
        pingResponse: (pid) => Buffer.from(`ping:${pid}`),
        onEnd: () => undefined,
      });
      return { s, port };
    };
    const a = mk(1);
    a.s.handle(upd(fullMap(4)));
    a.s.handle(upd(fullMap(5)));
    assert.equal(a.port.ended, undefined);
    const b = mk(2);
    b.s.handle(upd(fullMap(6)));
    const e = endError(b.port);
    assert.equal(e.code, status.RESOURCE_EXHAUSTED);
    assert.equal(e.reason, 'filter_capacity');
    assert.equal(index.totalKeys, 48_000);
  });
});
