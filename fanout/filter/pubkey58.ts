// Base58 → 32-byte public key, for the filter compiler: a full-size filter map carries 48,000 keys, and the
// generic decoder (bs58) spends ~2 µs on each. This one only accepts what decodes to exactly 32 bytes, so its
// number fits 16 limbs of 16 bits and it takes five digits per chunk (58^5 < 2^30). Anything it refuses goes
// to bs58, which gives the precise error; anything it accepts, bs58 would decode to the same bytes (leading
// '1's are leading zero bytes, then the number).

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
/** Byte → digit, -1 for any byte not in the alphabet (non-ASCII included). */
const DIGIT256 = new Int8Array(256).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DIGIT256[ALPHABET.charCodeAt(i)] = i;

const KEY_SZ = 32;
const LIMBS = 16;
/** Longest base58 text of 32 bytes (all leading zeros are '1's, so 32 ones is also ≤ 44). */
const MAX_CHARS = 44;
/** Per-call accumulator (reused: no allocation per key). */
const limbs = new Float64Array(LIMBS);

/** 58^(5j) in 16-bit limbs, least significant first (j = 0..8: a 44-digit text is 9 chunks of 5 digits). */
const CHUNKS = 9;
const POW_LIMBS = new Float64Array(CHUNKS * LIMBS);
/** Limbs of 58^(5j) up to its highest non-zero one. */
const POW_LEN = new Int32Array(CHUNKS);
{
  let p = 1n;
  for (let j = 0; j < CHUNKS; j++, p *= 58n ** 5n) {
    for (let k = 0; k < LIMBS; k++) {
      const limb = Number((p >> BigInt(16 * k)) & 0xffffn);
      POW_LIMBS[j * LIMBS + k] = limb;
      if (limb !== 0) POW_LEN[j] = k + 1;
    }
  }
}

/**
 * Decodes base58 text at src[start, end) into dst[dstOff, dstOff + 32), no allocation; false (dst then holds
 * garbage) when the text is not a 32-byte key. The compiler writes keys straight into a list's byte block.
 *
 * The number is Σ chunk_j · 58^(5j) over 5-digit chunks from the right: every product goes into its limb
 * independently (chunk < 2^29.3, limb < 2^16, nine terms: < 2^48.5, exact in a double) and one carry pass
 * at the end normalises. Multiplying limb by limb per chunk (Horner) made every step wait for the carry
 * before it: 2× slower.
 */
export function decode58Into(src: Uint8Array, start: number, end: number, dst: Uint8Array, dstOff: number): boolean {
  const n = end - start;
  if (n === 0 || n > MAX_CHARS) return false;
  const acc = limbs;
  acc.fill(0);
  // Leading '1's are zero digits: they add nothing to the number and are counted for the check below.
  for (let i = end, j = 0; i > start; j++) {
    const s = i - 5 > start ? i - 5 : start;
    let v = 0;
    if (i - s === 5) {
      // Five digits as independent products (58^4 · 57 + … < 58^5 < 2^31: int32), not a chain of v·58 + d.
      const d0 = DIGIT256[src[s]!]!;
      const d1 = DIGIT256[src[s + 1]!]!;
      const d2 = DIGIT256[src[s + 2]!]!;
      const d3 = DIGIT256[src[s + 3]!]!;
      const d4 = DIGIT256[src[s + 4]!]!;
      if ((d0 | d1 | d2 | d3 | d4) < 0) return false;
      v = d0 * 11316496 + d1 * 195112 + d2 * 3364 + d3 * 58 + d4;
    } else {
      for (let q = s; q < i; q++) {
        const d = DIGIT256[src[q]!]!;
        if (d < 0) return false;
        v = v * 58 + d;
      }
    }
    i = s;
    if (v !== 0) {
      const base = j * LIMBS;
      const len = POW_LEN[j]!;
      for (let k = 0; k < len; k++) acc[k] += v * POW_LIMBS[base + k]!;
    }
  }
  let carry = 0;
  for (let k = 0; k < LIMBS; k++) {
    const x = acc[k]! + carry;
    carry = Math.floor(x / 65536);
    const limb = x - carry * 65536;
    dst[dstOff + KEY_SZ - 1 - 2 * k] = limb & 0xff;
    dst[dstOff + KEY_SZ - 2 - 2 * k] = limb >>> 8;
  }
  if (carry !== 0) return false; // more than 256 bits
  let zeros = 0;
  while (zeros < n && src[start + zeros] === 0x31) zeros++;
  let lz = 0;
  while (lz < KEY_SZ && dst[dstOff + lz] === 0) lz++;
  // bs58 decodes to `zeros` zero bytes followed by the number's own bytes: 32 in all only if lz === zeros.
  return lz === zeros;
}
