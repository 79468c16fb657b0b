import assert from 'node:assert/strict';
import fs from 'node:fs';
import { Writable } from 'node:stream';
import bs58 from 'bs58';
import { EmbeddedBus } from '../../bus/embedded';
import type { ProduceRecord } from '../../bus/bus';
import { decodeEntryRecord, encodeEntryRecord, entryKey, entryTxKeys, type EntryRecord, type EntryRecordInit } from '../../bus/topics/stream-entries';
import { SlotEntryIndex } from '../../ingest/entry/slot-entry-index';
import { withReadableTopics } from '../../ingest/worker';
import { createLogger } from '../../infra/base/log';
import { quietLog } from '../fanout/support';
import { decodeTransaction } from '../../proto/txn/decode';
import { DEMO, loadGolden, TURBINE, type GoldenBatch } from './support/golden';
import { runCapture, type CaptureRun } from './support/run-capture';

// stream.entries as ingest publishes it: one record per decoded entry, checked against the golden decodes of the
// real turbine capture and the demo slot (fixtures/shreds/*.expected.json, written independently of this code):
// num_hashes, hash, transaction count, signatures, each transaction's wire bytes and static keys, and the entry's
// position in its slot.

const TOPICS = { transactions: 'test.tx', slots: 'test.slots', entries: 'test.entries' };

/** Every published entry, the ticks a record carries before its own entry expanded in place (each with the key
 *  and position a record of its own would have had). */
function publishedEntries(run: CaptureRun): Array<{ key: Buffer; record: EntryRecord }> {
  const out: Array<{ key: Buffer; record: EntryRecord }> = [];
  for (const r of publishedRecords(run)) {
    const d = decodeEntryRecord(r.value!);
    assert.ok(d.ok, d.ok ? '' : d.reason);
    const e = d.record;
    const k = e.ticks.length;
    assert.equal(r.value![0], k > 0 ? 2 : 1, 'VERSION 2 exactly when the record carries ticks');
    e.ticks.forEach((t, i) => {
      const at = e.indexInBatch - k + i;
      out.push({
        key: entryKey(e.slot, e.batchFirstShred, at),
        record: { ...e, index: e.index === null ? null : { entry: e.index.entry - k + i, firstTx: e.index.firstTx }, indexInBatch: at, numHashes: t.numHashes, hash: t.hash, signatures: Buffer.alloc(0), txs: [], ticks: [] },
      });
    });
    out.push({ key: r.key!, record: e });
  }
  return out;
}

function publishedRecords(run: CaptureRun): ProduceRecord[] {
  return run.produces.filter((p) => p.topic === TOPICS.entries).flatMap((p) => p.records);
}

/** Records ingest should publish for the golden batches: one per entry with transactions, one per batch that ends
 *  in a tick (its trailing run); every other tick rides in the next entry's record. */
function expectedRecords(golden: GoldenBatch[]): number {
  return golden.reduce((n, b) => n + b.entries.filter((e) => e.txs.length > 0).length + (b.entries.length > 0 && b.entries[b.entries.length - 1]!.txs.length === 0 ? 1 : 0), 0);
}

