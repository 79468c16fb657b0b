import crypto from 'node:crypto';
import { nodeHash } from '../shred/merkle';

// An Alpenglow block's id (Agave PR #11714): the "double Merkle root" over the block's FEC sets, as
// ledger/src/blockstore.rs build_double_merkle_tree computes it once a slot is full:
//
//   leaves = the FEC sets' Merkle roots (fec_set_index 0, 32, 64, …, in order),
//            then sha256(parent_slot u64 LE ‖ parent_block_id [32] ‖ fec_set_count u32 LE)
//   tree   = ledger/src/shred/merkle_tree.rs MerkleTree::try_new_with_len: leaves taken as they are (no leaf
//            prefix), node = sha256("\x01SOLANA_MERKLE_SHREDS_NODE" ‖ left[0..20] ‖ right[0..20]), an odd last node
//            joined with itself; the root is the last node.
//
// The parent is the slot meta's: the header's, replaced by the UpdateParent's when the block has one
// (blockstore.rs should_write_parent_info). The count leaf binds fec_set_count so an even count cannot pass as
// one less. Golden vectors: test/fixtures/alpenglow/vectors.json `block_ids`.

export function blockId(fecSetRoots: readonly Uint8Array[], parentSlot: bigint, parentBlockId: Uint8Array): Buffer {
  const tail = Buffer.alloc(8 + 32 + 4);
  tail.writeBigUInt64LE(parentSlot, 0);
  tail.set(parentBlockId, 8);
  tail.writeUInt32LE(fecSetRoots.length, 40);
  let level: Uint8Array[] = [...fecSetRoots, crypto.createHash('sha256').update(tail).digest()];
  while (level.length > 1) {
    const up: Uint8Array[] = [];
    for (let i = 0; i < level.length; i += 2) up.push(nodeHash(level[i]!, level[Math.min(i + 1, level.length - 1)]!));
    level = up;
  }
  return Buffer.from(level[0]!);
}
