// The one hot loop of Reed–Solomon: outputs[r] = Σ_j rows[r][j] · inputs[j], byte-wise in GF(2^8).
//
// Why WebAssembly: recovery is the common case, not the exception. Turbine delivers a set's shreds in no
// particular order, so when the 32nd distinct shard arrives about half the data shreds are still missing
// (14–18 of 32 in every set of the testnet capture), i.e. ~16 × 32 × 987 ≈ 500 K multiply-adds per set. The
// scalar loop (one 256-entry table lookup per byte) costs ~1.4 ns a byte, ~8 µs per received shred: more
// than the whole per-shred budget. WASM SIMD does 16 bytes per step with the split-nibble table trick
// (c·x = c·(x & 15) ⊕ c·(x >> 4 << 4), each half one i8x16.swizzle over a 16-entry table), ~15× faster.
//
// The module is assembled below from a readable listing (no toolchain, no binary blob). Where WebAssembly
// SIMD is unavailable the scalar loop is used; tests check that both agree.

import { MUL, mulAddInto } from './gf256';

const STRIDE = 1024; // bytes per shard slot in wasm memory (shards are ≤ 987 B)
const MAX_SHARDS = 32;
const IN_BASE = 0;
const OUT_BASE = IN_BASE + MAX_SHARDS * STRIDE;
const TAB_BASE = OUT_BASE + MAX_SHARDS * STRIDE; // 256 coefficients × (lo[16] ‖ hi[16])
const COEF_BASE = TAB_BASE + 256 * 32; // one row of ≤ 32 coefficients
const PAGES = 2;

// --- a tiny WebAssembly assembler: just what mulRow needs ---------------------------------------------------
const I32 = 0x7f;
const V128 = 0x7b;
const op = {
  block: [0x02, 0x40], loop: [0x03, 0x40], end: [0x0b], br: [0x0c], brIf: [0x0d],
  get: [0x20], set: [0x21], i32Const: [0x41],
  i32Eqz: [0x45], i32GeU: [0x4f], i32LtU: [0x49], i32Add: [0x6a], i32Shl: [0x74],
  load8u: [0x2d, 0x00, 0x00],
  v128Load: [0xfd, 0x00, 0x00, 0x00], v128Store: [0xfd, 0x0b, 0x00, 0x00],
  swizzle: [0xfd, 0x0e], splat8: [0xfd, 0x0f], and: [0xfd, 0x4e], xor: [0xfd, 0x51], shrU8: [0xfd, 0x6d],
};
function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}
function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) return [...out, b];
    out.push(b | 0x80);
  }
}
const vec = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()];
const section = (id: number, body: number[]): number[] => [id, ...uleb(body.length), ...body];
const str = (s: string): number[] => vec([...Buffer.from(s)].map((b) => [b]));

// mulRow(out, len, coefs, nIn, inBase): out[0..len) ^= Σ_{j<nIn} coefs[j] · in_j, in_j = inBase + j·STRIDE.
// len is a multiple of 16 and > 0.
const [OUT, LEN, COEFS, NIN, INB, J, INP, O, END, C, LO, HI, MASK, X] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13];
const get = (l: number): number[] => [...op.get, l];
const set = (l: number): number[] => [...op.set, l];
const i32c = (n: number): number[] => [...op.i32Const, ...sleb(n)];
const body = [
  ...i32c(15), ...op.splat8, ...set(MASK),
  ...get(OUT), ...get(LEN), ...op.i32Add, ...set(END),
  ...i32c(0), ...set(J),
  ...op.block, ...op.loop, // $rows: label 0 = loop, 1 = block
  ...get(J), ...get(NIN), ...op.i32GeU, ...op.brIf, 1,
  ...get(COEFS), ...get(J), ...op.i32Add, ...op.load8u, ...set(C),
  ...op.block, // $skip a zero coefficient
  ...get(C), ...op.i32Eqz, ...op.brIf, 0,
  ...i32c(TAB_BASE), ...get(C), ...i32c(5), ...op.i32Shl, ...op.i32Add, ...set(INP),
  ...get(INP), ...op.v128Load, ...set(LO),
  ...get(INP), ...i32c(16), ...op.i32Add, ...op.v128Load, ...set(HI),
  ...get(INB), ...get(J), ...i32c(10), ...op.i32Shl, ...op.i32Add, ...set(INP), // STRIDE = 1 << 10
  ...get(OUT), ...set(O),
  ...op.loop, // $bytes
  ...get(INP), ...op.v128Load, ...set(X),
  ...get(O), // store address
  ...get(O), ...op.v128Load,
  ...get(LO), ...get(X), ...get(MASK), ...op.and, ...op.swizzle,
  ...get(HI), ...get(X), ...i32c(4), ...op.shrU8, ...op.swizzle,
  ...op.xor, ...op.xor, ...op.v128Store,
  ...get(INP), ...i32c(16), ...op.i32Add, ...set(INP),
  ...get(O), ...i32c(16), ...op.i32Add, ...set(O),
  ...get(O), ...get(END), ...op.i32LtU, ...op.brIf, 0,
  ...op.end, // $bytes
  ...op.end, // $skip
  ...get(J), ...i32c(1), ...op.i32Add, ...set(J),
  ...op.br, 0,
  ...op.end, ...op.end, // $rows, block
  ...op.end, // function
];
const locals = vec([[5, I32], [4, V128]]); // J INP O END C · LO HI MASK X
const func = [...locals, ...body];
const moduleBytes = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  ...section(1, vec([[0x60, ...vec([[I32], [I32], [I32], [I32], [I32]]), 0x00]])),
  ...section(3, vec([[0x00]])),
  ...section(5, vec([[0x00, ...uleb(PAGES)]])),
  ...section(7, vec([[...str('mem'), 0x02, 0x00], [...str('mulRow'), 0x00, 0x00]])),
  ...section(10, vec([[...uleb(func.length), ...func]])),
]);

