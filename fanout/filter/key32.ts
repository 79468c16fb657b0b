import { randomInt } from 'node:crypto';

// 32-byte keys kept as bytes, for the filter compiler and index: a full-size filter map carries 48,000 keys,
// and one JS string plus one Map entry per key (made, hashed, and dropped on the next update) was most of an
// update's cost. A list is one byte block; the index hashes the bytes itself.

export const KEY_LEN = 32;

/** A de-duplicated list of keys: key i is bytes[32i, 32i + 32). */
export class KeyList32 {
  constructor(
    readonly bytes: Uint8Array,
    readonly length: number,
    /** hash32 of each key, computed once when the list is compiled, so the index need not hash again. */
    readonly hashes: Int32Array,
  ) {}

  /** Key i as a Buffer view (tests, diagnostics). */
  key(i: number): Buffer {
    return Buffer.from(this.bytes.buffer, this.bytes.byteOffset + i * KEY_LEN, KEY_LEN);
  }
}

// Seeded per process: filter keys are chosen by clients, so a fixed hash would let one craft colliding keys.
const SEED = randomInt(0x7fffffff) | 1;

/** Hash of the 32 bytes at b[o]: all eight words mixed (multiply-xorshift), non-negative. */
export function hash32(b: Uint8Array, o: number): number {
  let h = SEED;
  for (let i = o; i < o + KEY_LEN; i += 4) {
    const w = b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24);
    h = Math.imul(h ^ w, 0x9e3779b1);
    h ^= h >>> 15;
  }
  h = Math.imul(h, 0x85ebca6b);
  return (h ^ (h >>> 13)) & 0x7fffffff;
}

/**
 * hash32 of the 32 bytes at b[o], leaving their eight little-endian words in w[wo, wo + 8): a lookup that finds
 * the key then compares those words with the stored ones (equalWords), not the 32 bytes again — on the matching
 * path every transaction key some filter lists is hashed and compared, a program key of an instruction filter too.
 */
export function hash32Words(b: Uint8Array, o: number, w: Int32Array, wo: number): number {
  let h = SEED;
  for (let i = 0; i < 8; i++) {
    const j = o + 4 * i;
    const x = b[j]! | (b[j + 1]! << 8) | (b[j + 2]! << 16) | (b[j + 3]! << 24);
    w[wo + i] = x;
    h = Math.imul(h ^ x, 0x9e3779b1);
    h ^= h >>> 15;
  }
  h = Math.imul(h, 0x85ebca6b);
  return (h ^ (h >>> 13)) & 0x7fffffff;
}

/** The eight words at a[ao] equal w[0, 8) (words as hash32Words leaves them). */
export function equalWords(a: Int32Array, ao: number, w: Int32Array): boolean {
  for (let i = 0; i < 8; i++) if (a[ao + i] !== w[i]) return false;
  return true;
}

export function equal32(a: Uint8Array, ao: number, b: Uint8Array, bo: number): boolean {
  for (let i = 0; i < KEY_LEN; i++) if (a[ao + i] !== b[bo + i]) return false;
  return true;
}
