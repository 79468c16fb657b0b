// Record header `blk` on stream.transactions and stream.entries: which block a record's transaction or entry belongs
// to, as far as ingest knew when it published it. An Alpenglow block is (slot, block_id), and its id covers every FEC
// set, so it is known only when the block completes (it comes with SLOT_DECODED on stream.slot-status); until then
// the slot and the parent its Header — or, after an UpdateParent, the UpdateParent — named identify the bank the
// record belongs to. A header, not a value field: the value layouts stay as they are (older readers ignore headers).
// One value per entry batch, shared by its records.
//
//   +0   u8    version (1)
//   +1   u8    source: 0 = only the shred header's parent slot is known (tower-era blocks, or the block's Header
//              not seen yet), 1 = the block's Header, 2 = the block's UpdateParent (the batch is after it)
//   +2   u32   first data shred of the record's entry batch (LE): its place in the slot
//   +6   u64   parent slot (LE)
//   +14  [32]  parent block id (zeros when source = 0)
//
// Readers de-duplicate by signature and block with (slot, first shred): a transaction a leader discarded before an
// UpdateParent and included again after it sits at another place in the slot, while redundant feeds of one block
// publish it at the same place.

export const BLOCK_REF_HEADER = 'blk';
export const BLOCK_REF_VERSION = 1;
export const BLOCK_REF_SZ = 46;
export const BLOCK_REF_FIRST_SHRED_OFF = 2;

export enum BlockRefSource {
  shred = 0,
  header = 1,
  updateParent = 2,
}

export interface BlockRef {
  source: BlockRefSource;
  batchFirstShred: number;
  parentSlot: bigint;
  /** 32 bytes; zeros when the source is the shred header. */
  parentBlockId: Uint8Array;
}

export function encodeBlockRef(b: BlockRef): Buffer {
  const out = Buffer.alloc(BLOCK_REF_SZ);
  out[0] = BLOCK_REF_VERSION;
  out[1] = b.source;
  out.writeUInt32LE(b.batchFirstShred, BLOCK_REF_FIRST_SHRED_OFF);
  out.writeBigUInt64LE(b.parentSlot, 6);
  out.set(b.parentBlockId.subarray(0, 32), 14);
  return out;
}

/** null when absent, of another version or malformed (a reader then treats the record as carrying no block). */
export function decodeBlockRef(v: Uint8Array | undefined): BlockRef | null {
  if (v === undefined || v.length < BLOCK_REF_SZ || v[0] !== BLOCK_REF_VERSION || v[1]! > BlockRefSource.updateParent) return null;
  const b = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  return { source: v[1]!, batchFirstShred: b.readUInt32LE(BLOCK_REF_FIRST_SHRED_OFF), parentSlot: b.readBigUInt64LE(6), parentBlockId: b.subarray(14, 46) };
}

/** Sets `r.block` from a record's headers (when it has the `blk` header): the readers' one hook. */
export function withBlockRef<T extends { block?: BlockRef | null }>(r: T, headers: Readonly<Record<string, Buffer>> | undefined): T {
  const v = headers?.[BLOCK_REF_HEADER];
  if (v !== undefined) r.block = decodeBlockRef(v);
  return r;
}
