// The FEC set's Merkle tree (spec/shreds.md §1): 64 leaves (data 0..31, code 32..63), sha256 with domain
// prefixes, children truncated to 20 bytes inside a node, the full 32-byte root signed by the leader.
// Hashing, proof folding and whole-tree building live here; the per-set cache of proven nodes that makes
// verification cheap is verified-tree.ts.

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
const NODE_LEFT_OFF = NODE_PREFIX.length;
const NODE_RIGHT_OFF = NODE_LEFT_OFF + MERKLE_NODE_SZ;
// Hot-path habit: no subarray() per hash (each is a Buffer allocation); fixed views, copy() and 20-byte loops.
const leafViews = new Map<number, Buffer>();

/** leaf = sha256(LEAF_PREFIX ‖ shred[64 .. proofOff]). */
export function leafHash(shred: Buffer, proofOff: number): Buffer {
  let input = leafViews.get(proofOff);
  if (input === undefined) {
    input = leafScratch.subarray(0, LEAF_PREFIX.length + proofOff - LEAF_INPUT_OFF);
    leafViews.set(proofOff, input);
  }
  shred.copy(leafScratch, LEAF_PREFIX.length, LEAF_INPUT_OFF, proofOff);
  return sha256(input);
}

function put20(src: Uint8Array, srcOff: number, dstOff: number): void {
  for (let k = 0; k < MERKLE_NODE_SZ; k++) nodeScratch[dstOff + k] = src[srcOff + k]!;
}

/** node = sha256(NODE_PREFIX ‖ left[0..20] ‖ right[0..20]). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  put20(left, 0, NODE_LEFT_OFF);
  put20(right, 0, NODE_RIGHT_OFF);
  return sha256(nodeScratch);
}

/** One climb step: the parent of h (index i at its level) and the sibling at proof[sibOff..sibOff+20]. */
export function parentOf(h: Uint8Array, i: number, proof: Uint8Array, sibOff: number): Buffer {
  if ((i & 1) === 0) {
    put20(h, 0, NODE_LEFT_OFF);
    put20(proof, sibOff, NODE_RIGHT_OFF);
  } else {
    put20(proof, sibOff, NODE_LEFT_OFF);
    put20(h, 0, NODE_RIGHT_OFF);
  }
  return sha256(nodeScratch);
}

/** Folds a proof (siblings bottom-up, 20 bytes each, at proof[off..]) from a leaf to the root. */
export function foldProof(leaf: Buffer, leafIndex: number, proof: Uint8Array, off: number, depth = PROOF_DEPTH): Buffer {
  let h = leaf;
  let i = leafIndex;
  for (let l = 0; l < depth; l++) {
    h = parentOf(h, i, proof, off + l * MERKLE_NODE_SZ);
    i >>>= 1;
  }
  return h;
}

/**
 * All levels of a perfect tree over `leaves` (a power of two): levels[0] = leaves, last level = [root].
 * `known(level, i)` may supply nodes already computed (it must only answer for subtrees it vouches for).
 */
export function buildLevels(leaves: Uint8Array[], known?: (level: number, i: number) => Uint8Array | undefined): Uint8Array[][] {
  const levels: Uint8Array[][] = [leaves];
  let cur = leaves;
  while (cur.length > 1) {
    const next = new Array<Uint8Array>(cur.length >>> 1);
    const level = levels.length;
    for (let i = 0; i < next.length; i++) next[i] = known?.(level, i) ?? nodeHash(cur[2 * i]!, cur[2 * i + 1]!);
    levels.push(next);
    cur = next;
  }
  return levels;
}

/** Writes leaf i's siblings (20 bytes each, bottom-up) for every level below the top into out[off..]. */
export function writeProof(levels: Uint8Array[][], leafIndex: number, out: Uint8Array, off: number): number {
  let i = leafIndex;
  for (let l = 0; l < levels.length - 1; l++) {
    out.set(levels[l]![i ^ 1]!.subarray(0, MERKLE_NODE_SZ), off);
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
  const root = levels[levels.length - 1]![0]!;
  return { root: Buffer.from(root.buffer, root.byteOffset, root.length), proofs };
}
