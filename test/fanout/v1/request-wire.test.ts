import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeSubscribeUpdate } from '../../../fanout/v1/request-wire';
import { WireKeys } from '../../../fanout/filter/wire-keys';
import type { KeyList } from '../../../fanout/filter/compile';
import { updateFromRequest } from '../../support/request-adapter';
import type { SubscribeUpdate } from '../../../fanout/v1/request';
import { deserializeSubscribeRequest, serializeSubscribeRequest } from '../../../proto/service';
import { checkSubscribeRequest, WireError } from '../../../proto/wire';
import { testKey58 } from '../support';

// The server's own SubscribeRequest reader must see exactly what the generated decoder (after the wire
// vetting) sees: same filters in the same order, same ping and slot switch, and refuse the same bytes.

const text = (l: KeyList): string[] => (l instanceof WireKeys ? Array.from({ length: l.length }, (_v, i) => l.text(i)) : [...l]);

function plain(u: SubscribeUpdate): unknown {
  return { filters: u.filters.map(([n, f]) => [n, text(f.include), text(f.exclude), text(f.required)]), pingId: u.pingId, newSeenSlots: u.newSeenSlots };
}

function both(bytes: Buffer): { generated: unknown; ours: unknown } {
  const run = (f: () => SubscribeUpdate): unknown => {
    try {
      return plain(f());
    } catch {
      return 'refused';
    }
  };
  return { generated: run(() => updateFromRequest(deserializeSubscribeRequest(bytes))), ours: run(() => decodeSubscribeUpdate(bytes)) };
}

const key = fc.oneof(fc.nat(50).map((i) => testKey58(i)), fc.string({ maxLength: 6 }), fc.constant('11111111111111111111111111111111'));
const filterArb = fc.record({ accountInclude: fc.array(key, { maxLength: 4 }), accountExclude: fc.array(key, { maxLength: 3 }), accountRequired: fc.array(key, { maxLength: 3 }) });
const requestArb = fc.record(
  { transactions: fc.dictionary(fc.string({ maxLength: 8 }), filterArb, { maxKeys: 5 }), pingId: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), newSeenSlots: fc.boolean() },
  { requiredKeys: ['transactions'] },
);

describe('fanout request reader (request-wire.ts)', () => {
  it('agrees with the generated decoder on every request it writes', () => {
    fc.assert(
      fc.property(requestArb, (r) => {
        const { generated, ours } = both(serializeSubscribeRequest(r));
        assert.notEqual(generated, 'refused');
        assert.deepEqual(ours, generated);
      }),
      { numRuns: 300 },
    );
  });

  // On corrupted bytes the generated map-entry reader is not a reference (it re-reads what follows an unknown
  // field inside an entry as the filter), so the check is against the wire vetting both paths share.
  it('refuses exactly the mutated and truncated bytes that the wire vetting refuses', () => {
    fc.assert(
      fc.property(requestArb, fc.array(fc.tuple(fc.nat(), fc.nat(255)), { minLength: 1, maxLength: 4 }), fc.nat(), (r, flips, cut) => {
        const b = Buffer.from(serializeSubscribeRequest(r));
        if (b.length === 0) return;
        for (const [at, v] of flips) b[at % b.length] = v;
        const bytes = b.subarray(0, b.length - (cut % 3 === 0 ? cut % b.length : 0));
        let vetted = true;
        try {
          checkSubscribeRequest(bytes);
        } catch {
          vetted = false;
        }
        let ours = true;
        try {
          decodeSubscribeUpdate(bytes);
        } catch (e) {
          assert.ok(e instanceof WireError, String(e));
          ours = false;
        }
        assert.equal(ours, vetted);
      }),
      { numRuns: Number(process.env.RUNS ?? 1000) },
    );
  });

  it('a repeated filter name keeps the last value; names come in code-unit order', () => {
    const a = serializeSubscribeRequest({ transactions: { b: { accountInclude: [testKey58(1)] }, a: {} } });
    const again = serializeSubscribeRequest({ transactions: { b: { accountInclude: [testKey58(2)] } } });
    const u = decodeSubscribeUpdate(Buffer.concat([a, again]));
    assert.equal(u.filters.length, 2);
    assert.deepEqual(plain(u), both(Buffer.concat([a, again])).generated);
    assert.deepEqual(u.filters.map(([n]) => n), ['a', 'b']);
    assert.deepEqual(text(u.filters[1]![1].include), [testKey58(2)]);
  });
});
