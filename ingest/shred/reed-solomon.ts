// Reed–Solomon erasure coding of a 32:32 FEC set, bit-compatible with the Rust reed-solomon-erasure crate
// (galois_8) that Agave uses: encoding matrix = Vandermonde V (64×32, V[r][c] = r^c) × inverse(top 32×32 of V),
// so rows 0..31 are the identity (data passes through) and rows 32..63 make parity. Any 32 of the 64 shards
// recover the rest: invert the rows of the shards present and multiply. Shard length varies per set (987 B,
// 923 B in resigned sets), so it is a parameter everywhere.

import { matInvert, matMul, mulAddInto, gfPow, type Matrix } from './gf256';

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

/** parity[r] = Σ_c M[32 + r][c] · data[c] over the first `len` bytes of each shard. */
export function encodeParity(data: readonly Uint8Array[], parity: readonly Uint8Array[], len: number): void {
  if (data.length !== DATA_SHARDS || parity.length !== PARITY_SHARDS) throw new RangeError('encodeParity: 32 data and 32 parity shards');
  for (let r = 0; r < PARITY_SHARDS; r++) {
    const out = parity[r]!;
    out.fill(0, 0, len);
    const row = ENCODING_MATRIX[DATA_SHARDS + r]!;
    for (let c = 0; c < DATA_SHARDS; c++) mulAddInto(out, data[c]!, row[c]!, len);
  }
}

// Decode matrices keyed by which 32 shards were used. Loss patterns repeat (the same few positions go missing
// on a given path), and a 32×32 inversion costs far more than a lookup.
const DECODE_CACHE_MAX = 2048;
const decodeCache = new Map<string, Matrix>();

function decodeMatrix(rows: readonly number[], key: string): Matrix {
  let m = decodeCache.get(key);
  if (m === undefined) {
    const inv = matInvert(rows.map((r) => ENCODING_MATRIX[r]!));
    // Every 32 rows of a systematic Vandermonde-derived matrix are independent (the MDS property).
    if (inv === null) throw new Error('reed-solomon: singular submatrix');
    m = inv;
    if (decodeCache.size >= DECODE_CACHE_MAX) decodeCache.delete(decodeCache.keys().next().value!);
    decodeCache.set(key, m);
  }
  return m;
}

/**
 * Rebuilds the missing DATA shards (parity is not needed to decode). `shards` has 64 slots, undefined where
 * missing; each rebuilt shard is written into `alloc(i)` (at least `len` bytes) and stored in shards[i].
 * Returns how many were rebuilt, or -1 when fewer than 32 shards are present.
 */
export function recoverData(shards: Array<Uint8Array | undefined>, len: number, alloc: (dataIndex: number) => Uint8Array): number {
  const rows: number[] = [];
  let dataMask = 0;
  let parityMask = 0;
  for (let i = 0; i < TOTAL_SHARDS && rows.length < DATA_SHARDS; i++) {
    if (shards[i] === undefined) continue;
    rows.push(i);
    if (i < DATA_SHARDS) dataMask |= 1 << i;
    else parityMask |= 1 << (i - DATA_SHARDS);
  }
  if (rows.length < DATA_SHARDS) return -1;
  if (rows[DATA_SHARDS - 1] === DATA_SHARDS - 1) return 0; // all data present
  const dec = decodeMatrix(rows, `${dataMask >>> 0}:${parityMask >>> 0}`);
  let rebuilt = 0;
  for (let i = 0; i < DATA_SHARDS; i++) {
    if (shards[i] !== undefined) continue;
    const out = alloc(i);
    out.fill(0, 0, len);
    const coefs = dec[i]!;
    for (let j = 0; j < DATA_SHARDS; j++) mulAddInto(out, shards[rows[j]!]!, coefs[j]!, len);
    shards[i] = out;
    rebuilt++;
  }
  return rebuilt;
}