/** Every published entry equals its golden entry, field by field; the wire bytes decode to the golden transaction. */
function checkAgainstGolden(got: Array<{ key: Buffer; record: EntryRecord }>, golden: GoldenBatch[]): void {
  const want = golden.flatMap((b) => b.entries.map((e, i) => ({ b, e, i })));
  assert.equal(got.length, want.length, 'one record per golden entry');
  const byPos = new Map(got.map((g) => [`${g.record.batchFirstShred}/${g.record.indexInBatch}`, g]));
  for (const { b, e, i } of want) {
    const g = byPos.get(`${b.first_shred}/${i}`);
    assert.ok(g !== undefined, `entry ${i} of batch ${b.first_shred}`);
    const r = g.record;
    assert.equal(r.slot, BigInt(b.slot));
    assert.equal(r.numHashes, BigInt(e.num_hashes));
    assert.equal(bs58.encode(r.hash), e.hash);
    assert.equal(r.txs.length, e.txs.length, 'transaction count');
    const sigs: string[] = [];
    for (let t = 0; t < r.txs.length; t++) sigs.push(bs58.encode(r.signatures.subarray(t * 64, t * 64 + 64)));
    assert.deepEqual(sigs, e.txs.map((t) => t.signatures[0]), 'signatures');
    r.txs.forEach((x, t) => {
      const gt = e.txs[t]!;
      assert.equal(x.wire.length, gt.wire_len, 'wire length');
      const d = decodeTransaction(Buffer.from(x.wire), r.slot);
      assert.ok(d.ok && d.wireLen === x.wire.length, 'the wire bytes are one whole transaction');
      assert.deepEqual(d.tx.signatures.map((s) => bs58.encode(s)), gt.signatures);
      const keys: string[] = [];
      const k = entryTxKeys(x);
      for (let o = 0; o < k.length; o += 32) keys.push(bs58.encode(k.subarray(o, o + 32)));
      assert.deepEqual(keys, gt.account_keys, 'static keys located in the wire bytes');
    });
    // key = slot ‖ batch first shred ‖ index in batch
    assert.equal(g.key.readBigUInt64BE(0), BigInt(b.slot));
    assert.equal(g.key.readUInt32BE(8), b.first_shred);
    assert.equal(g.key.readUInt32BE(12), i);
  }
}

describe('ingest: stream.entries records', () => {
  it('the demo slot: 64 entries with their counts, signatures and wire bytes, numbered from the slot start', async () => {
    const golden = loadGolden(DEMO.expected).entry_batches;
    const run = await runCapture(DEMO.capture, DEMO.shredVersion, fs.readFileSync(DEMO.key).subarray(32, 64), TOPICS);
    const got = publishedEntries(run);
    checkAgainstGolden(got, golden);
    assert.equal(publishedRecords(run).length, expectedRecords(golden), 'ticks ride in the next entry\'s record');
    // One batch from shred 0: every entry's slot-wide index and first transaction index are known.
    let tx = 0;
    got.forEach((g, i) => {
      assert.deepEqual(g.record.index, { entry: i, firstTx: tx });
      tx += g.record.txs.length;
    });
    assert.equal(tx, 1280);
    // The raw bytes are the transactions' bytes in the deshredded batch, back to back after each entry header.
    const payload = fs.readFileSync(DEMO.entries);
    const first = got.find((g) => g.record.txs.length > 0)!.record.txs[0]!.wire;
    assert.ok(payload.indexOf(first) > 0);
    // Entries go out after the batch's transactions (one produce each).
    const topics = run.produces.map((p) => p.topic);
    assert.deepEqual(topics.filter((t) => t !== TOPICS.slots), [TOPICS.transactions, TOPICS.entries]);
  });

  it('the real turbine capture (joined mid-slot at shred 320): every entry published, positions exact, slot-wide index unknown', async () => {
    const golden = loadGolden(TURBINE.expected).entry_batches;
    const run = await runCapture(TURBINE.capture, TURBINE.shredVersion, TURBINE.leader, TOPICS);
    const got = publishedEntries(run);
    checkAgainstGolden(got, golden);
    assert.equal(got.length, 12 + 14 + 10 + 11 + 2);
    assert.equal(publishedRecords(run).length, expectedRecords(golden));
    assert.ok(publishedRecords(run).length < got.length, 'fewer records than entries: ticks ride along');
    assert.ok(got.every((g) => g.record.index === null), 'batches before shred 320 were never seen: no slot-wide index');
    // Tick-only batches are published too (the last golden batch has no transactions): its two ticks in one record.
    assert.equal(got.filter((g) => g.record.batchFirstShred === 448).length, 2);
    assert.equal(publishedRecords(run).filter((r) => r.key!.readUInt32BE(8) === 448).length, 1);
  });

  it('without an entries topic, ingest publishes no entry records (as before)', async () => {
    const run = await runCapture(DEMO.capture, DEMO.shredVersion, fs.readFileSync(DEMO.key).subarray(32, 64), { transactions: 'test.tx', slots: 'test.slots' });
    assert.deepEqual([...new Set(run.produces.map((p) => p.topic))].sort(), ['test.slots', 'test.tx']);
  });
});

