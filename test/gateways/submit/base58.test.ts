import assert from 'node:assert/strict';
import bs58 from 'bs58';
import fc from 'fast-check';
import { decodeBase58, encodeBase58 } from '../../../gateways/submit/base58';

describe('submit base58', () => {
  it('encodes exactly as the bs58 package, leading zeros included', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 1300 }), fc.nat({ max: 5 }), (body, z) => {
      const b = Buffer.concat([Buffer.alloc(z), body]);
      assert.equal(encodeBase58(b), bs58.encode(b));
    }), { numRuns: 500 });
  });

  it('decodes exactly as the bs58 package and round-trips', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 1300 }), fc.nat({ max: 5 }), (body, z) => {
      const b = Buffer.concat([Buffer.alloc(z), body]);
      const s = bs58.encode(b);
      const d = decodeBase58(s);
      assert.ok(d !== null);
      assert.equal(d.length, b.length);
      assert.deepEqual(d, b);
    }), { numRuns: 500 });
  });

  it('refuses characters outside the alphabet, as bs58 does', () => {
    for (const s of ['0', 'O', 'I', 'l', 'abc+', 'ab/c', 'é', 'AQID==']) {
      assert.equal(decodeBase58(s), null, s);
      assert.equal(bs58.decodeUnsafe(s), undefined, s);
    }
    assert.deepEqual(decodeBase58(''), Buffer.alloc(0));
    assert.deepEqual(decodeBase58('111'), Buffer.alloc(3));
  });
});
