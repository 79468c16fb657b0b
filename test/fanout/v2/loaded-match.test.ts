import assert from 'node:assert/strict';
import bs58 from 'bs58';
import { compileFilters, maskNames, type FilterSpec } from '../../../fanout/filter/compile';
import { FilterIndex } from '../../../fanout/filter/filter-index';
import { LoadedBlock } from '../../../fanout/filter/loaded-addresses';
import { matchWithLoaded } from '../../../fanout/v2/loaded-match';
import { rng } from '../../support/prng';

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
    const check = (got: ReturnType<typeof matchWithLoaded<Sub>>, how: string): void => {
      const bySub = new Map(got.map((m) => [m.sub, maskNames(m.set, m.mask).sort()]));
      assert.deepEqual(bySub.get(a), ['exc-plain', 'inc-loaded', 'req-loaded'], how);
      assert.equal(bySub.has(b), false, `${how}: the flagged exclusion hit by a loaded address drops the stream`);
      assert.deepEqual(bySub.get(c), ['only-exc'], `${how}: unflagged: static keys only`);
    };
    check(matchWithLoaded(index, accountKeys, { writable: [key(10)], readonly: [key(11)], unresolvedTables: [] }), 'lists');
    check(matchWithLoaded(index, accountKeys, new LoadedBlock(Buffer.concat([key(10), key(11)]), 1, [])), 'block');
    // Nothing loaded (every table unresolved): the static matches as they are.
    const plain = (ms: Array<{ sub: Sub; mask: number }>): Array<[Sub, number]> => ms.map((m) => [m.sub, m.mask]);
    assert.deepEqual(plain(matchWithLoaded(index, accountKeys, { writable: [], readonly: [], unresolvedTables: [key(99)] })), plain(index.match(accountKeys)));
    assert.deepEqual(plain(matchWithLoaded(index, accountKeys, new LoadedBlock(Buffer.alloc(0), 0, [key(99)]))), plain(index.match(accountKeys)));
  });

  it('one walk (matchSplit) answers as the two walks it replaces, on random filters and transactions', () => {
    const rand = rng(2401);
    const pick = (n: number): number => Math.floor(rand() * n);
    const index = new FilterIndex<Sub>();
    const subs: Sub[] = [];
    for (let s = 0; s < 60; s++) {
      const entries: Array<[string, FilterSpec]> = [];
      const nf = 1 + pick(4);
      for (let f = 0; f < nf; f++) {
        const list = (n: number): number[] => Array.from({ length: n }, () => pick(40));
        entries.push([`f${f}`, spec({ include: list(pick(4)), required: list(pick(3)), exclude: list(pick(2)) })]);
      }
      const r = compileFilters(entries, LIMITS);
      assert.ok(r.ok);
      const sub: Sub = { loadedMask: pick(1 << nf) };
      subs.push(sub);
      index.replace(sub, r.set);
    }
    for (let t = 0; t < 500; t++) {
      const st = Array.from({ length: 1 + pick(6) }, () => key(pick(40)));
      const ld = Array.from({ length: pick(8) }, () => key(pick(40)));
      const accountKeys = Buffer.concat(st);
      const wide = new Map(index.match(Buffer.concat([...st, ...ld])).map((m) => [m.sub, m.mask]));
      const narrow = new Map(index.match(accountKeys).map((m) => [m.sub, m.mask]));
      const want = new Map<Sub, number>();
      for (const s of subs) {
        const m = ((narrow.get(s) ?? 0) & ~s.loadedMask) | ((wide.get(s) ?? 0) & s.loadedMask);
        if (m !== 0) want.set(s, m);
      }
      const got = new Map(matchWithLoaded(index, accountKeys, new LoadedBlock(Buffer.concat(ld), pick(ld.length + 1), [])).map((m) => [m.sub, m.mask]));
      assert.deepEqual(got, want, `transaction ${t}`);
    }
  });
});