describe('ingest/entry: SlotEntryIndex', () => {
  it('numbers batches in order from shred 0; an early batch waits without an index and the frontier passes it later', () => {
    const x = new SlotEntryIndex();
    assert.deepEqual(x.place(5n, 0, 31, 3, 10, true), { entry: 0, tx: 0 });
    assert.equal(x.place(5n, 64, 95, 2, 4, true), null, 'batch 32..63 not seen yet');
    assert.deepEqual(x.place(5n, 32, 63, 4, 1, true), { entry: 3, tx: 10 });
    // The frontier passed the waiting 64..95: the next batch is numbered again.
    assert.deepEqual(x.place(5n, 96, 127, 1, 1, true), { entry: 9, tx: 15 });
    // Another slot starts at 0 of its own.
    assert.deepEqual(x.place(6n, 0, 31, 1, 0, true), { entry: 0, tx: 0 });
  });

  it('a batch that failed part-way stops the slot: later batches carry no index, never a wrong one', () => {
    const x = new SlotEntryIndex();
    assert.deepEqual(x.place(7n, 0, 31, 2, 2, false), { entry: 0, tx: 0 });
    assert.equal(x.place(7n, 32, 63, 1, 1, true), null);
    const y = new SlotEntryIndex();
    assert.equal(y.place(8n, 32, 63, 1, 1, false), null, 'broken and early');
    assert.deepEqual(y.place(8n, 0, 31, 1, 1, true), { entry: 0, tx: 0 });
    assert.equal(y.place(8n, 64, 95, 1, 1, true), null, 'the broken batch stopped the frontier');
  });

  it('keeps at most maxSlots slots (the oldest goes)', () => {
    const x = new SlotEntryIndex(4);
    for (let s = 0n; s < 10n; s++) x.place(s, 0, 31, 1, 1, true);
    assert.equal(x.size, 4);
    // Slot 0 was evicted: its next batch starts a new frontier at 0 and is not placed.
    assert.equal(x.place(0n, 32, 63, 1, 1, true), null);
  });
});

