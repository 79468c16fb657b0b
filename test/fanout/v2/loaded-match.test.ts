import assert from 'node:assert/strict';
import bs58 from 'bs58';
import { compileFilters, maskNames, type FilterSpec } from '../../../fanout/filter';
import { FilterIndex } from '../../../fanout/filter-index';
import { matchWithLoaded } from '../../../fanout/v2/loaded-match';

// The v2 merge of static-key and loaded-address matches (fanout/v2/loaded-match.ts): flagged filters see static +
// loaded keys for include, required and exclude; unflagged filters of the same set see static keys only.

const LIMITS = { maxFilters: 16, maxKeysPerList: 1000, maxFilterNameLen: 128 };
const key = (i: number): Buffer => {
  const b = Buffer.alloc(32, 0);
  b.writeUInt32BE(i + 1, 0);
  b[31] = 0x3c;
  return b;
};
const K = (i: number): string => bs58.encode(key(i));
const spec = (p: Partial<Record<keyof FilterSpec, number[]>>): FilterSpec => ({ include: (p.include ?? []).map(K), exclude: (p.exclude ?? []).map(K), required: (p.required ?? []).map(K) });

interface Sub {
  loadedMask: number;
}

describe('v2 matching with loaded addresses (match_loaded_addresses)', () => {
  it('flagged filters match on static + loaded keys, unflagged ones on static keys, in one set and across streams', () => {
    const index = new FilterIndex<Sub>();
    // Static keys 1, 2; loaded: writable 10, readonly 11.
    const entries: Array<[string, FilterSpec]> = [
      ['inc-loaded', spec({ include: [10] })], // flagged: matches through the table
      ['inc-plain', spec({ include: [10] })], // unflagged: does not
      ['req-loaded', spec({ required: [1, 11] })], // flagged: static 1 + loaded 11
      ['req-plain', spec({ required: [1, 11] })],
      ['exc-loaded', spec({ include: [1], exclude: [11] })], // flagged: excluded by a loaded address
      ['exc-plain', spec({ include: [1], exclude: [11] })], // unflagged: matches on 1
    ];
    const r = compileFilters(entries, LIMITS);
    assert.ok(r.ok);
    const flagged = new Set(['inc-loaded', 'req-loaded', 'exc-loaded']);
    let mask = 0;
    for (const f of r.set.filters) if (flagged.has(f.name)) mask |= 1 << f.slot;
    const a: Sub = { loadedMask: mask };
    index.replace(a, r.set);
    // A stream with only an exclusion hit by a loaded address: static match, gone once loaded keys count.
    const r2 = compileFilters([['only-exc', spec({ include: [2], exclude: [10] })]], LIMITS);
    assert.ok(r2.ok);
    const b: Sub = { loadedMask: 1 };
    index.replace(b, r2.set);
    const c: Sub = { loadedMask: 0 };
    index.replace(c, r2.set);

    const accountKeys = Buffer.concat([key(1), key(2)]);
    const stat = index.match(accountKeys);
    const got = matchWithLoaded(index, stat, accountKeys, { writable: [key(10)], readonly: [key(11)], unresolvedTables: [] });
    const bySub = new Map(got.map((m) => [m.sub, maskNames(m.set, m.mask).sort()]));
    assert.deepEqual(bySub.get(a), ['exc-plain', 'inc-loaded', 'req-loaded']);
    assert.equal(bySub.has(b), false, 'the flagged exclusion hit by a loaded address drops the stream');
    assert.deepEqual(bySub.get(c), ['only-exc'], 'unflagged: static keys only');
    // Nothing loaded (every table unresolved): the static matches as they are.
    assert.equal(matchWithLoaded(index, stat, accountKeys, { writable: [], readonly: [], unresolvedTables: [key(99)] }), stat);
  });
});
