import { DATA_FLAGS_OFF, DATA_SIZE_OFF, FEC_SET_INDEX_OFF, INDEX_OFF, SLOT_OFF, VARIANT_OFF, VERSION_OFF, DATA_PARENT_OFFSET_OFF, CODE_NUM_DATA_OFF, CODE_NUM_CODING_OFF, CODE_POSITION_OFF } from '../../../ingest/shred/layout';

// Packet mutations for the fuzz tests, driven by a small seeded PRNG so a failing seed replays exactly.
// Field overwrites target what the parser and resolver branch on; values are biased towards the edges
// (just valid, just invalid, far away) rather than uniform noise, which the parser would reject at once.

export class Rng {
  constructor(private s: number) {}
  /** mulberry32 */
  next(): number {
    this.s = (this.s + 0x6d2b79f5) | 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  bytes(n: number): Buffer {
    const b = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i++) b[i] = this.int(256);
    return b;
  }
}

const VARIANTS = [0x96, 0xb6, 0x66, 0x76, 0x95, 0x86, 0x46, 0xa5, 0x5a, 0x00, 0xff, 0x97, 0x65];
const FLAGS = [0x00, 0x40, 0xc0, 0x80, 0x3f, 0x7f, 0xff, 0x41];

function u32Near(r: Rng, base: number): number {
  const choices = [0, 1, 31, 32, 33, 0x7fff, 0x8000, 0xffffffff, base, base + 1, base + 32, base - 32, r.int(2 ** 32)];
  return r.pick(choices) >>> 0;
}

/** One mutated copy of `src` (or, sometimes, of random bytes). */
export function mutate(r: Rng, src: Buffer): Buffer {
  const kind = r.int(12);
  if (kind === 0) return r.bytes(r.int(1300));
  const b = Buffer.from(src);
  const fields = 1 + r.int(3);
  for (let f = 0; f < fields; f++) {
    switch (kind === 1 ? 1 : r.int(11)) {
      case 0: // bit flips
        for (let i = 1 + r.int(8); i > 0; i--) b[r.int(b.length)]! ^= 1 << r.int(8);
        break;
      case 1: // truncation
        return b.subarray(0, r.int(b.length + 1));
      case 2: // extension (a repair nonce, or junk)
        return Buffer.concat([b, r.bytes(1 + r.int(64))]);
      case 3:
        b[VARIANT_OFF] = r.pick(VARIANTS);
        break;
      case 4: {
        const slot = b.readBigUInt64LE(SLOT_OFF);
        const choices = [0n, 1n, slot + 1n, slot - 1n, slot + 600n, slot + 4n, 2n ** 53n, 2n ** 64n - 1n, BigInt(r.int(2 ** 32))];
        b.writeBigUInt64LE(BigInt.asUintN(64, r.pick(choices)), SLOT_OFF);
        break;
      }
      case 5:
        b.writeUInt32LE(u32Near(r, b.readUInt32LE(INDEX_OFF)), INDEX_OFF);
        break;
      case 6:
        b.writeUInt32LE(u32Near(r, b.readUInt32LE(FEC_SET_INDEX_OFF)), FEC_SET_INDEX_OFF);
        break;
      case 7: // data size, or code num_data/num_coding/position (same offsets region)
        if (r.int(2) === 0) b.writeUInt16LE(r.pick([0, 87, 88, 89, 900, 987, 1051, 1052, 0xffff, r.int(65536)]), DATA_SIZE_OFF);
        else b.writeUInt16LE(r.pick([0, 31, 32, 33, 64, 0xffff]), r.pick([CODE_NUM_DATA_OFF, CODE_NUM_CODING_OFF, CODE_POSITION_OFF]));
        break;
      case 8:
        b[DATA_FLAGS_OFF] = r.pick(FLAGS);
        break;
      case 9:
        b.writeUInt16LE(r.pick([0, 1, 2, 0xffff, r.int(65536)]), r.int(2) === 0 ? DATA_PARENT_OFFSET_OFF : VERSION_OFF);
        break;
      default: // a random byte anywhere in the payload / proof / signature
        b[r.int(b.length)] = r.int(256);
    }
  }
  return b;
}
