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
//   then, optional (extension 1, added with Alpenglow blocks; a record without it is a tower-era record, and readers
//   from before it ignore it since they ignore bytes after the reason — the version byte stays 1 for that reason):
//   +0   u8   extension (1 = an Alpenglow block's identity follows)
//   +1   [32] block id (the double Merkle root over the block's FEC-set roots)
//   +33  u64  parent slot (LE) — the parent the block is replayed on
//   +41  [32] parent block id
//   +73  u32  UpdateParent FEC set index (LE); 0xFFFFFFFF = none. Transactions in the sets before it were discarded.
//   +77  [32] footer bank hash
//   +109 u64  footer producer time, ns since epoch (LE)
//   +117 u8   footer certificates carried (ingest/slot-status.ts FOOTER_CERT bits)
//   +118 u8   user agent length U
//   +119 U    user agent bytes
//   then u32 D (LE) and D × [64]: the first signatures of the transactions the UpdateParent discarded (those in
//   the FEC sets before it), in block order; D = 0 without an UpdateParent. At most MAX_DISCARDED listed: a block
//   with more sets bit 0x80 of the certificates byte ("list incomplete": drop by FEC set index from entries).
//
// Readers ignore records of another version or an unknown status (a newer writer), bytes after the reason they do
// not know, and an extension of another number.

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
  /** An Alpenglow block's identity and footer (extension 1); absent on tower-era records. */
  block?: BlockIdentity;
}

export interface BlockIdentity {
  blockId: Buffer;
  parentSlot: bigint;
  parentBlockId: Buffer;
  /** The UpdateParent's FEC set index (the sets before it were discarded), null when the block has none. */
  updateParentFecSetIndex: number | null;
  footer: { bankHash: Buffer; producerTimeNanos: bigint; userAgent: Buffer; certs: number };
  /** n × 64 bytes: the first signatures of the transactions the UpdateParent discarded, in block order. */
  discarded: Buffer;
}

/** The most discarded signatures one record lists (768 KB; a Kafka record's default cap is 1 MB). */
export const MAX_DISCARDED = 12_000;
/** Set in BlockIdentity.footer.certs when more transactions were discarded than the record lists. */
export const DISCARDED_INCOMPLETE = 0x80;

const EXT_BLOCK = 1;
const EXT_BLOCK_FIXED_SZ = 119;
const NO_UPDATE_PARENT = 0xffffffff;

function isStatus(v: number): v is SlotStatusCode {
  return v >= 1 && v <= 7;
}

export function encodeSlotStatusRecord(r: SlotStatusRecord): Buffer {
  let reason = Buffer.from(r.reason, 'utf8');
  // Cut on a character boundary: a reason is for people, and a split UTF-8 sequence would decode as U+FFFD.
  if (reason.length > MAX_REASON_BYTES) reason = Buffer.from(reason.subarray(0, MAX_REASON_BYTES).toString('utf8').replace(/\uFFFD+$/, ''), 'utf8');
  const b = r.block;
  const ua = b === undefined ? null : b.footer.userAgent.subarray(0, 255);
  const discarded = b === undefined ? null : b.discarded.subarray(0, MAX_DISCARDED * 64);
  const extSz = b === undefined ? 0 : EXT_BLOCK_FIXED_SZ + ua!.length + 4 + discarded!.length;
  const out = Buffer.allocUnsafe(SLOT_STATUS_HEADER_SZ + reason.length + extSz);
  out[0] = SLOT_STATUS_RECORD_VERSION;
  out.writeBigUInt64LE(r.slot, 1);
  out[9] = r.status;
  out[10] = r.source;
  out.writeDoubleLE(r.observedAtMs, 11);
  out[19] = reason.length;
  reason.copy(out, SLOT_STATUS_HEADER_SZ);
  if (b !== undefined) {
    const o = SLOT_STATUS_HEADER_SZ + reason.length;
    out[o] = EXT_BLOCK;
    b.blockId.copy(out, o + 1, 0, 32);
    out.writeBigUInt64LE(b.parentSlot, o + 33);
    b.parentBlockId.copy(out, o + 41, 0, 32);
    out.writeUInt32LE(b.updateParentFecSetIndex ?? NO_UPDATE_PARENT, o + 73);
    b.footer.bankHash.copy(out, o + 77, 0, 32);
    out.writeBigUInt64LE(b.footer.producerTimeNanos, o + 109);
    out[o + 117] = b.footer.certs | (discarded!.length < b.discarded.length ? DISCARDED_INCOMPLETE : 0);
    out[o + 118] = ua!.length;
    ua!.copy(out, o + EXT_BLOCK_FIXED_SZ);
    const d = o + EXT_BLOCK_FIXED_SZ + ua!.length;
    out.writeUInt32LE(discarded!.length / 64, d);
    discarded!.copy(out, d + 4);
  }
  return out;
}

function decodeBlockExtension(value: Buffer, o: number): BlockIdentity | undefined {
  if (value.length < o + EXT_BLOCK_FIXED_SZ || value[o] !== EXT_BLOCK) return undefined;
  const uaLen = value[o + 118]!;
  const d = o + EXT_BLOCK_FIXED_SZ + uaLen;
  if (value.length < d + 4) return undefined;
  const n = value.readUInt32LE(d);
  if (value.length < d + 4 + n * 64) return undefined;
  const up = value.readUInt32LE(o + 73);
  return {
    blockId: Buffer.from(value.subarray(o + 1, o + 33)),
    parentSlot: value.readBigUInt64LE(o + 33),
    parentBlockId: Buffer.from(value.subarray(o + 41, o + 73)),
    updateParentFecSetIndex: up === NO_UPDATE_PARENT ? null : up,
    footer: {
      bankHash: Buffer.from(value.subarray(o + 77, o + 109)),
      producerTimeNanos: value.readBigUInt64LE(o + 109),
      certs: value[o + 117]!,
      userAgent: Buffer.from(value.subarray(o + EXT_BLOCK_FIXED_SZ, o + EXT_BLOCK_FIXED_SZ + uaLen)),
    },
    discarded: Buffer.from(value.subarray(d + 4, d + 4 + n * 64)),
  };
}

export function decodeSlotStatusRecord(value: Buffer): SlotStatusRecord | null {
  if (value.length < SLOT_STATUS_HEADER_SZ || value[0] !== SLOT_STATUS_RECORD_VERSION) return null;
  const status = value[9]!;
  const source = value[10]!;
  const reasonLen = value[19]!;
  if (!isStatus(status) || (source !== SlotStatusSource.shreds && source !== SlotStatusSource.chain) || value.length < SLOT_STATUS_HEADER_SZ + reasonLen) return null;
  const block = decodeBlockExtension(value, SLOT_STATUS_HEADER_SZ + reasonLen);
  return {
    slot: value.readBigUInt64LE(1),
    status,
    source,
    observedAtMs: value.readDoubleLE(11),
    reason: value.toString('utf8', SLOT_STATUS_HEADER_SZ, SLOT_STATUS_HEADER_SZ + reasonLen),
    ...(block === undefined ? {} : { block }),
  };
}
