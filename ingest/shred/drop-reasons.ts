// Every reason a shred is dropped, in one closed list, so counters can be registered up front (inc() on the
// hot path never builds a label) and a switch over reasons is checked for exhaustiveness by the compiler.

/** Stateless checks of parseShred (spec/shreds.md §1 "Sanity rules"). */
export const PARSE_REJECTS = [
  'short', // fewer bytes than the header or the variant's size
  'legacy_variant', // 0xA5 / 0x5A: legacy shreds are gone from the wire
  'unchained_merkle', // 0x8_ / 0x4_: unchained Merkle shreds are gone too
  'unknown_variant', // any other type nibble
  'proof_depth', // live sets have 64 leaves: proof depth 6
  'shred_version', // not the configured cluster
  'slot_range', // slot beyond 2^53: no real cluster gets there, and slots are JS numbers inside
  'fec_index', // fec_set_index not a multiple of 32, or index outside [fec, fec + 32)
  'index_range', // index ≥ 32,768 (MAX_DATA_SHREDS_PER_SLOT)
  'code_header', // code shreds must say 32 data : 32 code, position < 32
  'data_complete_position', // DATA_COMPLETE only on a set's last data shred
  'last_in_slot_position', // LAST_IN_SLOT only where (index + 1) % 32 == 0, and only with DATA_COMPLETE
  'size_field', // data size (an END offset) outside [88, end of the data buffer]
  'parent_offset', // parent after the slot, or slot > 0 claiming itself as parent
] as const;

/** Stateful checks of the FEC resolver. */
export const RESOLVE_REJECTS = [
  'slot_window', // slot outside [highest completed − window, highest completed + window]
  'leader_unknown', // the leader check is on and no leader is known for the slot
  'source_budget', // would need a verify, and the sending address spent its budget of failed verifies (source-budget.ts)
  'signature', // leader signature does not verify over the root the shred's proof reaches
  'merkle_proof', // proof does not reach the set's verified root (tampered payload or proof)
  'conflict', // same position as a stored shred, same root, different bytes (e.g. another signature encoding)
  'recovery', // Reed–Solomon rebuilt data that does not hash to the signed root, or that fails the parser
  'set_inconsistent', // data shreds of one set disagree on parent_offset
] as const;

export type ParseReject = (typeof PARSE_REJECTS)[number];
export type ResolveReject = (typeof RESOLVE_REJECTS)[number];
export type DropReason = ParseReject | ResolveReject;

export const DROP_REASONS: readonly DropReason[] = [...PARSE_REJECTS, ...RESOLVE_REJECTS];
