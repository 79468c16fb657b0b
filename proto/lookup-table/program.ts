import bs58 from 'bs58';

// The Address Lookup Table program: its id, its limits and its instructions, as the chain defines them.
// Source: solana-program/address-lookup-table (program/src/instruction.rs, processor.rs, state.rs; the Core BPF
// port of agave's programs/address-lookup-table), Apache-2.0. Instructions are bincode: a u32 LE variant index,
// then the variant's fields.
//
//   0 CreateLookupTable      u32 0 ‖ recent_slot u64 ‖ bump_seed u8
//                            accounts: 0 table (w) · 1 authority · 2 payer (w, s) · 3 system program
//   1 FreezeLookupTable      u32 1                   accounts: 0 table (w) · 1 authority (s)
//   2 ExtendLookupTable      u32 2 ‖ len u64 ‖ len × 32-byte address
//                            accounts: 0 table (w) · 1 authority (s) · 2 payer (w, s) · 3 system program
//   3 DeactivateLookupTable  u32 3                   accounts: 0 table (w) · 1 authority (s)
//   4 CloseLookupTable       u32 4                   accounts: 0 table (w) · 1 authority (s) · 2 recipient (w)

export const ALT_PROGRAM_ID = Buffer.from(bs58.decode('AddressLookupTab1e1111111111111111111111111'));

/** state.rs LOOKUP_TABLE_MAX_ADDRESSES: a table never holds more (the u8 index could not name them). */
export const LOOKUP_TABLE_MAX_ADDRESSES = 256;
/** solana-slot-hashes MAX_ENTRIES: how many recent slots the SlotHashes sysvar keeps (a deactivating table's
 *  cool-down is measured in it). */
export const SLOT_HASHES_MAX_ENTRIES = 512;
/** Slot::MAX, the deactivation slot of an active table. */
export const SLOT_MAX = 0xffff_ffff_ffff_ffffn;

const PUBKEY_SZ = 32;

export type AltInstruction =
  | { kind: 'create'; recentSlot: bigint; bumpSeed: number }
  | { kind: 'freeze' }
  | { kind: 'extend'; addresses: Buffer }
  | { kind: 'deactivate' }
  | { kind: 'close' };

/** The instruction in `data`, or null when it is none the program accepts (the chain fails such a transaction). */
export function decodeAltInstruction(data: Uint8Array): AltInstruction | null {
  if (data.length < 4) return null;
  const b = Buffer.from(data.buffer, data.byteOffset, data.length);
  const variant = b.readUInt32LE(0);
  switch (variant) {
    case 0:
      if (b.length < 4 + 8 + 1) return null;
      return { kind: 'create', recentSlot: b.readBigUInt64LE(4), bumpSeed: b[12]! };
    case 1:
      return { kind: 'freeze' };
    case 2: {
      if (b.length < 12) return null;
      const n = b.readBigUInt64LE(4);
      // The processor refuses an empty extension and one past the table's capacity.
      if (n === 0n || n > BigInt(LOOKUP_TABLE_MAX_ADDRESSES)) return null;
      const end = 12 + Number(n) * PUBKEY_SZ;
      if (end > b.length) return null;
      return { kind: 'extend', addresses: b.subarray(12, end) };
    }
    case 3:
      return { kind: 'deactivate' };
    case 4:
      return { kind: 'close' };
    default:
      return null;
  }
}

/** Instruction data for the local chain and tests (the inverse of decodeAltInstruction). */
export function encodeAltInstruction(ix: AltInstruction): Buffer {
  switch (ix.kind) {
    case 'create': {
      const b = Buffer.alloc(13);
      b.writeUInt32LE(0, 0);
      b.writeBigUInt64LE(ix.recentSlot, 4);
      b[12] = ix.bumpSeed;
      return b;
    }
    case 'extend': {
      const b = Buffer.alloc(12 + ix.addresses.length);
      b.writeUInt32LE(2, 0);
      b.writeBigUInt64LE(BigInt(ix.addresses.length / PUBKEY_SZ), 4);
      ix.addresses.copy(b, 12);
      return b;
    }
    default: {
      const b = Buffer.alloc(4);
      b.writeUInt32LE({ freeze: 1, deactivate: 3, close: 4 }[ix.kind], 0);
      return b;
    }
  }
}
