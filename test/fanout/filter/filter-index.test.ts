import assert from 'node:assert/strict';
import bs58 from 'bs58';
import fc from 'fast-check';
import { status } from '@grpc/grpc-js';
import { compileFilters, maskNames, type CompiledFilterSet, type FilterSpec } from '../../../fanout/filter/compile';
import { FilterIndex } from '../../../fanout/filter/filter-index';
import { isStreamError } from '../../../fanout/errors';

// Filter semantics (service.md Endpoint A 5–8) checked case by case, then against a naive reference matcher
// on random subscribers, filters and transactions.

const LIMITS = { maxFilters: 16, maxKeysPerList: 1000, maxFilterNameLen: 128 };

function keyBytes(i: number): Buffer {
  const b = Buffer.alloc(32, 0);
  b.writeUInt32BE(i + 1, 0); // never all-zero, so base58 round-trips to 32 bytes
  b[31] = 0x5a;
  return b;
}
const K = (i: number): string => bs58.encode(keyBytes(i));
const tx = (...ids: number[]): Buffer => Buffer.concat(ids.map(keyBytes));

function spec(p: Partial<Record<keyof FilterSpec, number[]>>): FilterSpec {
  return { include: (p.include ?? []).map(K), exclude: (p.exclude ?? []).map(K), required: (p.required ?? []).map(K) };
}

function compile(entries: Array<[string, FilterSpec]>): CompiledFilterSet {
  const r = compileFilters(entries, LIMITS);
  if (!r.ok) throw new Error(r.error.details);
  return r.set;
}

/** subscriber → matching filter names, for one transaction. */
function names(index: FilterIndex<string>, t: Buffer): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const m of index.match(t)) out.set(m.sub, maskNames(m.set, m.mask));
  return out;
}

describe('fanout filter compile', () => {
  it('rejects invalid base58 with INVALID_ARGUMENT naming the filter, list and key', () => {
    const r = compileFilters([['mine', { include: [K(1), '0OIl-not-base58'], exclude: [], required: [] }]], LIMITS);
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.equal(r.error.code, status.INVALID_ARGUMENT);
    assert.match(r.error.details, /"mine" account_include\[1\] "0OIl-not-base58": not valid base58/);
    assert.ok(isStreamError(r.error, 'invalidPubkey'));
  });

  it('rejects a key that is valid base58 but not 32 bytes', () => {
    const short = bs58.encode(Buffer.alloc(31, 7));
    const r = compileFilters([['f', { include: [], exclude: [], required: [short] }]], LIMITS);
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.equal(r.error.code, status.INVALID_ARGUMENT);
    assert.match(r.error.details, /account_required\[0\].*decodes to 31 bytes, expected 32/);
  });

  it('rejects the empty string as a key', () => {
    const r = compileFilters([['f', { include: [''], exclude: [], required: [] }]], LIMITS);
    assert.equal(r.ok, false);
  });

  it('enforces maxFilters, maxFilterNameLen and maxKeysPerList', () => {
    const lim = { maxFilters: 2, maxKeysPerList: 3, maxFilterNameLen: 5 };
    const three = compileFilters([['a', spec({})], ['b', spec({})], ['c', spec({})]], lim);
    assert.ok(!three.ok && three.error.code === status.INVALID_ARGUMENT && /too many transaction filters: 3 \(at most 2\)/.test(three.error.details));
    const longName = compileFilters([['abcdef', spec({})]], lim);
    assert.ok(!longName.ok && /filter name "abcdef" is 6 characters \(at most 5\)/.test(longName.error.details));
    const keys = compileFilters([['a', spec({ exclude: [1, 2, 3, 4] })]], lim);
    assert.ok(!keys.ok && /filter "a" account_exclude has 4 keys \(at most 3\)/.test(keys.error.details));
    assert.ok(compileFilters([['abcde', spec({ exclude: [1, 2, 3] })], ['b', spec({})]], lim).ok);
  });

  it('never accepts more than 32 filters whatever the configuration says (match masks are 32-bit)', () => {
    const many = Array.from({ length: 33 }, (_v, i): [string, FilterSpec] => [`f${i}`, spec({})]);
    const r = compileFilters(many, { ...LIMITS, maxFilters: 100 });
    assert.equal(r.ok, false);
  });
});

