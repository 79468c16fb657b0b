// The FEC set's Merkle tree (spec/shreds.md §1): 64 leaves (data 0..31, code 32..63), sha256 with domain
// prefixes, children truncated to 20 bytes inside a node, the full 32-byte root signed by the leader.
//
// Cost model and the verification design. A sha256 of a leaf (~1 KB) costs ~1.3 µs here, of a node ~0.6 µs,
// an ed25519 verify ~65 µs. Folding every shred's proof to the root costs 1 + 6 hashes; instead each set
// keeps a VerifiedTree: the nodes already proven to lead to the signed root. A new shred hashes its leaf
// and climbs only until it meets a proven node, then compares. Its sibling's path has usually proven the
// parent already, so a set of 64 shreds costs ~64 leaf hashes + ~63 node hashes in total (about 2 node
// hashes per shred), and the signature is verified once, for the set's first shred. Nodes are recorded only
// after the climb succeeds, so a failed (forged) climb leaves no trace.

import crypto from 'node:crypto';
import { MERKLE_NODE_SZ, PROOF_DEPTH, PROOF_SZ, VARIANT_OFF } from './layout';

const LEAF_PREFIX = Buffer.from('\x00SOLANA_MERKLE_SHREDS_LEAF', 'latin1');
const NODE_PREFIX = Buffer.from('\x01SOLANA_MERKLE_SHREDS_NODE', 'latin1');
/** The leaf input starts at the variant byte: the signature (0..64) is not part of it. */
export const LEAF_INPUT_OFF = VARIANT_OFF;

// One-shot hashing without a Hash object per call: crypto.hash (Node ≥ 20.12) over a reused scratch buffer.
type OneShot = (data: Uint8Array) => Buffer;
const cryptoHash = (crypto as { hash?: (alg: string, data: Uint8Array, enc: 'buffer') => Buffer }).hash;
const sha256: OneShot = cryptoHash !== undefined
  ? (data) => cryptoHash('sha256', data, 'buffer')
  : (data) => crypto.createHash('sha256').update(data).digest();

const leafScratch = Buffer.alloc(LEAF_PREFIX.length + 2048);
LEAF_PREFIX.copy(leafScratch);
const nodeScratch = Buffer.alloc(NODE_PREFIX.length + 2 * MERKLE_NODE_SZ);
NODE_PREFIX.copy(nodeScratch);

/** leaf = sha256(LEAF_PREFIX ‖ shred[64 .. proofOff]). */
export function leafHash(shred: Uint8Array, proofOff: number): Buffer {
  const n = proofOff - LEAF_INPUT_OFF;
  leafScratch.set(shred.subarray(LEAF_INPUT_OFF, proofOff), LEAF_PREFIX.length);
  return sha256(leafScratch.subarray(0, LEAF_PREFIX.length + n));
}

/** node = sha256(NODE_PREFIX ‖ left[0..20] ‖ right[0..20]). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  nodeScratch.set(left.subarray(0, MERKLE_NODE_SZ), NODE_PREFIX.length);
  nodeScratch.set(right.subarray(0, MERKLE_NODE_SZ), NODE_PREFIX.length + MERKLE_NODE_SZ);
  return sha256(nodeScratch);
}

/** Folds a proof (siblings bottom-up, 20 bytes each, at proof[off..]) from a leaf to the root. */
export function foldProof(leaf: Buffer, leafIndex: number, proof: Uint8Array, off: number, depth = PROOF_DEPTH): Buffer {
  let h = leaf;
  let i = leafIndex;
  for (let l = 0; l < depth; l++) {
    const sib = proof.subarray(off + l * MERKLE_NODE_SZ, off + (l + 1) * MERKLE_NODE_SZ);
    h = (i & 1) === 0 ? nodeHash(h, sib) : nodeHash(sib, h);
    i >>>= 1;
  }
  return h;
}

