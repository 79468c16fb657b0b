import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { publicKeyFromSeed } from '../../../ingest/shred/ed25519';
import { FecResolver } from '../../../ingest/shred/fec-resolver';
import { fixedLeader } from '../../../ingest/shred/leader-keys';
import { parseShred } from '../../../ingest/shred/parse';
import { planSets, shredBatch, shredEntries } from '../../../ingest/shred/shredder';
import { demo } from './support';

describe('shredder', () => {
  const d = demo();

  it('derives the demo public key from its seed', () => {
    assert.ok(publicKeyFromSeed(d.seed).equals(d.publicKey));
  });

  it('reproduces demo-shreds.pcap byte for byte from the entries and the key', () => {
    const out = shredEntries(d.entries, { slot: 0, parentOffset: 0, shredVersion: d.shredVersion, fecSetIndexStart: 0, chainedRoot: d.chainedRoot, leaderSeed32: d.seed, lastInSlot: true });
    assert.equal(out.length, d.packets.length);
    const differing = out.map((b, i) => (b.equals(d.packets[i]!) ? -1 : i)).filter((i) => i >= 0);
    assert.deepEqual(differing, []);
  });

  it("splits a batch like the reference: full chained sets, padding in the last chained one, a full resigned set last", () => {
    const C = 30_816;
    const R = 28_768;
    const plan = (n: number, last: boolean): string => planSets(n, last).map((p) => `${p.resigned ? 'R' : 'C'}${p.bytes}`).join(' ');
    assert.equal(plan(0, false), 'C0');
    assert.equal(plan(C, false), `C${C}`);
    assert.equal(plan(C + 1, false), `C${C} C1`);
    assert.equal(plan(1000, true), 'R1000');
    assert.equal(plan(R, true), `R${R}`);
    assert.equal(plan(R + 1, true), `C1 R${R}`);
    assert.equal(plan(237_320, true), `C${C} C${C} C${C} C${C} C${C} C${C} C23656 R${R}`, 'the demo batch');
  });

  it('shreds a mid-slot batch: chained only, DATA_COMPLETE on the last shred, reference tick everywhere', () => {
    const entries = crypto.randomBytes(70_000);
    const b = shredBatch(entries, { slot: 77, parentOffset: 2, shredVersion: 9, fecSetIndexStart: 64, chainedRoot: Buffer.alloc(32, 1), leaderSeed32: d.seed, referenceTick: 17, lastInSlot: false });
    assert.equal(b.shreds.length, 3 * 64);
    assert.equal(b.nextFecSetIndex, 64 + 96);
    const views = b.shreds.map((p) => parseShred(p, 9));
    const data = views.flatMap((v) => (typeof v !== 'string' && v.isData ? [v] : []));
    assert.equal(data.length, 96);
    assert.equal(views.filter((v) => typeof v === 'string').length, 0);
    assert.ok(data.every((v) => !v.resigned && v.slot === 77 && v.parentOffset === 2 && (v.flags & 0x3f) === 17));
    assert.deepEqual(data.filter((v) => (v.flags & 0xc0) !== 0).map((v) => [v.index, v.flags & 0xc0]), [[159, 0x40]]);
    assert.ok(Buffer.concat(data.map((v) => v.buf.subarray(88, v.size))).equals(entries));
  });

  it('round-trips through the resolver with up to half of every set lost, chaining roots across batches', () => {
    const seed = crypto.randomBytes(32);
    const first = crypto.randomBytes(100_000);
    const second = crypto.randomBytes(20_000);
    const a = shredBatch(first, { slot: 500, parentOffset: 1, shredVersion: 3, fecSetIndexStart: 0, chainedRoot: Buffer.alloc(32), leaderSeed32: seed, lastInSlot: false });
    const b = shredBatch(second, { slot: 500, parentOffset: 1, shredVersion: 3, fecSetIndexStart: a.nextFecSetIndex, chainedRoot: a.merkleRoots.at(-1)!, leaderSeed32: seed, lastInSlot: true });
    const r = new FecResolver({ leaders: fixedLeader(publicKeyFromSeed(seed)), shredVersion: 3 });
    const sets = [];
    for (const shreds of [a.shreds, b.shreds]) {
      for (let s = 0; s < shreds.length; s += 64) {
        // Keep a random 32..64 of the set's 64 shreds, in random order.
        const set = shreds.slice(s, s + 64).sort(() => Math.random() - 0.5).slice(0, 32 + Math.floor(Math.random() * 33));
        for (const p of set) {
          const o = r.push(p, 0);
          if (o.kind === 'completes') sets.push(o.set);
        }
      }
    }
    assert.equal(sets.length, a.merkleRoots.length + b.merkleRoots.length);
    sets.sort((x, y) => x.fecSetIndex - y.fecSetIndex);
    assert.ok(Buffer.concat(sets.filter((s) => s.fecSetIndex < a.nextFecSetIndex).flatMap((s) => s.payloads)).equals(first));
    assert.ok(Buffer.concat(sets.filter((s) => s.fecSetIndex >= a.nextFecSetIndex).flatMap((s) => s.payloads)).equals(second));
    for (let i = 1; i < sets.length; i++) assert.ok(sets[i]!.chainedMerkleRoot.equals(sets[i - 1]!.merkleRoot), `set ${i} chains`);
    assert.deepEqual(sets.map((s) => s.dataComplete), sets.map((_, i) => i === a.merkleRoots.length - 1 || i === sets.length - 1));
    assert.equal(sets.at(-1)!.lastInSlot, true);
    assert.equal(sets.at(-1)!.resigned, true);
  });
});