describe('fanout filter index', () => {
  it('include: any listed key', () => {
    const ix = new FilterIndex<string>();
    ix.replace('s', compile([['inc', spec({ include: [1, 2] })]]));
    assert.deepEqual(names(ix, tx(9, 2)), new Map([['s', ['inc']]]));
    assert.deepEqual(names(ix, tx(9, 8)), new Map());
  });

  it('required: every listed key', () => {
    const ix = new FilterIndex<string>();
    ix.replace('s', compile([['req', spec({ required: [1, 2] })]]));
    assert.deepEqual(names(ix, tx(1, 2, 3)), new Map([['s', ['req']]]));
    assert.deepEqual(names(ix, tx(1, 3)), new Map());
  });

  it('a key repeated in the transaction or in the required list does not count twice', () => {
    const ix = new FilterIndex<string>();
    ix.replace('s', compile([['req', { include: [], exclude: [], required: [K(1), K(1), K(2)] }]]));
    assert.deepEqual(names(ix, tx(1, 1)), new Map());
    assert.deepEqual(names(ix, tx(1, 2)), new Map([['s', ['req']]]));
  });

  it('exclude alone = everything not excluded', () => {
    const ix = new FilterIndex<string>();
    ix.replace('s', compile([['exc', spec({ exclude: [5] })]]));
    assert.deepEqual(names(ix, tx(1)), new Map([['s', ['exc']]]));
    assert.deepEqual(names(ix, tx(1, 5)), new Map());
    assert.equal(ix.size.matchAll, 1);
  });

  it('an empty filter matches every transaction, including one with no keys', () => {
    const ix = new FilterIndex<string>();
    ix.replace('s', compile([['all', spec({})]]));
    assert.deepEqual(names(ix, tx(1, 2)), new Map([['s', ['all']]]));
    assert.deepEqual(names(ix, Buffer.alloc(0)), new Map([['s', ['all']]]));
  });

  it('AND within a filter: include and required and exclude together', () => {
    const ix = new FilterIndex<string>();
    ix.replace('s', compile([['and', spec({ include: [1, 2], required: [3], exclude: [4] })]]));
    assert.deepEqual(names(ix, tx(1, 3)), new Map([['s', ['and']]]));
    assert.deepEqual(names(ix, tx(2, 3, 9)), new Map([['s', ['and']]]));
    assert.deepEqual(names(ix, tx(1)), new Map(), 'required missing');
    assert.deepEqual(names(ix, tx(3)), new Map(), 'include missing');
    assert.deepEqual(names(ix, tx(1, 3, 4)), new Map(), 'excluded');
  });

  it('one result per subscriber listing every matching filter, in request order', () => {
    const ix = new FilterIndex<string>();
    ix.replace('s', compile([['b', spec({ include: [1] })], ['a', spec({ required: [2] })], ['c', spec({ include: [7] })], ['z', spec({})]]));
    const r = ix.match(tx(1, 2));
    assert.equal(r.length, 1);
    assert.deepEqual(maskNames(r[0]!.set, r[0]!.mask), ['b', 'a', 'z']);
  });

  it('replace swaps the whole set and remove forgets the subscriber and its postings', () => {
    const ix = new FilterIndex<string>();
    ix.replace('s', compile([['old', spec({ include: [1] })]]));
    ix.replace('s', compile([['new', spec({ include: [2] })]]));
    assert.deepEqual(names(ix, tx(1)), new Map());
    assert.deepEqual(names(ix, tx(2)), new Map([['s', ['new']]]));
    ix.replace('t', compile([['all', spec({})]]));
    ix.remove('s');
    ix.remove('t');
    assert.deepEqual(ix.size, { subscribers: 0, matchAll: 0, keys: 0 });
    assert.deepEqual(names(ix, tx(2)), new Map());
  });

  it('the 32nd filter (bit 31, the sign bit) is reported like any other', () => {
    const ix = new FilterIndex<string>();
    const entries = Array.from({ length: 32 }, (_v, i): [string, FilterSpec] => [`f${i}`, spec({ include: [i] })]);
    const set = compileFilters(entries, { ...LIMITS, maxFilters: 32 });
    assert.ok(set.ok);
    if (!set.ok) return;
    ix.replace('s', set.set);
    assert.deepEqual(names(ix, tx(31, 0)), new Map([['s', ['f0', 'f31']]]));
    assert.deepEqual(names(ix, tx(31)), new Map([['s', ['f31']]]));
  });

  it('several subscribers are independent', () => {
    const ix = new FilterIndex<string>();
    ix.replace('a', compile([['x', spec({ include: [1] })]]));
    ix.replace('b', compile([['x', spec({ exclude: [1] })]]));
    ix.replace('c', compile([['y', spec({ required: [1, 2] })]]));
    assert.deepEqual(names(ix, tx(1)), new Map([['a', ['x']]]));
    assert.deepEqual(names(ix, tx(2)), new Map([['b', ['x']]]));
    assert.deepEqual(names(ix, tx(1, 2)), new Map([['a', ['x']], ['c', ['y']]]));
  });
});

// ---- property test against the obvious matcher ----

