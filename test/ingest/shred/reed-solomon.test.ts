import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fc from 'fast-check';
import { EXP, GF_POLY, LOG, MUL, gfInv, gfMul } from '../../../ingest/shred/gf256';
import { GF_KERNEL, combine } from '../../../ingest/shred/gf256-kernel';
import { parseShred, type ShredView } from '../../../ingest/shred/parse';
import { ENCODING_MATRIX, encodeParity, recoverData } from '../../../ingest/shred/reed-solomon';
import { demo } from './support';

/** Carry-less multiply with reduction by 0x11D: the definition the tables must agree with. */
function slowMul(a: number, b: number): number {
  let r = 0;
  while (b !== 0) {
    if (b & 1) r ^= a;
    a <<= 1;
    if (a & 0x100) a ^= GF_POLY;
    b >>= 1;
  }
  return r;
}

function randomShards(n: number, len: number): Buffer[] {
  return Array.from({ length: n }, () => crypto.randomBytes(len));
}

describe('reed-solomon', () => {
  it('GF(2^8) tables agree with carry-less multiplication mod 0x11D, generator 2', () => {
    assert.equal(EXP[0], 1);
    assert.equal(EXP[1], 2);
    assert.equal(LOG[2], 1);
    for (let a = 0; a < 256; a++) for (let b = 0; b < 256; b++) assert.equal(MUL[(a << 8) | b], slowMul(a, b));
    for (let a = 1; a < 256; a++) assert.equal(gfMul(a, gfInv(a)), 1);
  });

  it('the encoding matrix is systematic: rows 0..31 are the identity', () => {
    assert.equal(ENCODING_MATRIX.length, 64);
    for (let r = 0; r < 32; r++) for (let c = 0; c < 32; c++) assert.equal(ENCODING_MATRIX[r]![c], r === c ? 1 : 0);
  });

  it('reproduces the reference parity of every demo set (chained 987 B and resigned 923 B shards)', () => {
    const vs = demo().packets.map((p) => parseShred(p) as ShredView);
    for (let fec = 0; fec < 256; fec += 32) {
      const set = vs.filter((v) => v.fecSetIndex === fec).sort((a, b) => a.leafIndex - b.leafIndex);
      const len = set[0]!.layout.shardSz;
      const data = set.slice(0, 32).map((v) => v.buf.subarray(v.layout.shardOff, v.layout.shardOff + len));
      const want = set.slice(32).map((v) => v.buf.subarray(v.layout.shardOff, v.layout.shardOff + len));
      for (const scalar of [false, true]) {
        const parity = Array.from({ length: 32 }, () => Buffer.alloc(len));
        encodeParity(data, parity, len, scalar);
        parity.forEach((p, i) => assert.ok(p.equals(want[i]!), `fec ${fec} parity ${i} (${scalar ? 'scalar' : GF_KERNEL})`));
      }
    }
  });

  it(`the ${GF_KERNEL} kernel agrees with the scalar loop`, () => {
    for (const len of [1, 15, 16, 17, 923, 987, 1024]) {
      const ins = randomShards(32, len);
      const rows = randomShards(20, 32);
      const a = rows.map(() => Buffer.alloc(len));
      const b = rows.map(() => Buffer.alloc(len));
      combine(ins, rows, a, len);
      combine(ins, rows, b, len, true);
      a.forEach((x, i) => assert.ok(x.equals(b[i]!), `len ${len} row ${i}`));
    }
  });

  it('recovers the data from any 32 of 64 shards (random erasure patterns)', () => {
    fc.assert(
      fc.property(
        fc.shuffledSubarray([...Array(64).keys()], { minLength: 32, maxLength: 64 }),
        fc.constantFrom(987, 923, 1, 33),
        fc.boolean(),
        (keep, len, scalar) => {
          const data = randomShards(32, len);
          const parity = randomShards(32, len);
          encodeParity(data, parity, len);
          const kept = new Set(keep);
          const shards: Array<Uint8Array | undefined> = [...data, ...parity].map((s, i) => (kept.has(i) ? s : undefined));
          const missing = data.filter((_, i) => !kept.has(i)).length;
          const n = recoverData(shards, len, () => Buffer.alloc(len), scalar);
          assert.equal(n, missing);
          for (let i = 0; i < 32; i++) assert.ok(Buffer.from(shards[i]!).equals(data[i]!), `data ${i}`);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('refuses with fewer than 32 shards', () => {
    const data = randomShards(32, 64);
    const parity = randomShards(32, 64);
    encodeParity(data, parity, 64);
    const shards: Array<Uint8Array | undefined> = [...data.slice(0, 20), ...Array<undefined>(12), ...parity.slice(0, 11), ...Array<undefined>(21)];
    assert.equal(shards.length, 64);
    assert.equal(recoverData(shards, 64, () => Buffer.alloc(64)), -1);
    assert.equal(shards[25], undefined);
  });
});
