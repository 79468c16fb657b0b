import assert from 'node:assert/strict';
import bs58 from 'bs58';
import fc from 'fast-check';
import { decode58Into } from '../../../fanout/filter/pubkey58';

// The fast 32-byte decoder must accept exactly what bs58 decodes to 32 bytes, with the same bytes: the
// compiler trusts it for every key and asks bs58 only about the ones it refuses.

function agrees(text: string): void {
  const src = Buffer.from(text, 'utf8');
  const dst = new Uint8Array(32);
  const ok = decode58Into(src, 0, src.length, dst, 0);
  const ref = bs58.decodeUnsafe(text);
  const want = ref !== undefined && ref.length === 32 && text.length > 0;
  assert.equal(ok, want, `accepts ${JSON.stringify(text)}`);
  if (want) assert.deepEqual(Buffer.from(dst), Buffer.from(ref!));
}

describe('fanout base58 key decoder (pubkey58.ts)', () => {
  it('agrees with bs58 on keys, keys with leading zeros, 31/33-byte values and edge texts', () => {
    // Each edge text with the number of bytes base58 makes of it (undefined: not base58). bs58 confirms each,
    // so the list goes on covering what it is meant to: 32-byte keys (zeros and the largest 43-digit text),
    // 31- and 33-byte values on either side, the empty text and characters outside the alphabet.
    const edges: Array<[text: string, bytes: number | undefined]> = [
      ['', 0],
      ['1', 1],
      ['1'.repeat(31), 31],
      ['1'.repeat(31) + '2', 32],
      ['1'.repeat(32), 32],
      ['1'.repeat(33), 33],
      ['1'.repeat(44), 44],
      ['z'.repeat(43), 32],
      ['z'.repeat(44), 33],
      ['z'.repeat(45), 33],
      ['0OIl', undefined],
      ['é'.repeat(2), undefined],
    ];
    for (const [text, bytes] of edges) {
      assert.equal(bs58.decodeUnsafe(text)?.length, bytes, `bs58 makes ${bytes} bytes of ${JSON.stringify(text)}`);
      agrees(text);
    }
    const bytes = fc.oneof(
      fc.uint8Array({ minLength: 32, maxLength: 32 }),
      fc.uint8Array({ minLength: 0, maxLength: 34 }),
      fc.tuple(fc.integer({ min: 0, max: 32 }), fc.uint8Array({ minLength: 32, maxLength: 32 })).map(([z, b]) => b.fill(0, 0, z)),
    );
    fc.assert(fc.property(bytes, (b) => agrees(bs58.encode(b))), { numRuns: 3000 });
    // A key with one character changed (maybe to one outside the alphabet) or one dropped/added.
    const edited = fc.tuple(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.nat(), fc.constantFrom('0', 'z', '1', 'é', '')).map(([b, at, c]) => {
      const t = bs58.encode(b);
      const i = at % t.length;
      return t.slice(0, i) + c + t.slice(i + 1);
    });
    fc.assert(fc.property(edited, agrees), { numRuns: 3000 });
  });

  it('writes at the offset it is given and nowhere else', () => {
    const key = Buffer.alloc(32, 7);
    const text = Buffer.from(bs58.encode(key));
    const dst = new Uint8Array(96).fill(0xaa);
    assert.equal(decode58Into(text, 0, text.length, dst, 32), true);
    assert.deepEqual(Buffer.from(dst.subarray(32, 64)), key);
    assert.equal(dst.subarray(0, 32).every((x) => x === 0xaa), true);
    assert.equal(dst.subarray(64).every((x) => x === 0xaa), true);
  });
});
