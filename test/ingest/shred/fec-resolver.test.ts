import assert from 'node:assert/strict';
import bs58 from 'bs58';
import type { CompletedFecSet } from '../../../ingest/fec-set';
import { Registry } from '../../../infra/base/metrics';
import { FecResolver, type FecResolverOptions, type ResolveOutcome } from '../../../ingest/shred/fec-resolver';
import { signerFromSeed } from '../../../ingest/shred/ed25519';
import { DATA_PARENT_OFFSET_OFF, DATA_SIZE_OFF, SLOT_OFF, VARIANT_OFF, layoutFor } from '../../../ingest/shred/layout';
import { leafHash, merkleRootAndProofs } from '../../../ingest/shred/merkle';
import { encodeParity } from '../../../ingest/shred/reed-solomon';
import { fixedLeader, type LeaderKeys } from '../../../ingest/shred/leader-keys';
import { shredBatch } from '../../../ingest/shred/shredder';
import { demo, mutated, turbine, type Capture } from './support';

interface Run {
  sets: CompletedFecSet[];
  outcomes: ResolveOutcome[];
  newSlots: bigint[];
  resolver: FecResolver;
}

function run(packets: Buffer[], opts: FecResolverOptions): Run {
  const newSlots: bigint[] = [];
  const resolver = new FecResolver({ ...opts, onNewSlot: (s) => newSlots.push(s) });
  const outcomes = packets.map((p, i) => resolver.push(p, 1000 + i));
  const sets = outcomes.flatMap((o) => (o.kind === 'completes' ? [o.set] : []));
  return { sets, outcomes, newSlots, resolver };
}

const checked = (c: Capture): FecResolverOptions => ({ leaders: fixedLeader(c.leader), shredVersion: c.shredVersion });
const kinds = (r: Run): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const o of r.outcomes) {
    const k = o.kind === 'rejected' ? `rejected:${o.reason}` : o.kind === 'ignored' ? `ignored:${o.why}` : o.kind;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
};

