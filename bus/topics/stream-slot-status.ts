// stream.slot-status — one record per status a slot reaches: from ingest (what the shreds show) and from a chain
// node's slot notifications when one is configured. stream.slots (first shred seen, 17 bytes) is unchanged; this
// topic carries every status, the first shred included, so one partition holds a slot's ingest statuses in the
// order ingest derived them. A reader that serves statuses keeps each slot's statuses once and in order (the
// record stream may repeat one: redundant ingest, a chain watcher reconnecting).
//
//   key   = slot, u64 BE (8 bytes; sorts like the number; the same key as stream.slots)
//   value:
//   +0   u8   VERSION (1)
//   +1   u64  slot (LE)
//   +9   u8   status (SlotStatusCode below)
//   +10  u8   source (1 = shreds, seen by ingest; 2 = a chain node's notifications)
//   +11  f64  observed-at, ms since epoch (LE)
//   +19  u8   reason length R (0..255; dead only, else 0)
//   +20  R    reason, UTF-8 (why the slot is dead)
//
// Readers ignore records of another version or an unknown status (a newer writer), and bytes after the reason.

export const SLOT_STATUS_RECORD_VERSION = 1;
export const SLOT_STATUS_HEADER_SZ = 20;
export const MAX_REASON_BYTES = 255;

/**
 * Status codes on the bus; the numbers are proto/stream_v2.proto's SlotStatus values (so the fanout forwards them
 * as they are). Their numeric order is not the order a slot goes through them: see SLOT_STATUS_RANK.
 */
export const SlotStatusCode = {
  firstShredReceived: 1,
  /** Every data shred of the slot is present (received or rebuilt), up to the one flagged LAST_IN_SLOT. */
  completed: 2,
  processed: 3,
  confirmed: 4,
  finalized: 5,
  dead: 6,
  /** Every entry batch of the slot decoded, through the batch that ends on the last shred in slot. */
  decoded: 7,
} as const;
export type SlotStatusCode = (typeof SlotStatusCode)[keyof typeof SlotStatusCode];

/** The order a slot goes through its statuses (dead ends a slot; it has no place in this order). */
export const SLOT_STATUS_RANK: Readonly<Record<SlotStatusCode, number>> = {
  [SlotStatusCode.firstShredReceived]: 1,
  [SlotStatusCode.completed]: 2,
  [SlotStatusCode.decoded]: 3,
  [SlotStatusCode.processed]: 4,
  [SlotStatusCode.confirmed]: 5,
  [SlotStatusCode.finalized]: 6,
  [SlotStatusCode.dead]: 7,
};

export const SlotStatusSource = { shreds: 1, chain: 2 } as const;
export type SlotStatusSource = (typeof SlotStatusSource)[keyof typeof SlotStatusSource];

export interface SlotStatusRecord {
  slot: bigint;
  status: SlotStatusCode;
  source: SlotStatusSource;
  observedAtMs: number;
  /** Why the slot is dead; '' otherwise. */
  reason: string;
}

function isStatus(v: number): v is SlotStatusCode {
  return v >= 1 && v <= 7;
}

export function encodeSlotStatusRecord(r: SlotStatusRecord): Buffer {
  let reason = Buffer.from(r.reason, 'utf8');
  // Cut on a character boundary: a reason is for people, and a split UTF-8 sequence would decode as U+FFFD.
  if (reason.length > MAX_REASON_BYTES) reason = Buffer.from(reason.subarray(0, MAX_REASON_BYTES).toString('utf8').replace(/\uFFFD+$/, ''), 'utf8');
  const out = Buffer.allocUnsafe(SLOT_STATUS_HEADER_SZ + reason.length);
  out[0] = SLOT_STATUS_RECORD_VERSION;
  out.writeBigUInt64LE(r.slot, 1);
  out[9] = r.status;
  out[10] = r.source;
  out.writeDoubleLE(r.observedAtMs, 11);
  out[19] = reason.length;
  reason.copy(out, SLOT_STATUS_HEADER_SZ);
  return out;
}

export function decodeSlotStatusRecord(value: Buffer): SlotStatusRecord | null {
  if (value.length < SLOT_STATUS_HEADER_SZ || value[0] !== SLOT_STATUS_RECORD_VERSION) return null;
  const status = value[9]!;
  const source = value[10]!;
  const reasonLen = value[19]!;
  if (!isStatus(status) || (source !== SlotStatusSource.shreds && source !== SlotStatusSource.chain) || value.length < SLOT_STATUS_HEADER_SZ + reasonLen) return null;
  return {
    slot: value.readBigUInt64LE(1),
    status,
    source,
    observedAtMs: value.readDoubleLE(11),
    reason: value.toString('utf8', SLOT_STATUS_HEADER_SZ, SLOT_STATUS_HEADER_SZ + reasonLen),
  };
}