// The few WebAssembly members used; the project's lib settings (ES2022, no DOM) do not declare them.
interface WasmGlobal {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: Record<string, unknown> };
}
const wasm = (globalThis as { WebAssembly?: WasmGlobal }).WebAssembly;

interface Simd {
  mem: Uint8Array;
  mulRow: (out: number, len: number, coefs: number, nIn: number, inBase: number) => void;
}

function instantiate(): Simd | null {
  if (process.env.MERIDIAN_RS_SCALAR === '1' || wasm === undefined || !wasm.validate(moduleBytes)) return null;
  const inst = new wasm.Instance(new wasm.Module(moduleBytes));
  const mem = new Uint8Array((inst.exports.mem as { buffer: ArrayBuffer }).buffer);
  for (let c = 0; c < 256; c++) {
    for (let n = 0; n < 16; n++) {
      mem[TAB_BASE + c * 32 + n] = MUL[(c << 8) | n]!;
      mem[TAB_BASE + c * 32 + 16 + n] = MUL[(c << 8) | (n << 4)]!;
    }
  }
  return { mem, mulRow: inst.exports.mulRow as Simd['mulRow'] };
}

const simd = instantiate();
export const GF_KERNEL: 'wasm-simd' | 'scalar' = simd === null ? 'scalar' : 'wasm-simd';

function combineScalar(inputs: readonly Uint8Array[], rows: readonly Uint8Array[], outputs: readonly Uint8Array[], len: number): void {
  for (let r = 0; r < rows.length; r++) {
    const out = outputs[r]!;
    const row = rows[r]!;
    out.fill(0, 0, len);
    for (let j = 0; j < inputs.length; j++) mulAddInto(out, inputs[j]!, row[j]!, len);
  }
}

/** outputs[r][0..len) = Σ_j rows[r][j] · inputs[j][0..len). At most 32 inputs and 32 outputs, len ≤ 1024. */
export function combine(inputs: readonly Uint8Array[], rows: readonly Uint8Array[], outputs: readonly Uint8Array[], len: number, scalar = false): void {
  if (inputs.length > MAX_SHARDS || rows.length > MAX_SHARDS || len > STRIDE) throw new RangeError('combine: at most 32 shards of 1024 bytes');
  if (simd === null || scalar) {
    combineScalar(inputs, rows, outputs, len);
    return;
  }
  const { mem, mulRow } = simd;
  const len16 = (len + 15) & ~15;
  for (let j = 0; j < inputs.length; j++) mem.set(inputs[j]!.subarray(0, len), IN_BASE + j * STRIDE);
  for (let r = 0; r < rows.length; r++) {
    const out = OUT_BASE + r * STRIDE;
    mem.fill(0, out, out + len16);
    mem.set(rows[r]!.subarray(0, inputs.length), COEF_BASE);
    mulRow(out, len16, COEF_BASE, inputs.length, IN_BASE);
    outputs[r]!.set(mem.subarray(out, out + len));
  }
}
