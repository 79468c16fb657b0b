// One FEC set as the resolver tracks it: the proven tree, the accepted shreds by leaf position, and the
// presence masks. Once completed, the heavy parts are dropped and only what later shreds are compared
// against remains (signature, root, masks), so a completed set costs ~200 bytes until its slot leaves the window.

import { DATA_SHREDS_PER_SET, SHREDS_PER_SET, SIGNATURE_SZ } from './layout';
import type { VerifiedTree } from './verified-tree';
import type { ShredView } from './parse';

export class FecSetState {
  /** Completed (or failed): heavy state released, later shreds are only compared. */
  done = false;
  dataMask = 0;
  codeMask = 0;
  count = 0;
  tree: VerifiedTree | null;
  shreds: Array<ShredView | undefined> | null;

  constructor(
    readonly slot: number,
    readonly fecSetIndex: number,
    /** Copied out of the first packet so a completed set does not pin it. */
    readonly signature: Buffer,
    readonly root: Buffer,
    readonly resigned: boolean,
    readonly firstSeenMs: number,
    tree: VerifiedTree,
  ) {
    this.tree = tree;
    this.shreds = new Array<ShredView | undefined>(SHREDS_PER_SET);
  }

  /** Marks a position present (for a completed set: seen carrying its signature, see FecResolver.seen). */
  mark(leafIndex: number): void {
    if (leafIndex < DATA_SHREDS_PER_SET) this.dataMask |= 1 << leafIndex;
    else this.codeMask |= 1 << (leafIndex - DATA_SHREDS_PER_SET);
  }

  /** Stores a proven shred; returns the number of distinct shards now present. */
  accept(v: ShredView): number {
    this.shreds![v.leafIndex] = v;
    this.mark(v.leafIndex);
    return ++this.count;
  }

  /** The packet carries this set's signature bytes (its first SIGNATURE_SZ). */
  signedAlike(buf: Buffer): boolean {
    // Compared here, not by Buffer.compare: for 64 bytes its argument checks and native call cost more than the
    // loop (every shred of a set comes through here).
    const sig = this.signature;
    if (buf.length < SIGNATURE_SZ) return false;
    for (let i = 0; i < SIGNATURE_SZ; i++) if (buf[i] !== sig[i]) return false;
    return true;
  }

  release(): void {
    this.done = true;
    this.tree = null;
    this.shreds = null;
  }

  dataPresent(): number {
    return popcount32(this.dataMask);
  }

  codePresent(): number {
    return popcount32(this.codeMask);
  }
}

export function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** Same shred apart from the retransmitter signature (rewritten at every turbine hop). */
export function sameShred(a: ShredView, b: ShredView): boolean {
  const end = a.layout.retransmitterOff >= 0 ? a.layout.retransmitterOff : a.layout.shredSz;
  return a.layout === b.layout && a.buf.compare(b.buf, 0, end, 0, end) === 0;
}
