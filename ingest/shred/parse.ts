// parseShred: one UDP payload → a view over it, or the reason it is dropped. Never throws on packet bytes:
// every read below happens after the length check that covers it. Stateless checks only; the slot window,
// proofs and signatures are the FEC resolver's.

import type { ParseReject } from './drop-reasons';
import {
  CODE_NUM_CODING_OFF, CODE_NUM_DATA_OFF, CODE_POSITION_OFF, CODE_SHREDS_PER_SET, COMMON_HEADER_SZ,
  DATA_FLAGS_OFF, DATA_HEADER_END, DATA_PARENT_OFFSET_OFF, DATA_SHREDS_PER_SET, DATA_SIZE_OFF,
  FEC_SET_INDEX_OFF, FLAG_DATA_COMPLETE, FLAG_LAST_IN_SLOT, FLAG_LAST_IN_SLOT_BIT, INDEX_OFF,
  LAYOUT_CODE_CHAINED, LAYOUT_CODE_RESIGNED, LAYOUT_DATA_CHAINED, LAYOUT_DATA_RESIGNED, MAX_SHRED_INDEX,
  PROOF_DEPTH, SLOT_OFF, TYPE_CODE_CHAINED, TYPE_CODE_RESIGNED, TYPE_CODE_UNCHAINED, TYPE_DATA_CHAINED,
  TYPE_DATA_RESIGNED, TYPE_DATA_UNCHAINED, VARIANT_DEPTH_MASK, VARIANT_LEGACY_CODE, VARIANT_LEGACY_DATA,
  VARIANT_OFF, VARIANT_TYPE_MASK, VERSION_OFF, type VariantLayout,
} from './layout';

/** A checked shred. One object shape for both kinds (monomorphic on the hot path); data-only fields are 0 on code. */
export interface ShredView {
  /** The packet truncated to the variant's size: a view, never a copy. */
  readonly buf: Buffer;
  readonly layout: VariantLayout;
  readonly isData: boolean;
  readonly resigned: boolean;
  readonly slot: number;
  readonly index: number;
  readonly shredVersion: number;
  readonly fecSetIndex: number;
  /** Position in the set's Merkle tree and erasure code: data 0..31 (index − fec), code 32 + position. */
  readonly leafIndex: number;
  readonly parentOffset: number;
  readonly flags: number;
  /** END offset of the entry bytes: buf[88 .. size]. */
  readonly size: number;
}

// The slot is read as two u32 halves; above this high word it no longer fits a JS number exactly.
const SLOT_HI_MAX = 0x1f_ffff;
const TWO_POW_32 = 0x1_0000_0000;

function layoutOf(variant: number): VariantLayout | ParseReject {
  if (variant === VARIANT_LEGACY_DATA || variant === VARIANT_LEGACY_CODE) return 'legacy_variant';
  const type = variant & VARIANT_TYPE_MASK;
  let l: VariantLayout;
  switch (type) {
    case TYPE_DATA_CHAINED: l = LAYOUT_DATA_CHAINED; break;
    case TYPE_DATA_RESIGNED: l = LAYOUT_DATA_RESIGNED; break;
    case TYPE_CODE_CHAINED: l = LAYOUT_CODE_CHAINED; break;
    case TYPE_CODE_RESIGNED: l = LAYOUT_CODE_RESIGNED; break;
    case TYPE_DATA_UNCHAINED:
    case TYPE_CODE_UNCHAINED: return 'unchained_merkle';
    default: return 'unknown_variant';
  }
  // Fixed 32:32 sets have 64 leaves, hence exactly 6 proof levels; other depths mean other set sizes.
  return (variant & VARIANT_DEPTH_MASK) === PROOF_DEPTH ? l : 'proof_depth';
}

/**
 * Checks one packet. `expectedVersion` null accepts any shred_version. Longer packets (a repair nonce, say)
 * are truncated to the variant's size; shorter ones are rejected.
 */
export function parseShred(packet: Buffer, expectedVersion: number | null = null): ShredView | ParseReject {
  if (packet.length < COMMON_HEADER_SZ) return 'short';
  const layout = layoutOf(packet[VARIANT_OFF]!);
  if (typeof layout === 'string') return layout;
  if (packet.length < layout.shredSz) return 'short';
  const buf = packet.length === layout.shredSz ? packet : packet.subarray(0, layout.shredSz);

  const shredVersion = buf.readUInt16LE(VERSION_OFF);
  if (expectedVersion !== null && shredVersion !== expectedVersion) return 'shred_version';

  const slotHi = buf.readUInt32LE(SLOT_OFF + 4);
  if (slotHi > SLOT_HI_MAX) return 'slot_range';
  const slot = slotHi * TWO_POW_32 + buf.readUInt32LE(SLOT_OFF);

  const index = buf.readUInt32LE(INDEX_OFF);
  const fecSetIndex = buf.readUInt32LE(FEC_SET_INDEX_OFF);
  if (index >= MAX_SHRED_INDEX) return 'index_range';
  // Sets are 32 data shreds starting at fec_set_index; code shreds share the set's index range.
  if (fecSetIndex % DATA_SHREDS_PER_SET !== 0 || index < fecSetIndex || index >= fecSetIndex + DATA_SHREDS_PER_SET) return 'fec_index';

  if (!layout.isData) {
    const position = buf.readUInt16LE(CODE_POSITION_OFF);
    if (buf.readUInt16LE(CODE_NUM_DATA_OFF) !== DATA_SHREDS_PER_SET || buf.readUInt16LE(CODE_NUM_CODING_OFF) !== CODE_SHREDS_PER_SET || position >= CODE_SHREDS_PER_SET) {
      return 'code_header';
    }
    return {
      buf, layout, isData: false, resigned: layout.resigned, slot, index, shredVersion, fecSetIndex,
      leafIndex: DATA_SHREDS_PER_SET + position, parentOffset: 0, flags: 0, size: 0,
    };
  }

  const flags = buf[DATA_FLAGS_OFF]!;
  const isSetEnd = index === fecSetIndex + DATA_SHREDS_PER_SET - 1;
  // LAST_IN_SLOT is 0xC0: the 0x80 bit alone is malformed, and a slot ends only on a set boundary.
  if ((flags & FLAG_LAST_IN_SLOT_BIT) !== 0 && ((flags & FLAG_LAST_IN_SLOT) !== FLAG_LAST_IN_SLOT || !isSetEnd)) return 'last_in_slot_position';
  // Entry batches end on set boundaries (reassembly relies on it).
  if ((flags & FLAG_DATA_COMPLETE) !== 0 && !isSetEnd) return 'data_complete_position';
  const size = buf.readUInt16LE(DATA_SIZE_OFF);
  if (size < DATA_HEADER_END || size > layout.dataEnd) return 'size_field';
  const parentOffset = buf.readUInt16LE(DATA_PARENT_OFFSET_OFF);
  // Agave's rule: the parent precedes the slot; only the genesis slot 0 may name itself.
  if (parentOffset > slot || (slot > 0 && parentOffset === 0)) return 'parent_offset';

  return {
    buf, layout, isData: true, resigned: layout.resigned, slot, index, shredVersion, fecSetIndex,
    leafIndex: index - fecSetIndex, parentOffset, flags, size,
  };
}

export function isShredView(r: ShredView | ParseReject): r is ShredView {
  return typeof r !== 'string';
}
