import assert from 'node:assert/strict';
import fc from 'fast-check';
import { OldestFirstMap, OldestFirstSet } from '../../infra/base/oldest-first';

// The reference is a plain Map/Set (its own order is the age order both promise); the property drives both with
// the same random operations over a small key space, so keys are deleted, re-added and rewritten often, and
// enough of them that the queue compacts.

type Op = ['set', number, number] | ['delete', number] | ['deleteOldest'] | ['clear'];

const op = fc.oneof(
  { weight: 120, arbitrary: fc.tuple(fc.constant('set' as const), fc.integer({ min: 0, max: 40 }), fc.integer()) },
  { weight: 60, arbitrary: fc.tuple(fc.constant('delete' as const), fc.integer({ min: 0, max: 40 })) },
  { weight: 60, arbitrary: fc.tuple(fc.constant('deleteOldest' as const)) },
  { weight: 1, arbitrary: fc.tuple(fc.constant('clear' as const)) },
) as fc.Arbitrary<Op>;

describe('floor: oldest-first map and set', () => {
  it('a map answers as a Map taken oldest first, operation for operation (property)', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 3_000 }), (ops) => {
        const m = new OldestFirstMap<number, number>();
        const ref = new Map<number, number>();
        for (const o of ops) {
          if (o[0] === 'set') (m.set(o[1], o[2]), ref.set(o[1], o[2]));
          else if (o[0] === 'delete') assert.equal(m.delete(o[1]), ref.delete(o[1]));
          else if (o[0] === 'deleteOldest') {
            const k = ref.keys().next();
            if (!k.done) ref.delete(k.value);
            assert.equal(m.deleteOldest(), k.done ? undefined : k.value);
          } else (m.clear(), ref.clear());
          assert.equal(m.size, ref.size);
          const first = ref.entries().next();
          assert.equal(m.oldestKey(), first.done ? undefined : first.value[0]);
          assert.equal(m.oldestValue(), first.done ? undefined : first.value[1]);
        }
        assert.deepEqual([...m.entries()], [...ref.entries()]);
      }),
      { numRuns: 200 },
    );
  });

  it('a set answers as a Set taken oldest first, operation for operation (property)', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 3_000 }), (ops) => {
        const s = new OldestFirstSet<number>();
        const ref = new Set<number>();
        for (const o of ops) {
          if (o[0] === 'set') (s.add(o[1]), ref.add(o[1]));
          else if (o[0] === 'delete') assert.equal(s.delete(o[1]), ref.delete(o[1]));
          else if (o[0] === 'deleteOldest') {
            const k = ref.values().next();
            if (!k.done) ref.delete(k.value);
            assert.equal(s.deleteOldest(), k.done ? undefined : k.value);
          } else (s.clear(), ref.clear());
          assert.equal(s.size, ref.size);
          assert.equal(s.has(7), ref.has(7));
          const first = ref.values().next();
          assert.equal(s.oldest(), first.done ? undefined : first.value);
        }
        assert.deepEqual([...s], [...ref]);
      }),
      { numRuns: 200 },
    );
  });

  it('at a cap of 65,536 with deletions in the middle, the queue stays within twice the live entries plus 1,024 and drops its consumed front', () => {
    // The bound that makes eviction O(1) amortized, asserted on the structure (not timed).
    const s = new OldestFirstSet<number>();
    for (let i = 0; i < 65_536; i++) s.add(i);
    for (let i = 65_536; i < 400_000; i++) {
      s.add(i);
      if (i % 3 === 0) s.delete(i - 10); // deletions in the middle leave stale entries
      while (s.size > 65_536) s.deleteOldest();
    }
    const q = (s as unknown as { queue: { keys: number[]; head: number } }).queue;
    assert.ok(q.keys.length - q.head <= 2 * 65_536 + 1024 + 1, `${q.keys.length - q.head} queue entries for ${s.size} members`);
    assert.ok(q.head < Math.max(4096, q.keys.length / 2 + 1), `a consumed front of ${q.head} kept`);
    assert.equal(s.size, 65_536);
    assert.equal(s.oldest(), [...s][0]);
  });
});
