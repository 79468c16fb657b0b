import type { ParsedMarker } from './block-component';

// Agave's rules for the order of an Alpenglow block's components, as its replay applies them: the stage machine of
// runtime/src/block_component_processor.rs (BlockComponentStage, anza-xyz/agave 421cff16) and the parent checks of
// ledger/src/blockstore.rs (ParentInfo::should_write_parent_info / validate_shred_parent /
// validate_update_parent_slot). A block must have this shape:
//
//   Header · [GenesisCertificate] · EntryBatch* · [UpdateParent · EntryBatch*] · Footer · Alpentick
//
// where the alpentick is the final component: one entry, a tick (no transactions) with num_hashes 1.
//
// UpdateParent (SIMD-0337): replay of the header's bank stops at it (AbandonedBank) and a new bank replays from the
// UpdateParent's FEC set, with an UpdateParent allowed as its initial parent marker. Errors of the abandoned prefix
// are "update-parent recoverable" (BlockComponentProcessorError::is_update_parent_recoverable_replay_error): every
// stage-machine error is, except MultipleUpdateParents; so with an UpdateParent only the part from it on is judged,
// with the blockstore's parent checks. A block judged here is one whose every data shred is present.
//
// Not checked (they need bank state): the footer's producer time bounds (NanosecondClockOutOfBounds), certificate
// and reward-certificate verification, the genesis certificate's parent and stake, the bank hash.

/** One component of a block, in shred order (an entry batch or a marker, as reassembled: one data range). */
export interface BlockPart {
  /** Index of the data range's first and last data shred. */
  firstShred: number;
  lastShred: number;
  /** 'empty': entry count 0 and nothing else (the crate refuses it: a marker must follow a zero count). */
  kind: 'entries' | 'empty' | 'marker';
  marker: ParsedMarker | null;
  /** One entry, no transactions, num_hashes 1 (an alpentick if it is the block's final component). */
  alpentickShape: boolean;
  /**
   * The first signature of each of its transactions (n × 64 bytes, a copy), kept only where an UpdateParent may
   * discard them (the first slot of a leader window) until the block is judged; null elsewhere.
   */
  signatures: Buffer | null;
}

export interface BlockParent {
  slot: bigint;
  blockId: Buffer;
}

export type BlockVerdict =
  | {
      ok: true;
      /** The parent the block is replayed on: the UpdateParent's if there is one, else the header's. */
      parent: BlockParent;
      /** The UpdateParent's first data shred (= its FEC set index): everything before it is discarded. */
      updateParentShred: number | null;
      /** The header's parent, when the block has a header. */
      headerParent: BlockParent | null;
      footer: Extract<ParsedMarker, { kind: 'footer' }>;
    }
  | { ok: false; rule: string; reason: string };

/** Agave's NUM_CONSECUTIVE_LEADER_SLOTS: leader_slot_index(slot) = slot % 4 (epochs hold whole leader windows). */
const LEADER_WINDOW = 4n;

type Stage = 'pre_parent' | 'genesis_or_entries' | 'entries_or_footer_h' | 'entries_or_footer_u' | 'alpentick' | 'done';

function dead(rule: string, reason: string): BlockVerdict {
  return { ok: false, rule, reason: `${rule}: ${reason}` };
}

/**
 * Judges a whole block: `parts` in shred order, tiling the slot from shred 0 through the last shred in slot;
 * `shredParentSlot` = slot − the data shreds' parent offset.
 */
