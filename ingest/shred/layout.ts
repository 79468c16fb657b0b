// The shred wire format (spec/shreds.md §1). Only chained Merkle shreds are live: data 0x96/0xB6 and
// code 0x66/0x76, 32 data + 32 code per FEC set, proof depth 6. All integers little-endian.
//
//   offset  size  field                                   data shred (1203 B)          code shred (1228 B)
//   ------  ----  --------------------------------------  ---------------------------  ---------------------------
//   0x000     64  leader signature over the set's root    │ common header (83 B, 0x53), same for both kinds
//   0x040      1  variant: type nibble | proof depth       │
//   0x041      8  slot                                    │
//   0x049      4  index (data and code count separately)  │
//   0x04D      2  shred_version                           │
//   0x04F      4  fec_set_index (multiple of 32)          │
//   0x053      2  ─ data: parent_offset                   │ code: num_data   (always 32)
//   0x055      1  ─ data: flags (tick | 0x40 | 0x80)      │ code: num_coding (u16, always 32)
//   0x056      2  ─ data: size (END offset of entry bytes)│
//   0x057      2                                          │ code: position (0..31)
//   0x058         data buffer starts (88)                 │
//   0x059         ─                                       │ parity shard starts (89)
//
//   after the headers, per variant (the retransmitter signature only in resigned sets):
//
//   variant  buffer       chained root  proof (6×20)  retransmitter sig  erasure shard     Merkle leaf input
//   0x96     88..1051     1051..1083    1083..1203    –                  64..1051  (987 B) 64..1083
//   0xB6     88..987      987..1019     1019..1139    1139..1203         64..987   (923 B) 64..1019
//   0x66     –            1076..1108    1108..1228    –                  89..1076  (987 B) 64..1108
//   0x76     –            1012..1044    1044..1164    1164..1228         89..1012  (923 B) 64..1044
//
// The sizes follow from the packet budget: a code shred is 1232 B (max UDP payload) − 4 B repair nonce = 1228;
// data shreds are 25 B shorter
// (1203) because a data shard must equal a code shard in length and starts 25 B earlier (at the variant
// byte, 64, rather than after the code header, 89).

export const SIGNATURE_OFF = 0x00;
export const SIGNATURE_SZ = 64;
export const VARIANT_OFF = 0x40;
export const SLOT_OFF = 0x41;
export const INDEX_OFF = 0x49;
export const VERSION_OFF = 0x4d;
export const FEC_SET_INDEX_OFF = 0x4f;
export const COMMON_HEADER_SZ = 0x53;

export const DATA_PARENT_OFFSET_OFF = 0x53;
export const DATA_FLAGS_OFF = 0x55;
export const DATA_SIZE_OFF = 0x56;
export const DATA_HEADER_END = 0x58;

export const CODE_NUM_DATA_OFF = 0x53;
export const CODE_NUM_CODING_OFF = 0x55;
export const CODE_POSITION_OFF = 0x57;
export const CODE_HEADER_END = 0x59;

export const DATA_SHRED_SZ = 1203;
export const CODE_SHRED_SZ = 1228;

export const MERKLE_NODE_SZ = 20;
export const MERKLE_ROOT_SZ = 32;
export const PROOF_DEPTH = 6;
export const PROOF_SZ = MERKLE_NODE_SZ * PROOF_DEPTH;
export const RETRANSMITTER_SIG_SZ = 64;

/** Erasure shard: data shreds from the variant byte, code shreds after their header. */
export const DATA_SHARD_OFF = VARIANT_OFF;
export const CODE_SHARD_OFF = CODE_HEADER_END;

export const DATA_SHREDS_PER_SET = 32;
export const CODE_SHREDS_PER_SET = 32;
export const SHREDS_PER_SET = DATA_SHREDS_PER_SET + CODE_SHREDS_PER_SET;
/** Agave's MAX_DATA_SHREDS_PER_SLOT: shred indexes stay below it. */
export const MAX_SHRED_INDEX = 32_768;

// Variant byte: high nibble = type, low nibble = proof depth.
export const VARIANT_TYPE_MASK = 0xf0;
export const VARIANT_DEPTH_MASK = 0x0f;
export const TYPE_DATA_CHAINED = 0x90;
export const TYPE_DATA_RESIGNED = 0xb0;
export const TYPE_CODE_CHAINED = 0x60;
export const TYPE_CODE_RESIGNED = 0x70;
export const TYPE_DATA_UNCHAINED = 0x80;
export const TYPE_CODE_UNCHAINED = 0x40;
export const VARIANT_LEGACY_DATA = 0xa5;
export const VARIANT_LEGACY_CODE = 0x5a;

// Data flags.
export const FLAG_REFERENCE_TICK_MASK = 0x3f;
export const FLAG_DATA_COMPLETE = 0x40;
export const FLAG_LAST_IN_SLOT = 0xc0; // always includes DATA_COMPLETE
export const FLAG_LAST_IN_SLOT_BIT = 0x80;

/** Where things sit in one of the four live variants; computed once, shared by every view. */
export interface VariantLayout {
  readonly variant: number;
  readonly isData: boolean;
  readonly resigned: boolean;
  readonly shredSz: number;
  readonly shardOff: number;
  /** = shard end = start of the chained root. */
  readonly chainedRootOff: number;
  readonly proofOff: number;
  /** -1 when the variant carries none. */
  readonly retransmitterOff: number;
  /** Data shreds: largest valid `size` field (end of the data buffer); code shreds: 0. */
  readonly dataEnd: number;
  readonly shardSz: number;
}

function layout(variant: number, isData: boolean, resigned: boolean): VariantLayout {
  const shredSz = isData ? DATA_SHRED_SZ : CODE_SHRED_SZ;
  const retransmitterOff = resigned ? shredSz - RETRANSMITTER_SIG_SZ : -1;
  const proofOff = (resigned ? retransmitterOff : shredSz) - PROOF_SZ;
  const chainedRootOff = proofOff - MERKLE_ROOT_SZ;
  const shardOff = isData ? DATA_SHARD_OFF : CODE_SHARD_OFF;
  return Object.freeze({
    variant, isData, resigned, shredSz, shardOff, chainedRootOff, proofOff, retransmitterOff,
    dataEnd: isData ? chainedRootOff : 0,
    shardSz: chainedRootOff - shardOff,
  });
}

export const LAYOUT_DATA_CHAINED = layout(TYPE_DATA_CHAINED | PROOF_DEPTH, true, false);
export const LAYOUT_DATA_RESIGNED = layout(TYPE_DATA_RESIGNED | PROOF_DEPTH, true, true);
export const LAYOUT_CODE_CHAINED = layout(TYPE_CODE_CHAINED | PROOF_DEPTH, false, false);
export const LAYOUT_CODE_RESIGNED = layout(TYPE_CODE_RESIGNED | PROOF_DEPTH, false, true);

export function layoutFor(isData: boolean, resigned: boolean): VariantLayout {
  if (isData) return resigned ? LAYOUT_DATA_RESIGNED : LAYOUT_DATA_CHAINED;
  return resigned ? LAYOUT_CODE_RESIGNED : LAYOUT_CODE_CHAINED;
}