/** All levels of a perfect tree over `leaves` (a power of two): levels[0] = leaves, last level = [root]. */
export function buildLevels(leaves: Buffer[]): Buffer[][] {
  const levels: Buffer[][] = [leaves];
  let cur = leaves;
  while (cur.length > 1) {
    const next: Buffer[] = new Array<Buffer>(cur.length >>> 1);
    for (let i = 0; i < next.length; i++) next[i] = nodeHash(cur[2 * i]!, cur[2 * i + 1]!);
    levels.push(next);
    cur = next;
  }
  return levels;
}

/** Writes leaf i's siblings (20 bytes each, bottom-up) for every level below the top into out[off..]. */
export function writeProof(levels: Buffer[][], leafIndex: number, out: Buffer, off: number): number {
  let i = leafIndex;
  for (let l = 0; l < levels.length - 1; l++) {
    levels[l]![i ^ 1]!.copy(out, off, 0, MERKLE_NODE_SZ);
    off += MERKLE_NODE_SZ;
    i >>>= 1;
  }
  return off;
}

/** A full 64-leaf tree: the shredder's, and a proof source for rebuilt shreds. */
export function merkleRootAndProofs(leaves: Buffer[]): { root: Buffer; proofs: Buffer[] } {
  const levels = buildLevels(leaves);
  const proofs = leaves.map((_, i) => {
    const p = Buffer.allocUnsafe(PROOF_SZ);
    writeProof(levels, i, p, 0);
    return p;
  });
  return { root: levels[levels.length - 1]![0]!, proofs };
}

// Flat node array of a 64-leaf tree: level l starts at LEVEL_OFF[l] and holds 64 >> l nodes; root last.
const LEVEL_OFF = [0, 64, 96, 112, 120, 124, 126];
const NODE_CNT = 127;
export const ROOT_NODE = LEVEL_OFF[PROOF_DEPTH]!;
/** The parity half's subtree root (level 5, index 1): the top sibling of every data shred's proof. */
export const PARITY_HALF_NODE = LEVEL_OFF[PROOF_DEPTH - 1]! + 1;
const path: Buffer[] = new Array<Buffer>(PROOF_DEPTH + 1);

/** Nodes of one set's tree proven to lead to its signed root (see the cost model above). */
export class VerifiedTree {
  readonly nodes: Array<Buffer | undefined> = new Array<Buffer | undefined>(NODE_CNT);

  get root(): Buffer | undefined {
    return this.nodes[ROOT_NODE];
  }

  leaf(i: number): Buffer | undefined {
    return this.nodes[i];
  }

  /** Records a whole leaf-to-root path once the root itself is trusted (the set's first, signed shred). */
  plant(leaf: Buffer, leafIndex: number, proof: Uint8Array, off: number): Buffer {
    let h = leaf;
    let i = leafIndex;
    this.nodes[i] = h;
    for (let l = 0; l < PROOF_DEPTH; l++) {
      const sib = proof.subarray(off + l * MERKLE_NODE_SZ, off + (l + 1) * MERKLE_NODE_SZ);
      h = (i & 1) === 0 ? nodeHash(h, sib) : nodeHash(sib, h);
      i >>>= 1;
      this.nodes[LEVEL_OFF[l + 1]! + i] = h;
    }
    return h;
  }

  /** Climbs from the leaf until a proven node; true (and the climb is recorded) when they agree. Needs a root. */
  check(leaf: Buffer, leafIndex: number, proof: Uint8Array, off: number): boolean {
    const seen = this.nodes[leafIndex];
    if (seen !== undefined) return seen.equals(leaf);
    let h = leaf;
    let i = leafIndex;
    path[0] = h;
    for (let l = 0; l < PROOF_DEPTH; l++) {
      const sib = proof.subarray(off + l * MERKLE_NODE_SZ, off + (l + 1) * MERKLE_NODE_SZ);
      h = (i & 1) === 0 ? nodeHash(h, sib) : nodeHash(sib, h);
      i >>>= 1;
      const known = this.nodes[LEVEL_OFF[l + 1]! + i];
      if (known !== undefined) {
        if (!known.equals(h)) return false;
        for (let k = 0; k <= l; k++) this.nodes[LEVEL_OFF[k]! + (leafIndex >>> k)] = path[k];
        return true;
      }
      path[l + 1] = h;
    }
    return false; // no root planted: nothing is proven
  }
}
