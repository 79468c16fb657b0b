import { BlockRefSource, encodeBlockRef } from '../../bus/topics/block-ref';
import type { ParsedMarker } from './block-component';
import type { EntryBatch } from './reassembler';

// Which bank of its slot an entry batch belongs to, as far as the markers seen so far tell (bus/topics/block-ref.ts):
// the UpdateParent's parent for a batch after a seen UpdateParent, else the Header's parent once the Header is seen,
// else the shred header's parent slot. Batches complete out of order, so a batch decoded before its block's markers
// gets the shred's parent only; its place in the slot (first shred) is always exact. State per slot only for slots
// with a marker (tower-era blocks keep none), the oldest dropped past `maxSlots`.

interface SlotMarkers {
  header: { slot: bigint; id: Uint8Array } | null;
  updateParent: { slot: bigint; id: Uint8Array; shred: number } | null;
}

const ZERO_ID = new Uint8Array(32);

export class BlockRefs {
  private readonly slots = new Map<bigint, SlotMarkers>();

  constructor(private readonly maxSlots = 1088) {}

  /** Notes a batch's marker (Header or UpdateParent), if it is one. */
  observe(batch: EntryBatch, marker: ParsedMarker | null): void {
    if (marker === null || (marker.kind !== 'header' && marker.kind !== 'update_parent')) return;
    let s = this.slots.get(batch.slot);
    if (s === undefined) {
      if (this.slots.size >= this.maxSlots) this.slots.delete(this.slots.keys().next().value!);
      this.slots.set(batch.slot, (s = { header: null, updateParent: null }));
    }
    // The first of each kind counts (a second one kills the block; its records keep what was known).
    if (marker.kind === 'header') s.header ??= { slot: marker.parentSlot, id: Buffer.from(marker.parentBlockId) };
    else s.updateParent ??= { slot: marker.parentSlot, id: Buffer.from(marker.parentBlockId), shred: batch.firstShred };
  }

  /** The `blk` header value for a batch's records (one buffer, shared by them). */
  refFor(batch: EntryBatch): Buffer {
    const s = this.slots.get(batch.slot);
    const up = s?.updateParent;
    if (up != null && up.shred <= batch.firstShred) return encodeBlockRef({ source: BlockRefSource.updateParent, batchFirstShred: batch.firstShred, parentSlot: up.slot, parentBlockId: up.id });
    const h = s?.header;
    if (h != null) return encodeBlockRef({ source: BlockRefSource.header, batchFirstShred: batch.firstShred, parentSlot: h.slot, parentBlockId: h.id });
    return encodeBlockRef({ source: BlockRefSource.shred, batchFirstShred: batch.firstShred, parentSlot: batch.slot - BigInt(batch.parentOffset), parentBlockId: ZERO_ID });
  }

  reset(): void {
    this.slots.clear();
  }
}
