// What the FEC set resolver hands to reassembly: one verified, complete (possibly recovered) set of
// 32 data shreds. Everything here is checked: proof to the signed root, leader signature where configured.

export const DATA_SHREDS_PER_SET = 32;

export interface CompletedFecSet {
  slot: bigint;
  fecSetIndex: number;
  parentOffset: number;
  /** The set's 32-byte Merkle root (what the leader signed). */
  merkleRoot: Buffer;
  chainedMerkleRoot: Buffer;
  /** The 32 data shreds' entry bytes in index order: shred[88 .. size] (views where possible). */
  payloads: Buffer[];
  /** Data-header flags of each of the 32 data shreds. */
  flags: Uint8Array;
  /** The set's last data shred carries DATA_COMPLETE: an entry batch ends here. */
  dataComplete: boolean;
  /** The set's last data shred carries LAST_IN_SLOT. */
  lastInSlot: boolean;
  /** Data shreds rebuilt by Reed–Solomon (0 when all 32 arrived). */
  recoveredData: number;
  /** Resigned variant (last set of a slot). */
  resigned: boolean;
  /** When the set's first shred arrived, and when it completed (ms since epoch, fractional). */
  firstSeenMs: number;
  completedMs: number;
  /** The leader's signature over merkleRoot (optional so synthetic sets in tests need not invent one). */
  leaderSignature?: Buffer;
  /** The 32 full data shreds in index order, rebuilt ones included (for retransmit or storage). */
  dataShreds?: Buffer[];
}
