// Reed–Solomon erasure coding of a 32:32 FEC set, bit-compatible with the Rust reed-solomon-erasure crate
// (galois_8) that Agave uses: encoding matrix = Vandermonde V (64×32, V[r][c] = r^c) × inverse(top 32×32 of V),
// so rows 0..31 are the identity (data passes through) and rows 32..63 make parity. Any 32 of the 64 shards
// recover the rest: invert the rows of the shards present and multiply. Shard length varies per set (987 B,
// 923 B in resigned sets), so it is a parameter everywhere.

import { OldestFirstMap } from '../../infra/base/oldest-first';
import { gfPow, matInvert, matMul, type Matrix } from './gf256';
import { combine } from './gf256-kernel';

export const DATA_SHARDS = 32;
export const PARITY_SHARDS = 32;
export const TOTAL_SHARDS = DATA_SHARDS + PARITY_SHARDS;

function buildEncodingMatrix(): Matrix {
  const v: Matrix = Array.from({ length: TOTAL_SHARDS }, (_, r) => Uint8Array.from({ length: DATA_SHARDS }, (_, c) => gfPow(r, c)));
  const topInv = matInvert(v.slice(0, DATA_SHARDS));
  if (topInv === null) throw new Error('Vandermonde top block is singular'); // cannot happen: distinct rows
  return matMul(v, topInv);
}

/** 64×32; row r gives shard r as a combination of the 32 data shards. */
export const ENCODING_MATRIX: readonly Uint8Array[] = buildEncodingMatrix();

const PARITY_ROWS = ENCODING_MATRIX.slice(DATA_SHARDS);

/** parity[r] = Σ_c M[32 + r][c] · data[c] over the first `len` bytes of each shard. */
export function encodeParity(data: readonly Uint8Array[], parity: readonly Uint8Array[], len: number, scalar = false): void {
  if (data.length !== DATA_SHARDS || parity.length !== PARITY_SHARDS) throw new RangeError('encodeParity: 32 data and 32 parity shards');
  combine(data, PARITY_ROWS, parity, len, scalar);
}

// Decode rows keyed by which shards were used. The brief of the crate is "invert the 32 rows present"; only
// the rows of the missing data shards are ever needed, and they have a closed form. With the present data
// columns P, the missing ones M and the k parity rows used p (k = |M|), the 32×32 submatrix is
//     S = | I        0    |        and        S⁻¹ = | I               0   |
//         | E[p][P]  E[p][M] |                      | A⁻¹·E[p][P]     A⁻¹ |   with A = E[p][M]  (k×k)
// (minus is plus in GF(2^8)). So a k×k inversion replaces the 32×32 one: shuffled turbine arrival makes
// nearly every pattern new, and this is what keeps a cache miss cheap. Patterns that do repeat hit the cache.
const DECODE_CACHE_MAX = 2048;
const decodeCache = new OldestFirstMap<string, Matrix>();

function decodeRows(present: readonly number[], parityRows: readonly number[], missing: readonly number[]): Matrix {
  const a = parityRows.map((p) => Uint8Array.from(missing, (m) => ENCODING_MATRIX[p]![m]!));
  const aInv = matInvert(a);
  // Every k×k block of the parity rows is invertible: any 32 shards determine the data (MDS property).
  if (aInv === null) throw new Error('reed-solomon: singular submatrix');
  const b = present.length === 0 ? aInv.map(() => new Uint8Array(0)) : matMul(aInv, parityRows.map((p) => Uint8Array.from(present, (c) => ENCODING_MATRIX[p]![c]!)));
  return aInv.map((row, i) => {
    const out = new Uint8Array(present.length + row.length);
    out.set(b[i]!, 0);
    out.set(row, present.length);
    return out;
  });
}

/**
 * Rebuilds the missing DATA shards (parity is not needed to decode). `shards` has 64 slots, undefined where
 * missing; each rebuilt shard is written into `alloc(i)` (at least `len` bytes) and stored in shards[i].
 * Uses every present data shard and the first present parity shards. Returns how many were rebuilt, or -1
 * when fewer than 32 shards are present.
 */
export function recoverData(shards: Array<Uint8Array | undefined>, len: number, alloc: (dataIndex: number) => Uint8Array, scalar = false): number {
  const present: number[] = [];
  const missing: number[] = [];
  let dataMask = 0;
  for (let i = 0; i < DATA_SHARDS; i++) {
    if (shards[i] === undefined) missing.push(i);
    else {
      present.push(i);
      dataMask |= 1 << i;
    }
  }
  if (missing.length === 0) return 0;
  const parityRows: number[] = [];
  let parityMask = 0;
  for (let i = DATA_SHARDS; i < TOTAL_SHARDS && parityRows.length < missing.length; i++) {
    if (shards[i] === undefined) continue;
    parityRows.push(i);
    parityMask |= 1 << (i - DATA_SHARDS);
  }
  if (parityRows.length < missing.length) return -1;
  const key = `${dataMask >>> 0}:${parityMask >>> 0}`;
  let dec = decodeCache.get(key);
  if (dec === undefined) {
    dec = decodeRows(present, parityRows, missing);
    if (decodeCache.size >= DECODE_CACHE_MAX) decodeCache.deleteOldest();
    decodeCache.set(key, dec);
  }
  const inputs = [...present, ...parityRows].map((i) => shards[i]!);
  const outputs = missing.map((i) => alloc(i));
  combine(inputs, dec, outputs, len, scalar);
  missing.forEach((i, k) => {
    shards[i] = outputs[k];
  });
  return missing.length;
}
