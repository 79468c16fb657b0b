import { LOOKUP_TABLE_MAX_ADDRESSES, SLOT_MAX } from './program';

// An Address Lookup Table account's data, as the program writes it (solana-program/address-lookup-table
// program/src/state.rs: ProgramState, bincode; agave's solana-address-lookup-table-interface is the same):
//
//   +0   u32   ProgramState discriminant (0 Uninitialized, 1 LookupTable)
//   +4   u64   deactivation_slot            LE; Slot::MAX while active
//   +12  u64   last_extended_slot           LE
//   +20  u8    last_extended_slot_start_index   the length before the extension made in last_extended_slot
//   +21  u8    authority: Option tag        0 None (frozen), 1 Some
//   +22  32    authority key                present whatever the tag (zero when None)
//   +54  u16   padding
//   +56  32×n  addresses                    n = (data length − 56) / 32, at most 256
//
// LOOKUP_TABLE_META_SIZE (56) is fixed: the bincode Option takes 1 + 32 bytes here because the program serialises
// the meta into a fixed-size slot.

export const LOOKUP_TABLE_META_SIZE = 56;
const STATE_LOOKUP_TABLE = 1;
const DEACTIVATION_OFF = 4;
const LAST_EXTENDED_OFF = 12;
const START_INDEX_OFF = 20;
const AUTHORITY_TAG_OFF = 21;
const AUTHORITY_OFF = 22;
const PUBKEY_SZ = 32;

export interface LookupTableState {
  deactivationSlot: bigint;
  lastExtendedSlot: bigint;
  lastExtendedSlotStartIndex: number;
  /** null: frozen (no authority can extend, deactivate or close it). */
  authority: Buffer | null;
  /** n × 32 bytes, contiguous. */
  addresses: Buffer;
}

export type TableDecode = { ok: true; table: LookupTableState } | { ok: false; reason: string };

/** Views into `data` (copy it if the buffer is reused). */
export function decodeLookupTable(data: Buffer): TableDecode {
  if (data.length < LOOKUP_TABLE_META_SIZE) return { ok: false, reason: 'shorter than the table meta' };
  if (data.readUInt32LE(0) !== STATE_LOOKUP_TABLE) return { ok: false, reason: 'not an initialized lookup table' };
  const body = data.length - LOOKUP_TABLE_META_SIZE;
  if (body % PUBKEY_SZ !== 0) return { ok: false, reason: 'address area is not a multiple of 32 bytes' };
  if (body / PUBKEY_SZ > LOOKUP_TABLE_MAX_ADDRESSES) return { ok: false, reason: 'more than 256 addresses' };
  const tag = data[AUTHORITY_TAG_OFF];
  if (tag !== 0 && tag !== 1) return { ok: false, reason: 'bad authority option tag' };
  return {
    ok: true,
    table: {
      deactivationSlot: data.readBigUInt64LE(DEACTIVATION_OFF),
      lastExtendedSlot: data.readBigUInt64LE(LAST_EXTENDED_OFF),
      lastExtendedSlotStartIndex: data[START_INDEX_OFF]!,
      authority: tag === 1 ? data.subarray(AUTHORITY_OFF, AUTHORITY_OFF + PUBKEY_SZ) : null,
      addresses: data.subarray(LOOKUP_TABLE_META_SIZE),
    },
  };
}

/** The account data of `t` (tests compare it with what the chain holds). */
export function encodeLookupTable(t: LookupTableState): Buffer {
  const out = Buffer.alloc(LOOKUP_TABLE_META_SIZE + t.addresses.length);
  out.writeUInt32LE(STATE_LOOKUP_TABLE, 0);
  out.writeBigUInt64LE(t.deactivationSlot, DEACTIVATION_OFF);
  out.writeBigUInt64LE(t.lastExtendedSlot, LAST_EXTENDED_OFF);
  out[START_INDEX_OFF] = t.lastExtendedSlotStartIndex;
  out[AUTHORITY_TAG_OFF] = t.authority === null ? 0 : 1;
  if (t.authority !== null) t.authority.copy(out, AUTHORITY_OFF);
  t.addresses.copy(out, LOOKUP_TABLE_META_SIZE);
  return out;
}

/** A table the create instruction just made: active, empty, never extended. */
export function newLookupTable(authority: Buffer): LookupTableState {
  return { deactivationSlot: SLOT_MAX, lastExtendedSlot: 0n, lastExtendedSlotStartIndex: 0, authority, addresses: Buffer.alloc(0) };
}
