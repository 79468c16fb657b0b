// stream.slots — one record the first time ingest sees a valid shred of a slot.
//
//   key   = slot, u64 BE (8 bytes; sorts like the number)
//   value:
//   +0   u8   VERSION (1)
//   +1   u64  slot (LE)
//   +9   f64  first-seen, ms since epoch (LE)

export const SLOT_RECORD_VERSION = 1;
export const SLOT_RECORD_SZ = 17;

export interface SlotRecord {
  slot: bigint;
  firstSeenMs: number;
}

export function slotKey(slot: bigint): Buffer {
  const k = Buffer.allocUnsafe(8);
  k.writeBigUInt64BE(slot);
  return k;
}

export function encodeSlotRecord(r: SlotRecord): Buffer {
  const out = Buffer.allocUnsafe(SLOT_RECORD_SZ);
  out[0] = SLOT_RECORD_VERSION;
  out.writeBigUInt64LE(r.slot, 1);
  out.writeDoubleLE(r.firstSeenMs, 9);
  return out;
}

export function decodeSlotRecord(value: Buffer): SlotRecord | null {
  if (value.length < SLOT_RECORD_SZ || value[0] !== SLOT_RECORD_VERSION) return null;
  return { slot: value.readBigUInt64LE(1), firstSeenMs: value.readDoubleLE(9) };
}
