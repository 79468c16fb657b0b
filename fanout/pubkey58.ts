// Base58 → 32-byte public key, for the filter compiler: a full-size filter map carries 48,000 keys, and the
// generic decoder (bs58) spends ~2 µs on each. This one only accepts what decodes to exactly 32 bytes, so its
// number fits 16 limbs of 16 bits and it can take five digits per step (58^5 < 2^30, limb × 58^5 + carry
// < 2^46: exact in a double). Anything it refuses goes to bs58, which gives the precise error; anything it
// accepts, bs58 would decode to the same bytes (leading '1's are leading zero bytes, then the number).

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const DIGIT = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DIGIT[ALPHABET.charCodeAt(i)] = i;

const KEY_SZ = 32;
const LIMBS = 16;
/** Longest base58 text of 32 bytes (all leading zeros are '1's, so 32 ones is also ≤ 44). */
const MAX_CHARS = 44;
const limbs = new Float64Array(LIMBS);
const out = Buffer.alloc(KEY_SZ);
const POW58 = [1, 58, 58 ** 2, 58 ** 3, 58 ** 4, 58 ** 5];

/** The 32 raw bytes as a latin1 string (the filter index's key form), or null when `s` is not such a key. */
export function pubkeyKey58(s: string): string | null {
  if (s.length === 0 || s.length > MAX_CHARS) return null;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 128) return null;
  return pubkeyKey58Bytes(Buffer.from(s, 'latin1'), 0, s.length);
}

/** The same for base58 text held as bytes at src[start, end) (the request buffer, no string made). */
export function pubkeyKey58Bytes(src: Uint8Array, start: number, end: number): string | null {
  const n = end - start;
  if (n === 0 || n > MAX_CHARS) return null;
  let zeros = 0;
  while (zeros < n && src[start + zeros] === 0x31) zeros++;
  limbs.fill(0);
  for (let i = start + zeros; i < end; ) {
    const take = Math.min(5, end - i);
    let carry = 0;
    for (let j = 0; j < take; j++) {
      const c = src[i + j]!;
      const d = c < 128 ? DIGIT[c]! : -1;
      if (d < 0) return null;
      carry = carry * 58 + d;
    }
    i += take;
    const mult = POW58[take]!;
    for (let k = LIMBS - 1; k >= 0; k--) {
      const x = limbs[k]! * mult + carry;
      carry = Math.floor(x / 65536);
      limbs[k] = x - carry * 65536;
    }
    if (carry !== 0) return null; // more than 256 bits
  }
  for (let k = 0; k < LIMBS; k++) {
    out[2 * k] = limbs[k]! >>> 8;
    out[2 * k + 1] = limbs[k]! & 0xff;
  }
  let lz = 0;
  while (lz < KEY_SZ && out[lz] === 0) lz++;
  // bs58 decodes to `zeros` zero bytes followed by the number's own bytes: 32 in all only if lz === zeros.
  if (lz !== zeros) return null;
  return out.toString('latin1');
}
