// GF(2^8) as the Rust reed-solomon-erasure crate's galois_8 builds it: primitive polynomial
// x^8+x^4+x^3+x^2+1 (0x11D), generator 2. Log/exp tables for scalar work and one 64 KiB product table
// (MUL[a << 8 | b] = a·b) for the byte loops: a coefficient's row is a 256-entry table, so the inner loop is
// one lookup and one xor per byte, no function call.

export const GF_POLY = 0x11d;

export const EXP = new Uint8Array(510); // doubled so LOG[a] + LOG[b] never needs a modulo
export const LOG = new Uint8Array(256); // LOG[0] is unused
export const MUL = new Uint8Array(65536);

{
  let x = 1;
  for (let i = 0; i < 255; i++) {
    EXP[i] = x;
    LOG[x] = i;
    x <<= 1;
    if (x & 0x100) x ^= GF_POLY;
  }
  for (let i = 255; i < EXP.length; i++) EXP[i] = EXP[i - 255]!;
  for (let a = 1; a < 256; a++) for (let b = 1; b < 256; b++) MUL[(a << 8) | b] = EXP[LOG[a]! + LOG[b]!]!;
}

export function gfMul(a: number, b: number): number {
  return MUL[(a << 8) | b]!;
}

export function gfInv(a: number): number {
  if (a === 0) throw new RangeError('GF(256): 0 has no inverse');
  return EXP[255 - LOG[a]!]!;
}

/** a^n in the field, with galois_8's convention 0^0 = 1. */
export function gfPow(a: number, n: number): number {
  if (n === 0) return 1;
  if (a === 0) return 0;
  return EXP[(LOG[a]! * n) % 255]!;
}

/** Row-major square or rectangular matrix of field elements. */
export type Matrix = Uint8Array[];

export function matMul(a: Matrix, b: Matrix): Matrix {
  const n = b[0]!.length;
  return a.map((row) => {
    const out = new Uint8Array(n);
    for (let k = 0; k < row.length; k++) {
      const c = row[k]!;
      if (c === 0) continue;
      const bk = b[k]!;
      for (let j = 0; j < n; j++) out[j] ^= MUL[(c << 8) | bk[j]!]!;
    }
    return out;
  });
}

/** Gauss–Jordan inverse of a square matrix; null when singular. */
export function matInvert(m: Matrix): Matrix | null {
  const n = m.length;
  const a = m.map((row) => Uint8Array.from(row));
  const inv = Array.from({ length: n }, (_, i) => {
    const r = new Uint8Array(n);
    r[i] = 1;
    return r;
  });
  for (let col = 0; col < n; col++) {
    let pivot = col;
    while (pivot < n && a[pivot]![col] === 0) pivot++;
    if (pivot === n) return null;
    if (pivot !== col) {
      [a[col], a[pivot]] = [a[pivot]!, a[col]!];
      [inv[col], inv[pivot]] = [inv[pivot]!, inv[col]!];
    }
    const ac = a[col]!;
    const ic = inv[col]!;
    const scale = gfInv(ac[col]!);
    for (let j = 0; j < n; j++) {
      ac[j] = gfMul(ac[j]!, scale);
      ic[j] = gfMul(ic[j]!, scale);
    }
    for (let r = 0; r < n; r++) {
      const f = a[r]![col]!;
      if (r === col || f === 0) continue;
      const ar = a[r]!;
      const ir = inv[r]!;
      for (let j = 0; j < n; j++) {
        ar[j] ^= gfMul(f, ac[j]!);
        ir[j] ^= gfMul(f, ic[j]!);
      }
    }
  }
  return inv;
}

/** out[0..len) ^= coef · inp[0..len): the hot loop of both encoding and recovery. */
export function mulAddInto(out: Uint8Array, inp: Uint8Array, coef: number, len: number): void {
  if (coef === 0) return;
  if (coef === 1) {
    for (let k = 0; k < len; k++) out[k] ^= inp[k]!;
    return;
  }
  const base = coef << 8;
  const mul = MUL;
  for (let k = 0; k < len; k++) out[k] ^= mul[base | inp[k]!]!;
}