interface ModelFilter {
  name: string;
  include: number[];
  exclude: number[];
  required: number[];
}

function naive(filters: ModelFilter[], keys: number[]): string[] {
  const has = new Set(keys);
  return filters
    .filter((f) => (f.include.length === 0 || f.include.some((k) => has.has(k))) && f.required.every((k) => has.has(k)) && !f.exclude.some((k) => has.has(k)))
    .map((f) => f.name);
}

const UNIVERSE = 12; // small, so lists and transactions collide often
const keyId = fc.integer({ min: 0, max: UNIVERSE - 1 });
const list = fc.array(keyId, { maxLength: 4 });
const filtersArb = fc.uniqueArray(
  fc.record({ name: fc.string({ minLength: 0, maxLength: 4 }), include: list, exclude: list, required: list }),
  { maxLength: 5, selector: (f) => f.name },
);
const op = fc.oneof(
  fc.record({ kind: fc.constant('replace' as const), sub: fc.integer({ min: 0, max: 5 }), filters: filtersArb }),
  fc.record({ kind: fc.constant('remove' as const), sub: fc.integer({ min: 0, max: 5 }) }),
  fc.record({ kind: fc.constant('tx' as const), keys: fc.array(keyId, { maxLength: 8 }) }),
);

describe('fanout filter index vs a naive matcher (property)', () => {
  it('agrees on every transaction after any sequence of replace/remove', () => {
    let txChecks = 0;
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 40 }), (ops) => {
        const ix = new FilterIndex<number>();
        const model = new Map<number, ModelFilter[]>();
        for (const o of ops) {
          if (o.kind === 'replace') {
            const set = compile(o.filters.map((f): [string, FilterSpec] => [f.name, spec(f)]));
            ix.replace(o.sub, set);
            if (o.filters.length === 0) model.delete(o.sub);
            else model.set(o.sub, o.filters);
          } else if (o.kind === 'remove') {
            ix.remove(o.sub);
            model.delete(o.sub);
          } else {
            txChecks++;
            const got = new Map<number, string[]>();
            for (const m of ix.match(tx(...o.keys))) got.set(m.sub, maskNames(m.set, m.mask));
            const want = new Map<number, string[]>();
            for (const [sub, fs] of model) {
              const n = naive(fs, o.keys);
              if (n.length > 0) want.set(sub, n);
            }
            assert.deepEqual(got, want);
          }
        }
      }),
      { numRuns: 600 },
    );
    assert.ok(txChecks > 500, `only ${txChecks} transactions were checked`);
  });
});

describe('fanout filter index at size (its own hash table: growth, rehash, deletion)', () => {
  it('thousands of keys added, replaced and removed in random order: every key still finds exactly its holders', () => {
    const ix = new FilterIndex<number>();
    const SUBS = 12;
    const PER = 700; // include keys per subscriber's one filter: 8,400 at once, the table grows and rehashes
    let seed = 12345;
    const rnd = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    const held = new Map<number, number[]>(); // subscriber → its key ids
    for (let round = 0; round < 6; round++) {
      for (let s = 0; s < SUBS; s++) {
        if (rnd(4) === 0) {
          ix.remove(s);
          held.delete(s);
          continue;
        }
        // Keys from a shared range, so postings carry several subscribers and removals leave others behind.
        const ids = Array.from({ length: PER }, () => rnd(6000));
        ix.replace(s, compile([['f', spec({ include: ids })]]));
        held.set(s, ids);
      }
      const holders = new Map<number, Set<number>>();
      for (const [s, ids] of held) for (const id of ids) (holders.get(id) ?? holders.set(id, new Set()).get(id)!).add(s);
      assert.equal(ix.size.keys, holders.size);
      assert.equal(ix.size.subscribers, held.size);
      for (let id = 0; id < 6000; id++) {
        const got = ix.match(tx(id)).map((m) => m.sub).sort((a, b) => a - b);
        const want = [...(holders.get(id) ?? [])].sort((a, b) => a - b);
        assert.deepEqual(got, want, `key ${id}, round ${round}`);
      }
    }
    // Leaving one by one: the table shrinks as keys go, and what stays still matches.
    for (let s = 0; s < SUBS - 1; s++) {
      ix.remove(s);
      held.delete(s);
    }
    const last = held.get(SUBS - 1) ?? [];
    assert.equal(ix.size.keys, new Set(last).size);
    for (let id = 0; id < 6000; id++) assert.equal(ix.match(tx(id)).length, last.includes(id) ? 1 : 0, `key ${id} after leaving`);
    ix.remove(SUBS - 1);
    assert.deepEqual(ix.size, { subscribers: 0, matchAll: 0, keys: 0 });
    assert.equal(ix.totalKeys, 0);
  });
});
