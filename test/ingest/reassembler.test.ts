import assert from 'node:assert/strict';
import fs from 'node:fs';
import crypto from 'node:crypto';
import fc from 'fast-check';
import { decodeEntryBatch, encodeEntryBatch, type BatchDecode } from '../../ingest/entry/entries';
import { BatchReassembler } from '../../ingest/entry/reassembler';
import type { CompletedFecSet } from '../../ingest/fec-set';
import { fixture } from '../support/paths';
import { setsFor } from './support/sets';

const TXS = ['ballet_txn_transaction1.bin', 'disco_pack_txn2.bin', 'disco_pack_txn5.bin', 'ballet_txn_transaction3.bin'].map((n) => fs.readFileSync(fixture('txns', n)));

/** A batch of `entries` entries with real transactions; big enough to span several sets when entries is large. */
function batch(entries: number, seed = 0): Buffer {
  return encodeEntryBatch(
    Array.from({ length: entries }, (_, i) => ({ numHashes: BigInt(i + seed), hash: crypto.createHash('sha256').update(`${seed}/${i}`).digest(), txs: [TXS[i % 4]!, TXS[(i + seed) % 4]!] })),
  );
}

function reassembler(slotWindow = 8, maxPendingSets?: number): BatchReassembler<BatchDecode> {
  return new BatchReassembler<BatchDecode>({ slotWindow, maxPendingSets, decode: decodeEntryBatch });
}

