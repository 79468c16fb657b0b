import assert from 'node:assert/strict';
import { RecentKeys } from '../../fanout/dedupe';

// RecentKeys against the plainest model of "seen among the last `window` keys": an array of the last
// `window` first sightings, searched linearly.

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return s / 2 ** 32;
  };
}

describe('fanout dedupe: RecentKeys', () => {
  it('agrees with a model window on random keys with many repeats, short, signature-sized and long', () => {
    for (const window of [1, 2, 3, 7, 64, 1000]) {
      const r = rng(window);
      const d = new RecentKeys(window);
      const model: string[] = [];
      // A small pool so that keys repeat both inside and just outside the window; keys differ in one byte.
      const pool: Buffer[] = [];
      for (let i = 0; i < window * 3 + 5; i++) {
        const len = [8, 64, 64, 64, 65, 100][i % 6]!;
        const k = Buffer.alloc(len, 0x5a);
        k.writeUInt32LE(i, len - 4);
        pool.push(k);
      }
      for (let step = 0; step < 20_000; step++) {
        const k = pool[Math.floor(r() * pool.length)]!;
        const s = k.toString('hex');
        const expect = !model.includes(s);
        assert.equal(d.firstSeen(k), expect, `window ${window} step ${step}`);
        if (expect) {
          model.push(s);
          if (model.length > window) model.shift();
        }
      }
    }
  });

  it('a view into a larger buffer is read at its own offset and length', () => {
    const d = new RecentKeys(4);
    const big = Buffer.alloc(200, 7);
    big.write('signature-one', 10);
    assert.equal(d.firstSeen(big.subarray(10, 74)), true);
    assert.equal(d.firstSeen(Buffer.from(big.subarray(10, 74))), false);
    assert.equal(d.firstSeen(big.subarray(11, 75)), true);
    assert.equal(d.size, 2);
  });

  it('stays exact when the table wraps many times (eviction keeps probe chains intact)', () => {
    const d = new RecentKeys(50);
    for (let i = 0; i < 100_000; i++) {
      const k = Buffer.alloc(64);
      k.writeUInt32BE(i, 0);
      assert.equal(d.firstSeen(k), true);
      if (i >= 49) {
        const prev = Buffer.alloc(64);
        prev.writeUInt32BE(i - 1 - (i % 49), 0); // one of the last 50
        assert.equal(d.firstSeen(prev), false, `key ${i - 1 - (i % 49)} at ${i}`);
      }
    }
  });
});
