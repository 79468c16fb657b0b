// VerifiedTree: per FEC set, the tree nodes already proven to lead to the set's signed root, so that each
// shred's proof is checked only as far as needed.
//
// Cost model. A sha256 of a leaf (~1 KB) costs ~1.3 µs here, of a node ~0.6 µs, an ed25519 verify ~65 µs.
// Folding every shred's full proof would cost 1 + 6 hashes per shred. Instead:
//   - the set's first shred folds its proof to a root; the leader's signature over that root is verified
//     once (the resolver does it); its whole path, AND the six siblings its proof carries, become proven;
//   - every later shred hashes its leaf and climbs only until it meets a proven node, then compares.
// A sibling from a verified proof is authenticated (it was an input to a proven hash), so its 20-byte prefix
// is recorded too, and 20 bytes are all a parent ever commits to. That is why many shreds need no node hash
// at all: when a shred's sibling came first, its own leaf prefix is already known. In-order arrival costs
// about one node hash per shred on top of its leaf. Nodes are recorded only after a climb succeeds, so a
// failed (forged) climb leaves no trace.

import { MERKLE_NODE_SZ, PROOF_DEPTH } from './layout';
import { parentOf } from './merkle';

// Flat node array of a 64-leaf tree: level l starts at LEVEL_OFF[l] and holds 64 >> l nodes; the root last.
const LEVEL_OFF = [0, 64, 96, 112, 120, 124, 126];
const NODE_CNT = 127;
const ROOT_LEVEL = PROOF_DEPTH;
const path: Uint8Array[] = new Array<Uint8Array>(PROOF_DEPTH + 1);

export class VerifiedTree {
  /** 20-byte prefixes of proven nodes, NODE_CNT slots; `known` says which slots are filled. */
  private readonly prefixes = new Uint8Array(NODE_CNT * MERKLE_NODE_SZ);
  private readonly known = new Uint8Array(NODE_CNT);

  /** A proven node's 20-byte prefix (level 0 = leaves, level 6 = root), or undefined. */
  node(level: number, i: number): Uint8Array | undefined {
    const slot = LEVEL_OFF[level]! + i;
    return this.known[slot] === 1 ? this.prefixes.subarray(slot * MERKLE_NODE_SZ, (slot + 1) * MERKLE_NODE_SZ) : undefined;
  }

  provenCount(): number {
    let n = 0;
    for (let i = 0; i < NODE_CNT; i++) n += this.known[i]!;
    return n;
  }

  private record(slot: number, src: Uint8Array, srcOff: number): void {
    if (this.known[slot] === 1) return;
    // 20 bytes copied by a loop: a native copy would need a view of them first (one per recorded node).
    const p = this.prefixes;
    const base = slot * MERKLE_NODE_SZ;
    for (let k = 0; k < MERKLE_NODE_SZ; k++) p[base + k] = src[srcOff + k]!;
    this.known[slot] = 1;
  }

  private matches(slot: number, h: Uint8Array): boolean {
    const p = this.prefixes;
    const base = slot * MERKLE_NODE_SZ;
    for (let k = 0; k < MERKLE_NODE_SZ; k++) if (p[base + k] !== h[k]) return false;
    return true;
  }

  /** Proves levels 0..top-1 of a climb that met a proven node at `top`: the path and the proof's siblings. */
  private commit(leafIndex: number, top: number, proof: Uint8Array, off: number): void {
    for (let k = 0; k < top; k++) {
      const i = leafIndex >>> k;
      this.record(LEVEL_OFF[k]! + i, path[k]!, 0);
      this.record(LEVEL_OFF[k]! + (i ^ 1), proof, off + k * MERKLE_NODE_SZ);
    }
  }

  /**
   * Folds the set's first shred to its root and proves the whole climb. The caller must then verify the
   * leader's signature over the returned 32-byte root, and discard this tree if it does not verify.
   */
  plant(leaf: Buffer, leafIndex: number, proof: Uint8Array, off: number): Buffer {
    let h: Buffer = leaf;
    let i = leafIndex;
    for (let l = 0; l < PROOF_DEPTH; l++) {
      path[l] = h;
      h = parentOf(h, i, proof, off + l * MERKLE_NODE_SZ);
      i >>>= 1;
    }
    this.commit(leafIndex, ROOT_LEVEL, proof, off);
    this.record(LEVEL_OFF[ROOT_LEVEL]!, h, 0);
    return h;
  }

  /** Climbs from the leaf until a proven node; true (and the climb is proven) when they agree. Needs plant(). */
  check(leaf: Buffer, leafIndex: number, proof: Uint8Array, off: number): boolean {
    let h: Uint8Array = leaf;
    let i = leafIndex;
    for (let l = 0; l <= ROOT_LEVEL; l++) {
      const slot = LEVEL_OFF[l]! + i;
      if (this.known[slot] === 1) {
        if (!this.matches(slot, h)) return false;
        this.commit(leafIndex, l, proof, off);
        return true;
      }
      if (l === ROOT_LEVEL) break;
      path[l] = h;
      h = parentOf(h, i, proof, off + l * MERKLE_NODE_SZ);
      i >>>= 1;
    }
    return false; // no root planted: nothing is proven
  }
}