describe('ingest/entry: batch reassembly', () => {
  it('emits one batch per DATA_COMPLETE run, whatever the arrival order, once', () => {
    const a = batch(40, 1); // spans several sets
    const b = batch(3, 2);
    const setsA = setsFor(9n, 0, a);
    const setsB = setsFor(9n, setsA.length * 32, b, { lastInSlot: true });
    assert.ok(setsA.length >= 3);
    const all = [...setsA, ...setsB];
    const idx = all.map((_, i) => i); // shuffle indexes: counterexamples stay readable
    fc.assert(
      fc.property(fc.shuffledSubarray(idx, { minLength: all.length, maxLength: all.length }), fc.array(fc.nat(all.length - 1), { maxLength: 5 }), (order, dups) => {
        const r = reassembler();
        const out = [...order, ...dups].flatMap((i) => r.push(all[i]!));
        assert.deepEqual(out.map((o) => [o.batch.firstShred, o.batch.lastShred]).sort((x, y) => x[0]! - y[0]!), [[0, setsA.length * 32 - 1], [setsA.length * 32, all.length * 32 - 1]]);
        const byStart = new Map(out.map((o) => [o.batch.firstShred, o]));
        assert.ok(byStart.get(0)!.batch.payload.subarray(0, a.length).equals(a));
        assert.equal(byStart.get(0)!.batch.lastShred, setsA.length * 32 - 1);
        assert.equal(byStart.get(0)!.batch.lastInSlot, false);
        const second = byStart.get(setsA.length * 32)!;
        assert.ok(second.batch.payload.subarray(0, b.length).equals(b));
        assert.equal(second.batch.lastInSlot, true);
        assert.ok(out.every((o) => o.decoded.ok));
        // The first batch starts at fec 0 (always known); the second may have been inferred from a clean decode
        // when it arrived before the set that ends the first.
        assert.equal(byStart.get(0)!.batch.startKnown, true);
        assert.equal(r.stats.duplicateSets, dups.length);
        assert.deepEqual(r.sizes(), { slots: 1, pendingSets: 0 });
        assert.equal(byStart.get(0)!.batch.firstSeenMs, 1000);
      }),
      { numRuns: 300 },
    );
  });

  it('waits while a set of the run is missing', () => {
    const sets = setsFor(3n, 0, batch(40));
    const r = reassembler();
    const out = sets.filter((_, i) => i !== 1).flatMap((s) => r.push(s));
    assert.equal(out.length, 0);
    assert.equal(r.sizes().pendingSets, sets.length - 1);
    const late = r.push(sets[1]!);
    assert.equal(late.length, 1);
    assert.equal(late[0]!.batch.sets, sets.length);
  });

  it('joins mid-slot: a run whose predecessor never came is emitted only if it decodes', () => {
    const first = setsFor(5n, 0, batch(40, 3)); // never delivered
    const next = setsFor(5n, first.length * 32, batch(6, 4));
    const r = reassembler();
    const out = next.flatMap((s) => r.push(s));
    assert.equal(out.length, 1);
    assert.equal(out[0]!.batch.startKnown, false);
    assert.equal(out[0]!.batch.firstShred, first.length * 32);
    assert.equal(r.stats.batchesInferredStart, 1);
    // The tail sets of the undelivered batch alone do not decode as a batch: refused and kept.
    const r2 = reassembler();
    assert.equal(first.slice(1).flatMap((s) => r2.push(s)).length, 0);
    assert.ok(r2.stats.probeRefused >= 1);
    assert.equal(r2.sizes().pendingSets, first.length - 1);
    assert.equal(r2.push(first[0]!).length, 1);
  });

  it('refuses an inferred start that decodes to nothing (a padding set mid-batch)', () => {
    const payload = Buffer.concat([batch(2), Buffer.alloc(32 * 963 * 2)]); // a batch, then two sets of zeros
    const sets = setsFor(6n, 0, payload);
    assert.equal(sets.length, 3);
    const r = reassembler();
    assert.equal(r.push(sets[2]!).length, 0); // all zeros: count 0, decodes "ok" but empty → refused
    assert.equal(r.push(sets[1]!).length, 0);
    const out = r.push(sets[0]!);
    assert.equal(out.length, 1);
    assert.equal(out[0]!.batch.sets, 3);
  });

  it('evicts slots below the window and counts abandoned batches', () => {
    const r = reassembler(4);
    const a = setsFor(10n, 0, batch(40));
    r.push(a[0]!); // slot 10 waits for the rest
    r.push(setsFor(11n, 0, batch(40))[1]!);
    assert.deepEqual(r.sizes(), { slots: 2, pendingSets: 2 });
    assert.equal(r.push(setsFor(20n, 0, batch(1))[0]!).length, 1);
    assert.deepEqual(r.sizes(), { slots: 1, pendingSets: 0 });
    assert.equal(r.stats.abandonedBatches, 2);
    assert.equal(r.stats.abandonedSets, 2);
    assert.equal(r.push(a[1]!).length, 0);
    assert.equal(r.stats.staleSets, 1);
  });

  it('reset() starts over: a much lower slot is not stale, a slot number seen before is not a duplicate', () => {
    const r = reassembler(4);
    const done = setsFor(1000n, 0, batch(1));
    assert.equal(r.push(done[0]!).length, 1);
    const waiting = setsFor(1001n, 0, batch(40));
    r.push(waiting[0]!);
    assert.equal(r.push(setsFor(10n, 0, batch(1))[0]!).length, 0, 'before the reset: below the window');
    assert.equal(r.stats.staleSets, 1);

    r.reset();
    assert.deepEqual(r.sizes(), { slots: 0, pendingSets: 0 });
    assert.equal(r.stats.abandonedSets, 1);
    assert.equal(r.push(setsFor(10n, 0, batch(1, 3))[0]!).length, 1, 'after the reset: a batch like a fresh start');
    const again = setsFor(1000n, 0, batch(2, 4));
    assert.equal(r.push(again[0]!).length, 1, 'slot 1000 again, other content: its old DONE mark is gone');
    assert.equal(r.stats.duplicateSets, 0);
  });

  it('caps the sets waiting in all', () => {
    const r = reassembler(1000, 16);
    for (let slot = 0n; slot < 100n; slot++) for (const s of setsFor(slot, 0, batch(40)).slice(1)) r.push(s);
    assert.ok(r.sizes().pendingSets <= 16);
    assert.ok(r.stats.abandonedSets > 0);
  });

  it('rejects sets that cannot come from the resolver', () => {
    const r = reassembler();
    const s: CompletedFecSet = { ...setsFor(1n, 0, batch(1))[0]!, fecSetIndex: 33 };
    assert.equal(r.push(s).length, 0);
    assert.equal(r.push({ ...s, fecSetIndex: 32 * 1024 }).length, 0);
    assert.equal(r.push({ ...s, fecSetIndex: 0, payloads: [] }).length, 0);
    assert.equal(r.stats.badSets, 3);
  });
});
