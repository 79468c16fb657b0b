// The inverse of the resolver: one entry batch (bincode Vec<Entry>) → chained Merkle data + code shreds,
// signed by the leader. Byte-compatible with the reference shredder (Firedancer's fd_shredder, which follows
// Agave's policy), checked against fixtures/shreds/demo-shreds.pcap:
//
//   - Sets are always 32 data + 32 code. A chained set carries C = 32 × 963 = 30,816 entry bytes, a resigned
//     set (the slot's last) R = 32 × 899 = 28,768.
//   - Not last in slot: ceil(size / C) chained sets, filled front to back, the last one zero padded.
//   - Last in slot: the final set is resigned and FULL (R bytes, unless the whole batch is ≤ R, then one padded
//     resigned set); the ceil((size − R) / C) chained sets before it take the rest, the last of them padded.
//     (So a batch that fits one chained set but not one resigned set becomes padded-chained + full-resigned.)
//   - Within a set, data shreds are filled in order, each to capacity (963 / 899 B); padding shreds are empty
//     (size = 88). The zero bytes after `size` are part of the erasure shard and of the leaf.
//   - Flags: every data shred carries the reference tick; only the batch's very last data shred carries
//     DATA_COMPLETE (0x40), plus LAST_IN_SLOT (0xC0) when the batch ends the slot.
//   - Code shred j of a set: index = fec_set_index + j, position j, 32:32.
//   - Resigned sets leave the retransmitter signature zeroed (the leader is not a retransmitter).
//   - Each set's chained root is the previous set's root; the first takes opts.chainedRoot.

import {
  CODE_NUM_CODING_OFF, CODE_NUM_DATA_OFF, CODE_POSITION_OFF, CODE_SHREDS_PER_SET, DATA_FLAGS_OFF, DATA_HEADER_END,
  DATA_PARENT_OFFSET_OFF, DATA_SHREDS_PER_SET, DATA_SIZE_OFF, FEC_SET_INDEX_OFF, FLAG_DATA_COMPLETE, FLAG_LAST_IN_SLOT,
  FLAG_REFERENCE_TICK_MASK, INDEX_OFF, MAX_SHRED_INDEX, MERKLE_ROOT_SZ, SIGNATURE_OFF, SLOT_OFF, VARIANT_OFF,
  VERSION_OFF, layoutFor, type VariantLayout,
} from './layout';
import { leafHash, merkleRootAndProofs } from './merkle';
import { encodeParity } from './reed-solomon';
import { signerFromSeed } from './ed25519';

export interface ShredOptions {
  slot: number | bigint;
  /** slot − parent slot. */
  parentOffset: number;
  shredVersion: number;
  /** Index of the batch's first data shred: a multiple of 32 (sets continue the slot's numbering). */
  fecSetIndexStart: number;
  /** Root of the slot's previous FEC set (for the slot's first set: the parent slot's last set). */
  chainedRoot: Buffer;
  /** The leader's 32-byte ed25519 seed. */
  leaderSeed32: Buffer;
  /** 0..63: ticks into the slot when the batch was made. */
  referenceTick?: number;
  /** The batch ends the slot: its last set is resigned and its last shred says LAST_IN_SLOT. */
  lastInSlot: boolean;
}

export interface ShredBatch {
  /** Per set: 32 data shreds then 32 code shreds, sets in order (the reference pcap's order). */
  shreds: Buffer[];
  /** Each set's Merkle root; the last one chains the slot's next batch. */
  merkleRoots: Buffer[];
  nextFecSetIndex: number;
}

const CHAINED_SET_BYTES = DATA_SHREDS_PER_SET * (layoutFor(true, false).dataEnd - DATA_HEADER_END);
const RESIGNED_SET_BYTES = DATA_SHREDS_PER_SET * (layoutFor(true, true).dataEnd - DATA_HEADER_END);

/** Entry bytes per set, in order: the reference shredder's split (see the header). */
export function planSets(size: number, lastInSlot: boolean): Array<{ bytes: number; resigned: boolean }> {
  const plan: Array<{ bytes: number; resigned: boolean }> = [];
  const chainedBytes = lastInSlot ? Math.max(0, size - RESIGNED_SET_BYTES) : size;
  const chainedSets = lastInSlot ? Math.ceil(chainedBytes / CHAINED_SET_BYTES) : Math.max(1, Math.ceil(chainedBytes / CHAINED_SET_BYTES));
  for (let s = 0; s < chainedSets; s++) plan.push({ bytes: Math.min(CHAINED_SET_BYTES, chainedBytes - s * CHAINED_SET_BYTES), resigned: false });
  if (lastInSlot) plan.push({ bytes: size - chainedBytes, resigned: true });
  return plan;
}

function writeCommon(b: Buffer, L: VariantLayout, slot: bigint, index: number, o: ShredOptions, fec: number): void {
  b[VARIANT_OFF] = L.variant;
  b.writeBigUInt64LE(slot, SLOT_OFF);
  b.writeUInt32LE(index, INDEX_OFF);
  b.writeUInt16LE(o.shredVersion, VERSION_OFF);
  b.writeUInt32LE(fec, FEC_SET_INDEX_OFF);
}

