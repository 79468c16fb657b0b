import assert from 'node:assert/strict';
import { BlockRefSource, decodeBlockRef, encodeBlockRef } from '../../bus/topics/block-ref';
import { BlockRefs } from '../../ingest/entry/block-ref';
import type { ParsedMarker } from '../../ingest/entry/block-component';
import type { EntryBatch } from '../../ingest/entry/reassembler';

// The block a batch's records name, as far as the markers seen so far tell (ingest/entry/block-ref.ts): batches
// complete out of order, so what a record says depends on what came before it, while its place is always exact.

const SLOT = 1000n;
const batch = (firstShred: number, slot = SLOT): EntryBatch => ({ slot, parentOffset: 1, firstShred, lastShred: firstShred + 31, sets: 1, payload: Buffer.alloc(0), lastInSlot: false, startKnown: true, firstSeenMs: 0, completedMs: 0 });
const header: ParsedMarker = { kind: 'header', byteLen: 0, parentSlot: SLOT - 1n, parentBlockId: Buffer.alloc(32, 0xa1) };
const up: ParsedMarker = { kind: 'update_parent', byteLen: 0, parentSlot: SLOT - 3n, parentBlockId: Buffer.alloc(32, 0xb2) };

describe('ingest: block references per batch', () => {
  it('the codec round-trips and refuses what it cannot read', () => {
    const b = { source: BlockRefSource.updateParent, batchFirstShred: 96, parentSlot: 7n, parentBlockId: Buffer.alloc(32, 3) };
    const d = decodeBlockRef(encodeBlockRef(b))!;
    assert.deepEqual({ ...d, parentBlockId: Buffer.from(d.parentBlockId) }, b);
    const bad = encodeBlockRef(b);
    bad[0] = 2;
    assert.equal(decodeBlockRef(bad), null, 'another version');
    assert.equal(decodeBlockRef(bad.subarray(0, 45)), null, 'short');
    assert.equal(decodeBlockRef(undefined), null);
  });

  it('names the shred parent before any marker, the header\u2019s parent after it, the UpdateParent\u2019s for batches after it once seen', () => {
    const r = new BlockRefs();
    const at = (fec: number) => decodeBlockRef(r.refFor(batch(fec)))!;
    // Out of order: a batch after the (not yet seen) UpdateParent comes first.
    assert.equal(at(96).source, BlockRefSource.shred);
    assert.equal(at(96).parentSlot, SLOT - 1n);
    assert.deepEqual(Buffer.from(at(96).parentBlockId), Buffer.alloc(32));
    r.observe(batch(0), header);
    assert.equal(at(32).source, BlockRefSource.header);
    assert.deepEqual(Buffer.from(at(32).parentBlockId), Buffer.alloc(32, 0xa1));
    assert.equal(at(96).source, BlockRefSource.header, 'the UpdateParent is not known yet');
    r.observe(batch(64), up);
    assert.equal(at(32).source, BlockRefSource.header, 'before the UpdateParent: the abandoned bank');
    assert.equal(at(96).source, BlockRefSource.updateParent);
    assert.equal(at(96).parentSlot, SLOT - 3n);
    assert.equal(at(96).batchFirstShred, 96, 'the place in the slot is always exact');
    assert.deepEqual(Buffer.from(at(96).parentBlockId), Buffer.alloc(32, 0xb2));
    // Another slot keeps its own state; tower-era slots keep none.
    assert.equal(decodeBlockRef(r.refFor(batch(0, SLOT + 1n)))!.source, BlockRefSource.shred);
  });

  it('keeps at most maxSlots slots (the oldest dropped)', () => {
    const r = new BlockRefs(2);
    for (const s of [1n, 2n, 3n]) r.observe(batch(0, s), header);
    assert.equal(decodeBlockRef(r.refFor(batch(32, 1n)))!.source, BlockRefSource.shred, 'slot 1 dropped');
    assert.equal(decodeBlockRef(r.refFor(batch(32, 3n)))!.source, BlockRefSource.header);
  });
});
