import assert from 'node:assert/strict';
import { parseShred, type ShredView } from '../../../ingest/shred/parse';
import { foldProof, leafHash, merkleRootAndProofs } from '../../../ingest/shred/merkle';
import { VerifiedTree } from '../../../ingest/shred/verified-tree';
import { PROOF_SZ } from '../../../ingest/shred/layout';
import { demo, mutated, turbine } from './support';

function views(packets: Buffer[]): ShredView[] {
  return packets.map((p) => {
    const v = parseShred(p);
    assert.ok(typeof v !== 'string');
    return v;
  });
}

const rootOf = (v: ShredView): Buffer => foldProof(leafHash(v.buf, v.layout.proofOff), v.leafIndex, v.buf, v.layout.proofOff);

describe('merkle', () => {
  it('folds every shred of both captures to its set\'s golden root', () => {
    for (const cap of [demo(), turbine()]) {
      const roots = new Map(cap.expected.fec_sets.map((s) => [s.fec_set_index, s.merkle_root]));
      const vs = views(cap.packets);
      assert.equal(vs.length, cap.expected.num_packets);
      for (const v of vs) assert.equal(rootOf(v).toString('hex'), roots.get(v.fecSetIndex), `fec ${v.fecSetIndex} leaf ${v.leafIndex}`);
    }
  });

  it('builds the full tree of a set: same root and byte-identical proofs', () => {
    const vs = views(demo().packets);
    for (const fec of [0, 224]) {
      const set = vs.filter((v) => v.fecSetIndex === fec).sort((a, b) => a.leafIndex - b.leafIndex);
      assert.equal(set.length, 64);
      const { root, proofs } = merkleRootAndProofs(set.map((v) => leafHash(v.buf, v.layout.proofOff)));
      assert.equal(root.toString('hex'), demo().expected.fec_sets.find((s) => s.fec_set_index === fec)!.merkle_root);
      set.forEach((v, i) => assert.ok(proofs[i]!.equals(v.buf.subarray(v.layout.proofOff, v.layout.proofOff + PROOF_SZ)), `proof ${i}`));
    }
  });

  it('VerifiedTree: proven climbs pass, forged ones fail and leave nothing behind', () => {
    const vs = views(demo().packets).filter((v) => v.fecSetIndex === 32);
    const tree = new VerifiedTree();
    const [first, ...rest] = vs;
    assert.equal(tree.check(leafHash(first!.buf, first!.layout.proofOff), first!.leafIndex, first!.buf, first!.layout.proofOff), false, 'nothing is proven before a root is planted');
    const root = tree.plant(leafHash(first!.buf, first!.layout.proofOff), first!.leafIndex, first!.buf, first!.layout.proofOff);
    assert.equal(root.toString('hex'), demo().expected.fec_sets[1]!.merkle_root);

    const victim = rest[10]!;
    const forged = parseShred(mutated(victim.buf, (b) => { b[200] ^= 1; }));
    assert.ok(typeof forged !== 'string');
    assert.equal(tree.check(leafHash(forged.buf, forged.layout.proofOff), forged.leafIndex, forged.buf, forged.layout.proofOff), false);
    assert.equal(tree.node(1, victim.leafIndex >> 1), undefined, 'a failed climb records no node');
    const badProof = parseShred(mutated(victim.buf, (b) => { b[victim.layout.proofOff + 5] ^= 1; }));
    assert.ok(typeof badProof !== 'string');
    assert.equal(tree.check(leafHash(badProof.buf, badProof.layout.proofOff), badProof.leafIndex, badProof.buf, badProof.layout.proofOff), false);

    for (const v of rest) assert.equal(tree.check(leafHash(v.buf, v.layout.proofOff), v.leafIndex, v.buf, v.layout.proofOff), true, `leaf ${v.leafIndex}`);
    assert.equal(tree.provenCount(), 127, 'all 64 shreds prove every node');
  });
});