describe('FecResolver', () => {
  describe('the real turbine capture (testnet slot 385970984), leader check on', () => {
    const t = turbine();
    const r = run(t.packets, checked(t));

    it('completes exactly its 5 FEC sets, each with the golden roots and signature', () => {
      assert.equal(r.sets.length, 5);
      assert.deepEqual(r.sets.map((s) => s.fecSetIndex).sort((a, b) => a - b), t.expected.fec_sets.map((s) => s.fec_set_index));
      for (const want of t.expected.fec_sets) {
        const got = r.sets.find((s) => s.fecSetIndex === want.fec_set_index)!;
        assert.equal(got.slot, BigInt(want.slot));
        assert.equal(got.merkleRoot.toString('hex'), want.merkle_root);
        assert.equal(got.chainedMerkleRoot.toString('hex'), want.chained_merkle_root);
        assert.equal(bs58.encode(got.leaderSignature!), want.leader_signature);
        assert.equal(got.resigned, want.variants.includes('0xb6'));
      }
    });

    it('needed Reed–Solomon in every set, and the rebuilt data matches the golden batches', () => {
      assert.equal(r.sets.length, 5);
      assert.equal(t.expected.entry_batches.length, 5);
      for (const s of r.sets) assert.ok(s.recoveredData > 0, `set ${s.fecSetIndex} recovered ${s.recoveredData}`);
      for (const b of t.expected.entry_batches) {
        const s = r.sets.find((x) => x.fecSetIndex === b.first_shred)!;
        assert.equal(b.last_shred, b.first_shred + 31, 'each golden batch is one set');
        const payload = Buffer.concat(s.payloads);
        assert.equal(payload.length, b.payload_bytes);
        assert.equal(payload.readBigUInt64LE(0), BigInt(b.num_entries));
        assert.equal(bs58.encode(payload.subarray(16, 48)), b.entries[0]!.hash, 'first entry hash');
        assert.equal(s.dataComplete, true);
        assert.equal(s.lastInSlot, b.last_in_slot);
        assert.equal(s.dataShreds!.length, 32);
      }
    });

    it('counts the distinct data and code shreds of each set like the golden, duplicates aside', () => {
      for (const want of t.expected.fec_sets) {
        assert.deepEqual(r.resolver.seen(want.slot, want.fec_set_index), { dataPresent: want.data_present, codePresent: want.code_present, completed: true });
      }
      const st = r.resolver.stats();
      const distinct = t.expected.fec_sets.reduce((n, s) => n + s.data_present + s.code_present, 0);
      assert.equal(distinct, t.packets.length - 16, 'the capture holds 16 duplicates');
      assert.equal(st.completedSets, 5);
      assert.equal(st.recoveredSets, 5);
      assert.equal(Object.values(st.dropped).reduce((a, b) => a + b, 0), 0, 'nothing dropped');
    });

    it('reports the slot once, on its first verified shred', () => {
      assert.deepEqual(r.newSlots, [385970984n]);
    });
  });

  describe('the demo capture, leader from demo-shreds.key', () => {
    const d = demo();
    const r = run(d.packets, checked(d));

    it('completes its 8 sets in order, chained, and their payloads are the entries byte for byte', () => {
      assert.equal(r.sets.length, 8);
      assert.deepEqual(r.sets.map((s) => s.fecSetIndex), [0, 32, 64, 96, 128, 160, 192, 224]);
      r.sets.forEach((s, i) => {
        assert.equal(s.merkleRoot.toString('hex'), d.expected.fec_sets[i]!.merkle_root);
        assert.equal(s.chainedMerkleRoot.toString('hex'), d.expected.fec_sets[i]!.chained_merkle_root);
        assert.equal(s.recoveredData, 0);
      });
      assert.ok(Buffer.concat(r.sets.flatMap((s) => s.payloads)).equals(d.entries));
      assert.deepEqual(r.sets.map((s) => [s.dataComplete, s.lastInSlot, s.resigned]).at(-1), [true, true, true]);
      assert.equal(r.sets.filter((s) => s.dataComplete).length, 1);
      assert.deepEqual(r.newSlots, [0n]);
    });

    it('ignores the 256 shreds that arrive after their set completed', () => {
      assert.deepEqual(kinds(r), { okay: 248, completes: 8, 'ignored:completed': 256 });
    });
  });

  describe('forged shreds, leader check on: no set, no slot', () => {
    const d = demo();
    const forgeries: Array<[string, (b: Buffer) => void, string]> = [
      ['a flipped signature byte', (b) => { b[17] ^= 0x01; }, 'signature'],
      ['a tampered proof', (b) => { const proofOff = b[VARIANT_OFF] === 0x96 ? 1083 : b[VARIANT_OFF] === 0x66 ? 1108 : b[VARIANT_OFF] === 0xb6 ? 1019 : 1044; b[proofOff + 3] ^= 0x80; }, 'signature'],
      ['a tampered payload', (b) => { b[300] ^= 0x04; }, 'signature'],
    ];
    for (const [name, forge, reason] of forgeries) {
      it(`every shred with ${name}`, () => {
        const r = run(d.packets.map((p) => mutated(p, forge)), checked(d));
        assert.equal(r.sets.length, 0);
        assert.deepEqual(r.newSlots, []);
        assert.deepEqual(kinds(r), { [`rejected:${reason}`]: 512 });
      });
    }

    it('a signature by another key', () => {
      const r = run(d.packets, { leaders: fixedLeader(turbine().leader), shredVersion: d.shredVersion });
      assert.equal(r.sets.length, 0);
      assert.deepEqual(r.newSlots, []);
      assert.equal(r.resolver.stats().dropped.signature, 512);
    });

    it('forged shreds mixed into a real set are dropped; the set completes from the genuine ones', () => {
      const set0 = d.packets.slice(0, 64);
      const forged = set0.map((p) => mutated(p, (b) => { b[400] ^= 0xff; }));
      const r = run([set0[0]!, ...forged.slice(1), ...set0.slice(1)], checked(d));
      assert.equal(r.sets.length, 1);
      assert.equal(r.sets[0]!.merkleRoot.toString('hex'), d.expected.fec_sets[0]!.merkle_root);
      assert.equal(r.resolver.stats().dropped.merkle_proof, 63);
    });
  });

  describe('duplicates and equivocation', () => {
    const d = demo();
    it('a duplicate differing only in the retransmitter signature is ignored; other differing bytes are not', () => {
      const resigned = d.packets.filter((p) => p[VARIANT_OFF] === 0xb6);
      const p = resigned[3]!;
      const r = new FecResolver(checked(d));
      assert.equal(r.push(p, 0).kind, 'okay');
      assert.deepEqual(r.push(Buffer.from(p), 1), { kind: 'ignored', why: 'duplicate' });
      assert.deepEqual(r.push(mutated(p, (b) => { b[1139] ^= 1; b[1202] ^= 0xff; }), 2), { kind: 'ignored', why: 'duplicate' });
      assert.deepEqual(r.push(mutated(p, (b) => { b[500] ^= 1; }), 3), { kind: 'rejected', reason: 'signature' });
      assert.deepEqual(r.push(mutated(p, (b) => { b[5] ^= 1; }), 4), { kind: 'rejected', reason: 'signature' });
      assert.equal(r.stats().duplicates, 2);
    });

    it('a second, leader-signed root for the same set is equivocation: flagged, counted, the first kept', () => {
      // The same slot and fec shredded from other entries: a valid signature over a different root.
      const other = shredBatch(Buffer.alloc(5000, 7), { slot: 0, parentOffset: 0, shredVersion: 6051, fecSetIndexStart: 0, chainedRoot: d.chainedRoot, leaderSeed32: d.seed, lastInSlot: false }).shreds;
      const r = new FecResolver(checked(d));
      for (const p of d.packets.slice(0, 20)) assert.equal(r.push(p, 0).kind, 'okay');
      assert.deepEqual(r.push(other[25]!, 1), { kind: 'equivocation', slot: 0, fecSetIndex: 0 });
      assert.deepEqual(r.push(other[5]!, 2), { kind: 'equivocation', slot: 0, fecSetIndex: 0 }, 'same position as a held shred');
      const done = d.packets.slice(20, 64).map((p) => r.push(p, 3)).filter((o) => o.kind === 'completes');
      assert.equal(done.length, 1);
      assert.equal(done[0]!.kind === 'completes' && done[0].set.merkleRoot.toString('hex'), d.expected.fec_sets[0]!.merkle_root);
      assert.equal(r.push(other[40]!, 4).kind, 'equivocation', 'also after completion');
      assert.equal(r.stats().equivocations, 3);
    });
  });

  describe('leader schedule, slot window and bounded memory', () => {
    const d = demo();
    const seed = d.seed;
    const shredSlot = (slot: number, lastInSlot = true, bytes = 40_000): Buffer[] =>
      shredBatch(Buffer.alloc(bytes, slot & 0xff), { slot, parentOffset: 1, shredVersion: 1, fecSetIndexStart: 0, chainedRoot: Buffer.alloc(32), leaderSeed32: seed, lastInSlot }).shreds;

    it("drops shreds as 'leader_unknown' when the schedule cannot name the leader, and reports no slot", () => {
      const unknown: LeaderKeys = { leaderFor: () => 'unknown' };
      const r = run(d.packets.slice(0, 40), { leaders: unknown });
      assert.deepEqual(kinds(r), { 'rejected:leader_unknown': 40 });
      assert.deepEqual(r.newSlots, []);
    });

    it('checks per slot: null skips the check for that slot only', () => {
      const perSlot: LeaderKeys = { leaderFor: (slot) => (slot === 0 ? null : d.publicKey) };
      const r = run(d.packets.map((p) => mutated(p, (b) => { b[3] ^= 1; })), { leaders: perSlot });
      assert.equal(r.sets.length, 8, 'slot 0 is unchecked, so a bad signature passes');
    });

    it('moves the window with the highest completed slot and evicts what falls below it', () => {
      const r = new FecResolver({ leaders: fixedLeader(d.publicKey), slotWindow: 100 });
      const s1000 = shredSlot(1000);
      // Slot 1000's second set: only 10 shreds, stays in progress.
      for (const p of s1000.slice(64, 74)) assert.equal(r.push(p, 0).kind, 'okay');
      for (const p of s1000.slice(0, 32)) r.push(p, 0);
      assert.equal(r.stats().highestCompletedSlot, 1000);
      assert.deepEqual(r.push(shredSlot(1101)[0]!, 0), { kind: 'rejected', reason: 'slot_window' });
      assert.deepEqual(r.push(shredSlot(899)[0]!, 0), { kind: 'rejected', reason: 'slot_window' });
      assert.equal(r.push(shredSlot(900)[0]!, 0).kind, 'okay');
      for (const p of shredSlot(1100).slice(0, 32)) r.push(p, 0);
      assert.equal(r.stats().highestCompletedSlot, 1100);
      assert.equal(r.stats().evictedSets, 1, "slot 900's open set (below 1000)");
      assert.equal(r.seen(1000, 32)!.dataPresent + r.seen(1000, 32)!.codePresent, 10, 'slot 1000 is still inside the window');
      for (const p of shredSlot(1150).slice(0, 32)) r.push(p, 0);
      const st = r.stats();
      assert.equal(st.highestCompletedSlot, 1150);
      assert.equal(st.evictedSets, 2, "then slot 1000's open set (below 1050)");
      assert.equal(r.seen(1000, 0), undefined);
      assert.deepEqual(r.push(s1000[80]!, 0), { kind: 'rejected', reason: 'slot_window' });
    });

    it('resets a window that traffic has left once nothing completed for windowResetMs (no permanent wedge)', () => {
      const r = new FecResolver({ leaders: fixedLeader(d.publicKey), slotWindow: 100, windowResetMs: 5_000 });
      for (const p of shredSlot(1000).slice(0, 32)) r.push(p, 1_000);
      assert.equal(r.stats().highestCompletedSlot, 1000);
      const restarted = shredSlot(3);
      // Soon after the last completion: outside the window is still rejected.
      assert.deepEqual(r.push(restarted[0]!, 2_000), { kind: 'rejected', reason: 'slot_window' });
      // After the quiet period the same traffic resets the window, completes, and becomes the new window.
      const outcomes = restarted.slice(0, 32).map((p) => r.push(p, 7_000).kind);
      assert.equal(outcomes.filter((k) => k === 'completes').length, 1);
      assert.equal(r.stats().windowResets, 1);
      assert.equal(r.stats().highestCompletedSlot, 3);
      assert.deepEqual(r.push(shredSlot(1000)[40]!, 7_001), { kind: 'rejected', reason: 'slot_window' });
    });

    it('caps in-progress sets, evicting the oldest', () => {
      const r = new FecResolver({ maxInProgressSets: 2 });
      const shreds = shredSlot(5, false, 70_000);
      assert.ok(shreds.length >= 3 * 64);
      r.push(shreds[0]!, 0);
      r.push(shreds[64]!, 0);
      r.push(shreds[128]!, 0);
      const st = r.stats();
      assert.equal(st.inProgressSets, 2);
      assert.equal(st.evictedSets, 1);
      assert.equal(r.seen(5, 0), undefined);
      assert.deepEqual(r.seen(5, 64), { dataPresent: 1, codePresent: 0, completed: false });
    });
  });

  describe('a malicious leader: validly signed sets whose recovered data is wrong', () => {
    const d = demo();
    const D = layoutFor(true, false);
    const C = layoutFor(false, false);
    /** Set 0 of the demo, altered by `tamper`, parity re-encoded when asked, then re-proven and re-signed. */
    function forgeSet(tamper: (shreds: Buffer[]) => void, reencode: boolean): Buffer[] {
      const shreds = d.packets.slice(0, 64).map((p) => Buffer.from(p));
      tamper(shreds);
      if (reencode) {
        encodeParity(shreds.slice(0, 32).map((b) => b.subarray(D.shardOff, D.shardOff + D.shardSz)), shreds.slice(32).map((b) => b.subarray(C.shardOff, C.shardOff + C.shardSz)), D.shardSz);
      }
      const { root, proofs } = merkleRootAndProofs(shreds.map((b, k) => leafHash(b, (k < 32 ? D : C).proofOff)));
      const sig = signerFromSeed(d.seed)(root);
      shreds.forEach((b, k) => {
        sig.copy(b, 0);
        proofs[k]!.copy(b, (k < 32 ? D : C).proofOff);
      });
      return shreds;
    }

    it("parity that does not match the data: rebuilt shreds miss the signed root → 'recovery'", () => {
      const shreds = forgeSet((s) => { s[40]![500] ^= 0x5a; }, false);
      const r = run([...shreds.slice(32), ...shreds.slice(0, 32)], checked(d));
      assert.equal(r.sets.length, 0);
      assert.deepEqual(r.outcomes[31], { kind: 'rejected', reason: 'recovery' });
      assert.equal(r.resolver.stats().dropped.recovery, 1);
      assert.equal(kinds(r)['ignored:completed'], 32, 'the failed set is closed');
    });

    it("consistent parity over a data shred the parser refuses: caught after rebuilding → 'recovery'", () => {
      const shreds = forgeSet((s) => { s[5]!.writeUInt16LE(2000, DATA_SIZE_OFF); }, true);
      const r = run([...shreds.slice(0, 5), ...shreds.slice(6, 32), shreds[40]!], checked(d));
      assert.equal(r.sets.length, 0);
      assert.deepEqual(r.outcomes.at(-1), { kind: 'rejected', reason: 'recovery' });
    });

    it("data shreds disagreeing on the parent → 'set_inconsistent'", () => {
      // Slot 0 only admits parent offset 0, so the forged set moves to slot 9 with offsets 1 and (shred 7) 2.
      const shreds = forgeSet((s) => {
        for (const b of s) b.writeUInt32LE(9, SLOT_OFF);
        s.slice(0, 32).forEach((b, i) => b.writeUInt16LE(i === 7 ? 2 : 1, DATA_PARENT_OFFSET_OFF));
      }, true);
      const r = run(shreds.slice(0, 32), checked(d));
      assert.equal(r.sets.length, 0);
      assert.deepEqual(r.outcomes.at(-1), { kind: 'rejected', reason: 'set_inconsistent' });
    });
  });

  it('exposes drop counters as meridian_ingest_shreds_dropped_total{reason}', () => {
    const d = demo();
    const registry = new Registry();
    const r = new FecResolver({ leaders: fixedLeader(d.publicKey), shredVersion: d.shredVersion, registry });
    r.push(Buffer.alloc(10), 0);
    r.push(mutated(d.packets[0]!, (b) => { b[0] ^= 1; }), 0);
    r.push(mutated(d.packets[0]!, (b) => { b[0] ^= 2; }), 0);
    const text = registry.render();
    assert.match(text, /^meridian_ingest_shreds_dropped_total\{reason="short"\} 1$/m);
    assert.match(text, /^meridian_ingest_shreds_dropped_total\{reason="signature"\} 2$/m);
    assert.match(text, /^meridian_ingest_resolver_shreds_total 3$/m);
    assert.equal(r.stats().dropped.signature, 2);
  });
});
