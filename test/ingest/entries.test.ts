import assert from 'node:assert/strict';
import fs from 'node:fs';
import bs58 from 'bs58';
import fc from 'fast-check';
import { decodeEntryBatch, encodeEntryBatch, ENTRY_REASONS } from '../../ingest/entry/entries';
import { fixture } from '../support/paths';
import { DEMO, loadGolden, toGoldenTx } from './support/golden';

const tx = (name: string): Buffer => fs.readFileSync(fixture('txns', name));
const HASH = Buffer.alloc(32, 7);

describe('ingest/entry: bincode Vec<Entry>', () => {
  it('decodes demo-shreds.entries.bin to its golden entries', () => {
    const golden = loadGolden(DEMO.expected).entry_batches;
    assert.equal(golden.length, 1);
    const g = golden[0]!;
    const bytes = fs.readFileSync(DEMO.entries);
    const r = decodeEntryBatch(bytes, 0n);
    assert.ok(r.ok);
    assert.equal(bytes.length, g.payload_bytes);
    assert.equal(r.consumed, g.consumed_bytes);
    assert.equal(r.trailingZeros, g.trailing_zero_bytes);
    assert.equal(r.entries.length, g.num_entries);
    assert.equal(r.entries.length, 64);
    r.entries.forEach((e, i) => {
      const ge = g.entries[i]!;
      assert.equal(e.numHashes, BigInt(ge.num_hashes));
      assert.equal(bs58.encode(e.hash), ge.hash);
      assert.equal(e.txs.length, ge.txs.length);
      assert.deepEqual(e.txs.map(toGoldenTx), ge.txs);
    });
  });

  it('round-trips real transactions through the encoder', () => {
    const txs = [tx('ballet_txn_transaction1.bin'), tx('disco_pack_txn2.bin'), tx('ballet_txn_transaction4.bin')];
    const bytes = encodeEntryBatch([
      { numHashes: 12n, hash: HASH, txs: [] },
      { numHashes: 2n ** 40n, hash: HASH, txs },
    ]);
    const r = decodeEntryBatch(bytes, 5n);
    assert.ok(r.ok);
    assert.equal(r.entries.length, 2);
    assert.equal(r.entries[0]!.txs.length, 0);
    assert.equal(r.entries[1]!.numHashes, 2n ** 40n);
    assert.deepEqual(r.entries[1]!.txs.map((t) => t.wireLen), txs.map((t) => t.length));
    assert.equal(r.consumed, bytes.length);
  });

  it('accepts trailing zero padding and rejects non-zero trailing bytes', () => {
    const bytes = encodeEntryBatch([{ numHashes: 1n, hash: HASH, txs: [tx('disco_pack_txn7.bin')] }]);
    const padded = decodeEntryBatch(Buffer.concat([bytes, Buffer.alloc(25_000)]), 0n);
    assert.ok(padded.ok);
    assert.equal(padded.trailingZeros, 25_000);
    assert.equal(padded.consumed, bytes.length);
    const junk = decodeEntryBatch(Buffer.concat([bytes, Buffer.alloc(100), Buffer.from([1])]), 0n);
    assert.equal(junk.ok, false);
    assert.equal(junk.ok ? '' : junk.reason, 'trailing_garbage');
    assert.equal(junk.entries.length, 1); // the complete entries before the failure are still there
  });

  it('reads a block marker after a zero count as Agave\'s crate does: its byte length is not checked, bytes after it are left unread', () => {
    // UpdateParent: version 1, variant 2, byte length 4 (the payload is 41 bytes: solana-entry 4.2.2 does not check it)
    const payload = Buffer.alloc(41);
    payload[0] = 1;
    payload.writeBigUInt64LE(77n, 1);
    payload.fill(0xab, 9);
    const marker = Buffer.concat([Buffer.from([1, 0, 2, 4, 0]), payload]);
    const r = decodeEntryBatch(Buffer.concat([Buffer.alloc(8), marker, Buffer.alloc(30, 7)]), 0n);
    assert.ok(r.ok);
    assert.equal(r.entries.length, 0);
    assert.deepEqual(r.marker && r.marker.kind === 'update_parent' && { len: r.marker.byteLen, parent: r.marker.parentSlot, id: r.marker.parentBlockId.toString('hex') }, { len: 4, parent: 77n, id: 'ab'.repeat(32) });
    assert.equal(r.consumed, 8 + marker.length);
    const empty = decodeEntryBatch(Buffer.alloc(64), 0n);
    assert.ok(empty.ok);
    assert.equal(empty.marker, null);
    const short = decodeEntryBatch(Buffer.concat([Buffer.alloc(8), Buffer.from([1, 0, 2, 0xff, 0, 1])]), 0n);
    assert.deepEqual(short.ok ? '' : [short.reason, short.markerReason], ['bad_marker', 'marker_payload_truncated']);
  });

  it('checks counts against the bytes left before allocating', () => {
    const huge = Buffer.alloc(64);
    huge.writeBigUInt64LE(2n ** 62n);
    const rh = decodeEntryBatch(huge, 0n);
    assert.equal(rh.ok ? '' : rh.reason, 'bad_entry_count');
    const manyTx = encodeEntryBatch([{ numHashes: 0n, hash: HASH, txs: [] }]);
    manyTx.writeBigUInt64LE(1000n, 8 + 40);
    const r = decodeEntryBatch(manyTx, 0n);
    assert.equal(r.ok ? '' : r.reason, 'bad_tx_count');
    const bad = encodeEntryBatch([{ numHashes: 0n, hash: HASH, txs: [tx('ballet_txn_transaction5.bin')] }]);
    const rb = decodeEntryBatch(bad, 0n);
    assert.equal(rb.ok, false);
    assert.deepEqual(rb.ok ? null : [rb.reason, rb.txReason], ['bad_transaction', 'empty_lookup']);
    assert.equal(decodeEntryBatch(Buffer.alloc(5), 0n).ok, false);
  });

  it('never throws on mutated batches (property)', () => {
    const seed = encodeEntryBatch([
      { numHashes: 3n, hash: HASH, txs: [tx('ballet_txn_transaction2.bin'), tx('disco_pack_txn6.bin')] },
      { numHashes: 0n, hash: HASH, txs: [] },
    ]);
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }), fc.nat(), (muts, cut) => {
        const b = Buffer.from(seed);
        for (const [at, v] of muts) b[at % b.length] = v;
        const r = decodeEntryBatch(b.subarray(0, cut % (b.length + 1)), 0n);
        assert.ok(r.ok || r.reason in ENTRY_REASONS);
      }),
      { numRuns: 5000 },
    );
  });
});
