import { SLOT_HASHES_MAX_ENTRIES, SLOT_MAX, LOOKUP_TABLE_MAX_ADDRESSES } from './program';
import type { LookupTableState } from './account';

// How the chain applies a lookup table to a transaction, and how the program changes a table. Sources:
// solana-address-lookup-table-interface state.rs (AddressLookupTable::get_active_addresses_len, lookup_iter,
// LookupTableMeta::status) and solana-program/address-lookup-table processor.rs (process_extend_lookup_table,
// process_deactivate_lookup_table, process_freeze_lookup_table).

export type Usable = { ok: true; length: number } | { ok: false; reason: 'deactivated' };

const COOL_DOWN = BigInt(SLOT_HASHES_MAX_ENTRIES);

/**
 * How many of the table's addresses a transaction in `slot` may use.
 *   - status: active while deactivation_slot is Slot::MAX; "deactivating" (still usable) while the deactivation
 *     slot is the current slot or is still in the SlotHashes sysvar (the last 512 slots that had a block);
 *     deactivated after. We do not hold SlotHashes, so we use the interface's own conservative estimate
 *     (estimate_last_valid_slot = deactivation_slot + 512): at or before it the table is certainly usable;
 *     after it, with skipped slots, the chain may still allow it for a little while, and we call it deactivated
 *     (the transaction is then matched without that table and reported unresolved — a miss, never a wrong key).
 *   - length: addresses appended in the current slot are not usable yet: when slot ≤ last_extended_slot only the
 *     first last_extended_slot_start_index addresses count.
 */
export function usableLength(t: LookupTableState, slot: bigint): Usable {
  const n = usableCount(t, slot);
  return n < 0 ? { ok: false, reason: 'deactivated' } : { ok: true, length: n };
}

/** usableLength without an object (the matching hot path): -1 when deactivated. */
export function usableCount(t: LookupTableState, slot: bigint): number {
  if (t.deactivationSlot !== SLOT_MAX && slot > t.deactivationSlot + COOL_DOWN) return -1;
  const n = t.addresses.length >>> 5;
  return slot > t.lastExtendedSlot ? n : Math.min(n, t.lastExtendedSlotStartIndex);
}

/** lookup_iter: every index must be below the usable length, else the whole lookup fails (InvalidLookupIndex).
 *  The indexes are bytes [off, off + len) of `b` (all of `b` by default). */
export function indexesInRange(b: Uint8Array, length: number, off = 0, len = b.length - off): boolean {
  for (let i = off; i < off + len; i++) if (b[i]! >= length) return false;
  return true;
}

/**
 * The table after an extension in `slot` (process_extend_lookup_table): the first extension in a slot records the
 * slot and the length before it; later ones in the same slot keep that start index. Returns null where the program
 * refuses (deactivated, frozen, or past 256 addresses) — the transaction then fails and the table is unchanged.
 */
export function extended(t: LookupTableState, added: Buffer, slot: bigint): LookupTableState | null {
  if (t.deactivationSlot !== SLOT_MAX || t.authority === null) return null;
  const oldLen = t.addresses.length / 32;
  if (oldLen + added.length / 32 > LOOKUP_TABLE_MAX_ADDRESSES) return null;
  const newStart = slot !== t.lastExtendedSlot;
  return {
    deactivationSlot: t.deactivationSlot,
    lastExtendedSlot: slot,
    lastExtendedSlotStartIndex: newStart ? oldLen : t.lastExtendedSlotStartIndex,
    authority: t.authority,
    addresses: Buffer.concat([t.addresses, added]),
  };
}

/** process_deactivate_lookup_table: only an active table with an authority; deactivation_slot = the clock's slot. */
export function deactivated(t: LookupTableState, slot: bigint): LookupTableState | null {
  if (t.deactivationSlot !== SLOT_MAX || t.authority === null) return null;
  return { ...t, deactivationSlot: slot };
}

/** process_freeze_lookup_table: an active table with an authority and at least one address loses its authority. */
export function frozen(t: LookupTableState): LookupTableState | null {
  if (t.deactivationSlot !== SLOT_MAX || t.authority === null || t.addresses.length === 0) return null;
  return { ...t, authority: null };
}