export function judgeBlock(slot: bigint, shredParentSlot: bigint, parts: readonly BlockPart[]): BlockVerdict {
  const ups: number[] = [];
  for (let i = 0; i < parts.length; i++) if (parts[i]!.marker?.kind === 'update_parent') ups.push(i);
  for (const p of parts) if (p.kind === 'empty') return dead('EmptyEntryBatch', `an entry batch of zero entries at shred ${p.firstShred} (solana-entry block_component.rs: a zero count must be followed by a marker)`);
  // blockstore.rs should_write_parent_info: two UpdateParents (at two FEC sets: never equal) → MultipleUpdateParents.
  if (ups.length > 1) return dead('MultipleUpdateParents', `UpdateParents at shreds ${ups.map((i) => parts[i]!.firstShred).join(', ')}`);
  const first = parts[0]?.marker;
  const headerParent = first?.kind === 'header' ? { slot: first.parentSlot, blockId: first.parentBlockId } : null;
  let start = 0;
  let updateParentShred: number | null = null;
  if (ups.length === 1) {
    const u = parts[ups[0]!]!;
    const m = u.marker as Extract<ParsedMarker, { kind: 'update_parent' }>;
    if (u.firstShred === 0) return dead('UnexpectedInitialUpdateParent', 'an UpdateParent as the first component (replay starts at the header)');
    // validate_update_parent_slot / block_component_processor on_update_parent
    if (slot % LEADER_WINDOW !== 0n) return dead('UpdateParentNotFirstInLeaderWindow', `slot ${slot} is not the first of its leader window`);
    if (headerParent !== null) {
      if (headerParent.slot === m.parentSlot && headerParent.blockId.equals(m.parentBlockId)) return dead('UpdateParentMatchesBlockHeader', 'the UpdateParent names the header\u2019s parent');
      if (m.parentSlot > headerParent.slot) return dead('UpdateParentSlotGreaterThanBlockHeader', `UpdateParent parent ${m.parentSlot} > header parent ${headerParent.slot}`);
    }
    // validate_shred_parent: an UpdateParent may name the shred header's parent slot or an older one.
    if (m.parentSlot > shredParentSlot) return dead('UpdateParentSlotGreaterThanShredParent', `UpdateParent parent ${m.parentSlot} > shred parent ${shredParentSlot}`);
    if (m.parentSlot >= slot) return dead('InvalidParentInfo', `UpdateParent parent ${m.parentSlot} not below slot ${slot}`);
    start = ups[0]!;
    updateParentShred = u.firstShred;
  } else if (headerParent !== null && headerParent.slot !== shredParentSlot) {
    // validate_shred_parent (BlockHeaderParentMismatch) / on_header (HeaderParentSlotMismatch)
    return dead('HeaderParentSlotMismatch', `header parent ${headerParent.slot} \u2260 shred parent ${shredParentSlot}`);
  }
  let stage: Stage = 'pre_parent';
  let footer: Extract<ParsedMarker, { kind: 'footer' }> | null = null;
  for (let i = start; i < parts.length; i++) {
    const p = parts[i]!;
    const m = p.marker;
    const at = `shred ${p.firstShred}`;
    if (m === null) {
      // on_entry_batch: the alpentick is the final component, one tick with num_hashes 1.
      if (i === parts.length - 1 && p.alpentickShape) {
        if (stage === 'pre_parent') return dead('MissingParentMarker', `an entry batch at ${at} before any Header`);
        if (stage !== 'alpentick') return dead('InvalidAlpentickPosition', `the final tick at ${at} does not follow the footer`);
        stage = 'done';
      } else if (stage === 'pre_parent') return dead('MissingParentMarker', `an entry batch at ${at} before any Header`);
      else if (stage === 'alpentick' || stage === 'done') return dead('EntryBatchAfterBlockFooter', `an entry batch at ${at} after the footer`);
      else if (stage === 'genesis_or_entries') stage = 'entries_or_footer_h';
      continue;
    }
    switch (m.kind) {
      case 'header':
        if (stage === 'pre_parent') stage = 'genesis_or_entries';
        else if (stage === 'entries_or_footer_u') return dead('SpuriousUpdateParent', `a Header at ${at} after the UpdateParent`);
        else return dead('MultipleBlockHeaders', `a second Header at ${at}`);
        break;
      case 'genesis_certificate':
        if (stage === 'pre_parent') return dead('MissingParentMarker', `a GenesisCertificate at ${at} before any Header`);
        if (stage !== 'genesis_or_entries') return dead('GenesisCertificateOutOfOrder', `a GenesisCertificate at ${at} not right after the Header`);
        stage = 'entries_or_footer_h';
        break;
      case 'update_parent':
        if (stage === 'pre_parent') stage = 'entries_or_footer_u'; // i === start: replay from the UpdateParent
        else if (stage === 'alpentick' || stage === 'done') return dead('SpuriousUpdateParent', `an UpdateParent at ${at} after the footer`);
        else return dead('MultipleUpdateParents', `an UpdateParent at ${at}`);
        break;
      case 'footer':
        if (stage === 'pre_parent') return dead('MissingParentMarker', `a Footer at ${at} before any Header`);
        if (stage === 'alpentick' || stage === 'done') return dead('MultipleBlockFooters', `a second Footer at ${at}`);
        stage = 'alpentick';
        footer = m;
        break;
    }
  }
  // on_final
  if (stage === 'alpentick') return dead('InvalidAlpentickPosition', 'no final tick after the footer');
  if (stage !== 'done' || footer === null) return dead('MissingBlockFooter', 'the block ends without a footer');
  const parentMarker = parts[start]!.marker as Extract<ParsedMarker, { kind: 'header' | 'update_parent' }>;
  return { ok: true, parent: { slot: parentMarker.parentSlot, blockId: parentMarker.parentBlockId }, updateParentShred, headerParent, footer };
}
