// Turning a FEC set with 32 proven shards into a CompletedFecSet: Reed–Solomon rebuilds the missing DATA
// shreds (parity is never needed downstream), each rebuilt shred gets the set's signature, chained root,
// recomputed proof and (resigned sets) retransmitter signature, and the rebuilt tree must hash to the
// signed root before anything leaves here.
//
// Why the root check needs no missing parity: the root is node(dataHalf, parityHalf). dataHalf is recomputed
// from the 32 data leaves (received ones are already proven, rebuilt ones hashed here), and parityHalf is
// proven from the set's first shred on (a data shred carries it as its top sibling, a code shred's climb
// computes it). The rebuilt proofs are the data half's siblings plus parityHalf's 20-byte prefix on top.

import type { CompletedFecSet } from '../fec-set';
import type { ResolveReject } from './drop-reasons';
import type { FecSetState } from './fec-set-state';
import { DATA_HEADER_END, DATA_SHREDS_PER_SET, FLAG_DATA_COMPLETE, FLAG_LAST_IN_SLOT_BIT, MERKLE_ROOT_SZ, RETRANSMITTER_SIG_SZ, layoutFor } from './layout';
import { buildLevels, leafHash, nodeHash, writeProof } from './merkle';
import { parseShred, type ShredView } from './parse';
import { recoverData, TOTAL_SHARDS } from './reed-solomon';

const ALL_DATA = 0xffffffff;
/** The parity half's subtree root (level 5, index 1): the top sibling in every data shred's proof. */
const PARITY_HALF_LEVEL = 5;

/** Rebuilds what is missing and checks it. The caller guarantees ≥ 32 distinct proven shards. */
function recoverMissingData(st: FecSetState, data: Array<ShredView | undefined>): number | ResolveReject {
  const shreds = st.shreds!;
  const tree = st.tree!;
  const L = layoutFor(true, st.resigned);
  const shardSz = L.shardSz;
  const shards = new Array<Uint8Array | undefined>(TOTAL_SHARDS);
  let template: ShredView | undefined;
  for (let i = 0; i < TOTAL_SHARDS; i++) {
    const v = shreds[i];
    if (v === undefined) continue;
    template ??= v;
    shards[i] = v.buf.subarray(v.layout.shardOff, v.layout.shardOff + shardSz);
  }
  const rebuilt = new Array<Buffer | undefined>(DATA_SHREDS_PER_SET);
  const n = recoverData(shards, shardSz, (i) => {
    const b = Buffer.alloc(L.shredSz);
    rebuilt[i] = b;
    return b.subarray(L.shardOff, L.shardOff + shardSz);
  });
  const parityHalf = tree.node(PARITY_HALF_LEVEL, 1);
  if (n < 0 || template === undefined || parityHalf === undefined) return 'recovery';

  // Copy what the shard does not carry; all of it is the same across a set (the leaves commit to it).
  const t = template.buf;
  const chainedRoot = t.subarray(template.layout.chainedRootOff, template.layout.chainedRootOff + MERKLE_ROOT_SZ);
  const retransmitter = template.layout.retransmitterOff >= 0 ? t.subarray(template.layout.retransmitterOff, template.layout.retransmitterOff + RETRANSMITTER_SIG_SZ) : null;
  const leaves = new Array<Uint8Array>(DATA_SHREDS_PER_SET);
  for (let i = 0; i < DATA_SHREDS_PER_SET; i++) {
    const b = rebuilt[i];
    if (b === undefined) {
      leaves[i] = tree.node(0, i)!;
      continue;
    }
    st.signature.copy(b, 0);
    chainedRoot.copy(b, L.chainedRootOff);
    if (retransmitter !== null) retransmitter.copy(b, L.retransmitterOff);
    leaves[i] = leafHash(b, L.proofOff);
  }
  // Reuse proven nodes, but only over subtrees without a rebuilt leaf: those must be hashed, or the root
  // check below would not cover them.
  let rebuiltMask = 0;
  for (let i = 0; i < DATA_SHREDS_PER_SET; i++) if (rebuilt[i] !== undefined) rebuiltMask |= 1 << i;
  const levels = buildLevels(leaves, (level, i) => {
    const span = 1 << level;
    const under = span === 32 ? 0xffffffff : ((1 << span) - 1) << (i * span);
    return (rebuiltMask & under) === 0 ? tree.node(level, i) : undefined;
  });
  const dataHalf = levels[levels.length - 1]![0]!;
  if (!nodeHash(dataHalf, parityHalf).equals(st.root)) return 'recovery';

  for (let i = 0; i < DATA_SHREDS_PER_SET; i++) {
    const b = rebuilt[i];
    if (b === undefined) continue;
    const off = writeProof(levels, i, b, L.proofOff);
    b.set(parityHalf, off);
    // The leader signed these bytes, but they never passed the parser: a rebuilt shred must obey the same
    // rules, and must be the shred its position says.
    const v = parseShred(b);
    if (typeof v === 'string' || v.layout !== L || v.slot !== st.slot || v.fecSetIndex !== st.fecSetIndex || v.leafIndex !== i) return 'recovery';
    data[i] = v;
  }
  return n;
}

export function completeSet(st: FecSetState, nowMs: number): CompletedFecSet | ResolveReject {
  const data = st.shreds!.slice(0, DATA_SHREDS_PER_SET);
  let recovered = 0;
  if (st.dataMask >>> 0 !== ALL_DATA) {
    const r = recoverMissingData(st, data);
    if (typeof r === 'string') return r;
    recovered = r;
  }
  const views = data as ShredView[];
  const first = views[0]!;
  const payloads = new Array<Buffer>(DATA_SHREDS_PER_SET);
  const dataShreds = new Array<Buffer>(DATA_SHREDS_PER_SET);
  const flags = new Uint8Array(DATA_SHREDS_PER_SET);
  for (let i = 0; i < DATA_SHREDS_PER_SET; i++) {
    const v = views[i]!;
    // Reassembly takes one parent per set; a leader that signs disagreeing headers gets its set dropped.
    if (v.parentOffset !== first.parentOffset) return 'set_inconsistent';
    payloads[i] = v.buf.subarray(DATA_HEADER_END, v.size);
    dataShreds[i] = v.buf;
    flags[i] = v.flags;
  }
  const lastFlags = flags[DATA_SHREDS_PER_SET - 1]!;
  const cro = first.layout.chainedRootOff;
  return {
    slot: BigInt(st.slot),
    fecSetIndex: st.fecSetIndex,
    parentOffset: first.parentOffset,
    merkleRoot: st.root,
    chainedMerkleRoot: first.buf.subarray(cro, cro + MERKLE_ROOT_SZ),
    payloads,
    flags,
    dataComplete: (lastFlags & FLAG_DATA_COMPLETE) !== 0,
    lastInSlot: (lastFlags & FLAG_LAST_IN_SLOT_BIT) !== 0,
    recoveredData: recovered,
    resigned: st.resigned,
    firstSeenMs: st.firstSeenMs,
    completedMs: nowMs,
    leaderSignature: st.signature,
    dataShreds,
  };
}