interface SetInput {
  entries: Buffer;
  from: number;
  bytes: number;
  resigned: boolean;
  fec: number;
  lastOfBatch: boolean;
  chainedRoot: Buffer;
}

function shredSet(o: ShredOptions, slot: bigint, s: SetInput, sign: (m: Uint8Array) => Buffer): { shreds: Buffer[]; root: Buffer } {
  const D = layoutFor(true, s.resigned);
  const C = layoutFor(false, s.resigned);
  const perShred = D.dataEnd - DATA_HEADER_END;
  const tick = (o.referenceTick ?? 0) & FLAG_REFERENCE_TICK_MASK;
  const shreds: Buffer[] = [];
  let from = s.from;
  const end = s.from + s.bytes;
  for (let i = 0; i < DATA_SHREDS_PER_SET; i++) {
    const b = Buffer.alloc(D.shredSz);
    writeCommon(b, D, slot, s.fec + i, o, s.fec);
    const n = Math.min(perShred, end - from);
    b.writeUInt16LE(o.parentOffset, DATA_PARENT_OFFSET_OFF);
    const last = s.lastOfBatch && i === DATA_SHREDS_PER_SET - 1;
    b[DATA_FLAGS_OFF] = tick | (last ? (o.lastInSlot ? FLAG_LAST_IN_SLOT : FLAG_DATA_COMPLETE) : 0);
    b.writeUInt16LE(DATA_HEADER_END + n, DATA_SIZE_OFF);
    s.entries.copy(b, DATA_HEADER_END, from, from + n);
    from += n;
    s.chainedRoot.copy(b, D.chainedRootOff, 0, MERKLE_ROOT_SZ);
    shreds.push(b);
  }
  for (let j = 0; j < CODE_SHREDS_PER_SET; j++) {
    const b = Buffer.alloc(C.shredSz);
    writeCommon(b, C, slot, s.fec + j, o, s.fec);
    b.writeUInt16LE(DATA_SHREDS_PER_SET, CODE_NUM_DATA_OFF);
    b.writeUInt16LE(CODE_SHREDS_PER_SET, CODE_NUM_CODING_OFF);
    b.writeUInt16LE(j, CODE_POSITION_OFF);
    s.chainedRoot.copy(b, C.chainedRootOff, 0, MERKLE_ROOT_SZ);
    shreds.push(b);
  }
  const shardSz = D.shardSz;
  encodeParity(
    shreds.slice(0, DATA_SHREDS_PER_SET).map((b) => b.subarray(D.shardOff, D.shardOff + shardSz)),
    shreds.slice(DATA_SHREDS_PER_SET).map((b) => b.subarray(C.shardOff, C.shardOff + shardSz)),
    shardSz,
  );
  const { root, proofs } = merkleRootAndProofs(shreds.map((b, k) => leafHash(b, (k < DATA_SHREDS_PER_SET ? D : C).proofOff)));
  const sig = sign(root);
  shreds.forEach((b, k) => {
    sig.copy(b, SIGNATURE_OFF);
    proofs[k]!.copy(b, (k < DATA_SHREDS_PER_SET ? D : C).proofOff);
  });
  return { shreds, root };
}

export function shredBatch(entries: Buffer, o: ShredOptions): ShredBatch {
  if (o.fecSetIndexStart % DATA_SHREDS_PER_SET !== 0 || o.fecSetIndexStart < 0) throw new RangeError('fecSetIndexStart must be a non-negative multiple of 32');
  if (o.chainedRoot.length < MERKLE_ROOT_SZ) throw new RangeError('chainedRoot must be 32 bytes');
  const plan = planSets(entries.length, o.lastInSlot);
  const nextFecSetIndex = o.fecSetIndexStart + plan.length * DATA_SHREDS_PER_SET;
  if (nextFecSetIndex > MAX_SHRED_INDEX) throw new RangeError(`batch would pass shred index ${MAX_SHRED_INDEX}`);
  const sign = signerFromSeed(o.leaderSeed32);
  const slot = BigInt(o.slot);
  const out: ShredBatch = { shreds: [], merkleRoots: [], nextFecSetIndex };
  let chainedRoot = o.chainedRoot;
  let from = 0;
  plan.forEach((p, s) => {
    const fec = o.fecSetIndexStart + s * DATA_SHREDS_PER_SET;
    const r = shredSet(o, slot, { entries, from, bytes: p.bytes, resigned: p.resigned, fec, lastOfBatch: s === plan.length - 1, chainedRoot }, sign);
    out.shreds.push(...r.shreds);
    out.merkleRoots.push(r.root);
    chainedRoot = r.root;
    from += p.bytes;
  });
  return out;
}

/** The shreds alone (see shredBatch for the roots and the next index). */
export function shredEntries(entriesBincode: Buffer, opts: ShredOptions): Buffer[] {
  return shredBatch(entriesBincode, opts).shreds;
}
