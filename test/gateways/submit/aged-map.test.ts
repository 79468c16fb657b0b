import assert from 'node:assert/strict';
import { AgedMap } from '../../../gateways/submit/aged-map';

// The age-ordered store under the signature cache and the rejected-repeats memory: swept from the front on write,
// oldest evicted past maxEntries, an entry moved to the back whenever it is written.

interface E {
  at: number;
  n: number;
}

const keys = (m: AgedMap<E>, probe: string[]): string[] => probe.filter((k) => m.get(k) !== undefined);

describe('submit: aged map', () => {
  it('a write sweeps what is older than the window from the front, and only on write', () => {
    const m = new AgedMap<E>(100, 10);
    m.write('a', 0, () => ({ at: 0, n: 1 }));
    m.write('b', 50, () => ({ at: 50, n: 2 }));
    assert.equal(m.expired(m.get('a')!, 101), true);
    assert.equal(m.expired(m.get('a')!, 100), false, 'exactly the window is still young');
    assert.equal(m.size, 2, 'reading expiry does not sweep');
    m.write('c', 120, () => ({ at: 120, n: 3 }));
    assert.deepEqual(keys(m, ['a', 'b', 'c']), ['b', 'c']);
  });

  it('the sweep stops at the first young entry (age order is write order)', () => {
    const m = new AgedMap<E>(100, 10);
    m.write('a', 0, () => ({ at: 0, n: 1 }));
    m.write('b', 10, () => ({ at: 10, n: 2 }));
    m.write('a', 20, (old) => ({ at: 20, n: old!.n + 1 })); // a moves behind b
    m.write('c', 115, () => ({ at: 115, n: 3 }));
    assert.deepEqual(keys(m, ['a', 'b', 'c']), ['a', 'c']);
    assert.equal(m.get('a')!.n, 2);
  });

  it('a new key past maxEntries evicts the oldest; an existing key evicts nothing', () => {
    const m = new AgedMap<E>(1_000, 2);
    m.write('a', 0, () => ({ at: 0, n: 1 }));
    m.write('b', 1, () => ({ at: 1, n: 2 }));
    m.write('a', 2, (old) => ({ at: 2, n: old!.n }));
    assert.deepEqual(keys(m, ['a', 'b']), ['a', 'b']);
    m.write('c', 3, () => ({ at: 3, n: 3 }));
    assert.deepEqual(keys(m, ['a', 'b', 'c']), ['a', 'c'], 'b was the oldest after a was rewritten');
  });

  it('write hands the update the entry that survived the sweep (an expired one is gone first)', () => {
    const m = new AgedMap<E>(100, 10);
    m.write('a', 0, () => ({ at: 0, n: 7 }));
    const seen: Array<E | undefined> = [];
    m.write('a', 50, (old) => (seen.push(old), { at: 50, n: 8 }));
    m.write('a', 200, (old) => (seen.push(old), { at: 200, n: 9 }));
    assert.deepEqual(seen, [{ at: 0, n: 7 }, undefined]);
  });

  it('reinsert moves an entry to the back without sweeping or evicting', () => {
    const m = new AgedMap<E>(100, 2);
    m.write('a', 0, () => ({ at: 0, n: 1 }));
    m.write('b', 10, () => ({ at: 10, n: 2 }));
    m.reinsert('a', { at: 500, n: 3 });
    assert.equal(m.size, 2, 'b, though expired at 500, stays until a write');
    m.write('c', 500, () => ({ at: 500, n: 4 }));
    assert.deepEqual(keys(m, ['a', 'b', 'c']), ['a', 'c']);
    m.delete('a');
    assert.equal(m.get('a'), undefined);
  });
});