describe('bus/topics/stream-entries: codec', () => {
  const rec = (): EntryRecordInit => {
    const wire = Buffer.alloc(200, 3);
    return { slot: 9n, index: { entry: 4, firstTx: 17 }, batchFirstShred: 64, indexInBatch: 2, numHashes: 12_500n, hash: Buffer.alloc(32, 5), observedAtMs: 1_700_000_000_123.25, signatures: Buffer.alloc(128, 6), txs: [{ wire, keysOffset: 68, keyCount: 2 }, { wire: wire.subarray(0, 150), keysOffset: 68, keyCount: 1 }] };
  };

  it('round-trips every field', () => {
    const r = rec();
    const d = decodeEntryRecord(encodeEntryRecord(r));
    assert.ok(d.ok);
    assert.deepEqual({ ...d.record, hash: Buffer.from(d.record.hash), signatures: Buffer.from(d.record.signatures), txs: d.record.txs.map((t) => ({ ...t, wire: Buffer.from(t.wire) })) }, { ...r, ticks: [] });
    const none = decodeEntryRecord(encodeEntryRecord({ ...r, index: null }));
    assert.ok(none.ok && none.record.index === null);
  });

  it('a record without ticks is VERSION 1 as before; with ticks, VERSION 2 with the run after its transactions', () => {
    const r = rec();
    const v1 = encodeEntryRecord(r);
    assert.equal(v1[0], 1);
    assert.deepEqual(encodeEntryRecord({ ...r, ticks: [] }), v1, 'no ticks: the same bytes');
    const ticks = [{ numHashes: 7n, hash: Buffer.alloc(32, 0xa1) }, { numHashes: 12_500n, hash: Buffer.alloc(32, 0xb2) }];
    const v2 = encodeEntryRecord({ ...r, ticks });
    assert.equal(v2[0], 2);
    assert.deepEqual(v2.subarray(1, v1.length), v1.subarray(1), 'the VERSION 1 layout, then the ticks');
    assert.equal(v2.subarray(v1.length).toString('hex'), '02000000' + '0700000000000000' + 'a1'.repeat(32) + 'd430000000000000' + 'b2'.repeat(32));
    const d = decodeEntryRecord(v2);
    assert.ok(d.ok);
    assert.deepEqual(d.record.ticks.map((t) => [t.numHashes, Buffer.from(t.hash)]), ticks.map((t) => [t.numHashes, t.hash]));
    for (let n = v1.length; n < v2.length; n++) assert.equal(decodeEntryRecord(v2.subarray(0, n)).ok, false, `truncated at ${n}`);
    assert.deepEqual(decodeEntryRecord(Buffer.concat([v2, Buffer.alloc(1)])), { ok: false, reason: 'bytes after the last tick' });
    const zero = Buffer.concat([v1, Buffer.alloc(4)]);
    zero[0] = 2;
    assert.deepEqual(decodeEntryRecord(zero), { ok: false, reason: 'no ticks in a version 2 record' });
    const v3 = Buffer.from(v1);
    v3[0] = 3;
    assert.deepEqual(decodeEntryRecord(v3), { ok: false, reason: 'unknown version 3' });
  });

  it('refuses what its lengths do not cover, without throwing', () => {
    const b = encodeEntryRecord(rec());
    for (let n = 0; n < b.length; n++) assert.equal(decodeEntryRecord(b.subarray(0, n)).ok, false, `truncated at ${n}`);
    const bad = Buffer.from(b);
    bad.writeUInt32LE(0xffffffff, 76);
    assert.deepEqual(decodeEntryRecord(bad), { ok: false, reason: 'transaction count past end' });
    const keys = Buffer.from(b);
    keys.writeUInt16LE(100, 80 + 128 + 4); // 100 keys in a 200-byte transaction
    assert.deepEqual(decodeEntryRecord(keys), { ok: false, reason: 'static keys past the transaction' });
    assert.deepEqual(decodeEntryRecord(Buffer.concat([b, Buffer.alloc(1)])), { ok: false, reason: 'bytes after the last transaction' });
  });
});

describe('ingest: a bus without the entries topic', () => {
  it('publishes without entry records (and says so) instead of failing produces that would hold transactions back', async () => {
    const bus = new EmbeddedBus({ log: quietLog() });
    try {
      await bus.createTopics([{ name: 'have.entries', partitions: 1, compacted: false }]);
      const lines: string[] = [];
      const log = createLogger({ level: 'warn', destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) }) });
      const kept = await withReadableTopics(bus, { transactions: 't', slots: 's', entries: 'have.entries' }, log);
      assert.deepEqual(kept, { transactions: 't', slots: 's', entries: 'have.entries' });
      const dropped = await withReadableTopics(bus, { transactions: 't', slots: 's', entries: 'absent.entries' }, log);
      assert.deepEqual(dropped, { transactions: 't', slots: 's' });
      assert.equal(lines.length, 1);
      assert.match(lines[0]!, /entries topic not on the bus/);
      // The slot status topic is optional the same way.
      const noStatus = await withReadableTopics(bus, { transactions: 't', slots: 's', slotStatus: 'absent.status' }, log);
      assert.deepEqual(noStatus, { transactions: 't', slots: 's' });
      assert.equal(lines.length, 2);
      assert.match(lines[1]!, /slot status topic not on the bus/);
    } finally {
      await bus.close();
    }
  });
});
