import assert from 'node:assert/strict';
import fs from 'node:fs';
import bs58 from 'bs58';
import { decodeSlotRecord } from '../../bus/topics/stream-slots';
import { decodeTxRecord } from '../../bus/topics/stream-transactions';
import { factsHeaderOf } from '../../bus/topics/stream-transactions-facts';
import { decodeLookupsHeader, lookupsHeaderOf } from '../../bus/topics/stream-transactions-lookups';
import { TxFacts } from '../../fanout/filter/tx-facts';
import { SubscribeResponseTransaction } from '../../proto/gen/arpc_pb';
import { DEMO, loadGolden, toGoldenTx, TURBINE, type GoldenBatch, type GoldenTx } from './support/golden';
import { runCapture, TEST_TOPICS, type CaptureRun } from './support/run-capture';

/** A published stream.transactions record, decoded with the generated protobuf classes, in the golden shape. */
function recordToGolden(value: Buffer): { tx: Omit<GoldenTx, 'wire_len' | 'version'> & { versioned: boolean | undefined }; slot: bigint; observedAtMs: number; staticKeys: string[] } {
  const r = decodeTxRecord(value);
  assert.ok(r.ok);
  const m = SubscribeResponseTransaction.deserializeBinary(r.record.message);
  const keys = m.getAccountKeysList_asU8().map((k) => bs58.encode(k));
  const staticKeys: string[] = [];
  for (let i = 0; i < r.record.accountKeys.length; i += 32) staticKeys.push(bs58.encode(r.record.accountKeys.subarray(i, i + 32)));
  return {
    slot: r.record.slot,
    observedAtMs: r.record.observedAtMs,
    staticKeys,
    tx: {
      signatures: m.getSignaturesList_asU8().map((s) => bs58.encode(s)),
      header: [m.getNumRequiredSignatures(), m.getNumReadonlySignedAccounts(), m.getNumReadonlyUnsignedAccounts()],
      account_keys: keys,
      recent_blockhash: bs58.encode(m.getRecentBlockhash_asU8()),
      num_instructions: m.getInstructionsList().length,
      program_ids: m.getInstructionsList().map((ix) => keys[ix.getProgramIdIndex()]!),
      alt_lookups: m.getAddressTableLookupsList().map((l) => ({
        account_key: bs58.encode(l.getAccountKey_asU8()),
        writable_indexes: [...l.getWritableIndexes_asU8()],
        readonly_indexes: [...l.getReadonlyIndexes_asU8()],
      })),
      versioned: m.hasVersioned() ? m.getVersioned()!.getValue() : undefined,
    },
  };
}

function factsOf(t: TxFacts): unknown {
  return { nReq: t.numRequiredSignatures, roS: t.numReadonlySigned, roU: t.numReadonlyUnsigned, sigOff: t.signatureOff, sigCount: t.signatureCount, legacy: t.legacy, bad: t.bad, ix: Array.from({ length: t.ixCount }, (_v, i) => [t.ixProgram[i], t.ixDataOff[i], t.ixDataLen[i]]) };
}

function checkBatches(run: CaptureRun, golden: GoldenBatch[]): void {
  assert.equal(run.outputs.length, golden.length);
  const byFirst = [...run.outputs].sort((a, b) => a.batch.firstShred - b.batch.firstShred);
  byFirst.forEach((o, i) => {
    const g = golden[i]!;
    const what = `batch ${g.first_shred}..${g.last_shred}`;
    assert.equal(o.batch.slot, BigInt(g.slot), what);
    assert.equal(o.batch.firstShred, g.first_shred, what);
    assert.equal(o.batch.lastShred, g.last_shred, what);
    assert.equal(o.batch.lastInSlot, g.last_in_slot, what);
    assert.equal(o.batch.payload.length, g.payload_bytes, what);
    assert.ok(o.decode.ok, what);
    assert.equal(o.decode.consumed, g.consumed_bytes, what);
    assert.equal(o.decode.trailingZeros, g.trailing_zero_bytes, what);
    assert.equal(o.entries.length, g.num_entries, what);
    assert.deepEqual(
      o.entries.map((e) => ({ num_hashes: Number(e.numHashes), hash: bs58.encode(e.hash), txs: e.txs.map(toGoldenTx) })),
      g.entries,
      what,
    );
  });
}

function checkPublished(run: CaptureRun, golden: GoldenBatch[]): void {
  const txProduces = run.produces.filter((p) => p.topic === TEST_TOPICS.transactions);
  const withTxs = golden.filter((b) => b.entries.some((e) => e.txs.length > 0));
  assert.equal(txProduces.length, withTxs.length, 'one produce per batch that carries transactions');
  // Each produce carries exactly one golden batch's transactions, in order.
  let withLookups = 0;
  const goldenByFirstSig = new Map(withTxs.map((b) => [b.entries.flatMap((e) => e.txs)[0]!.signatures[0]!, b]));
  for (const p of txProduces) {
    const got = p.records.map((rec) => {
      const g = recordToGolden(rec.value!);
      assert.equal(bs58.encode(rec.key!), g.tx.signatures[0], 'key = signatures[0]');
      assert.deepEqual(g.staticKeys, g.tx.account_keys, 'record header carries the static keys');
      assert.equal(g.slot, BigInt(golden[0]!.slot));
      // The lookups header carries what the message carries (an empty list for a legacy transaction).
      const h = lookupsHeaderOf(rec.headers);
      assert.ok(h !== null, 'every record has the lookups header');
      const lookups = decodeLookupsHeader(h);
      assert.deepEqual(
        lookups?.map((l) => ({ account_key: bs58.encode(l.table), writable_indexes: [...l.writableIndexes], readonly_indexes: [...l.readonlyIndexes] })),
        g.tx.alt_lookups,
        'lookups header = the message\'s lookups',
      );
      withLookups += g.tx.alt_lookups.length > 0 ? 1 : 0;
      // The facts header says what the fanout would read of the message (fanout/filter/tx-facts.ts).
      const facts = factsHeaderOf(rec.headers);
      assert.ok(facts !== null, 'every record has the facts header');
      const d = decodeTxRecord(rec.value!, rec.headers);
      assert.ok(d.ok && d.record.facts === facts);
      const fromHeader = new TxFacts();
      assert.equal(fromHeader.fromHeader(d.record.accountKeys, d.record.accountKeys.length, d.record.message, facts), true);
      const read = new TxFacts().read(d.record.accountKeys, d.record.accountKeys.length, d.record.message);
      assert.deepEqual(factsOf(fromHeader), factsOf(read), 'facts header = what the message says');
      return g.tx;
    });
    assert.ok(got.length > 0);
    const batch = goldenByFirstSig.get(got[0]!.signatures[0]!);
    assert.ok(batch !== undefined, 'produce matches a golden batch');
    goldenByFirstSig.delete(got[0]!.signatures[0]!);
    const want = batch.entries.flatMap((e) => e.txs).map(({ wire_len: _w, version, ...f }) => ({ ...f, versioned: version === 0 }));
    assert.deepEqual(got, want);
  }
  assert.equal(goldenByFirstSig.size, 0, 'every golden batch published');
  assert.equal(withLookups, golden.flatMap((b) => b.entries.flatMap((e) => e.txs)).filter((t) => t.alt_lookups.length > 0).length);
  const slotProduces = run.produces.filter((p) => p.topic === TEST_TOPICS.slots);
  assert.equal(slotProduces.length, 1);
  assert.equal(slotProduces[0]!.records.length, 1);
  assert.equal(decodeSlotRecord(slotProduces[0]!.records[0]!.value!)?.slot, BigInt(golden[0]!.slot));
}

describe('ingest pipeline: golden captures', () => {
  it('turns the real turbine capture into exactly the 5 golden batches, and publishes them', async () => {
    const golden = loadGolden(TURBINE.expected);
    assert.equal(golden.entry_batches.length, 5);
    const run = await runCapture(TURBINE.capture, TURBINE.shredVersion, TURBINE.leader);
    const s = run.pipeline.stats();
    assert.equal(s.packets, golden.num_packets);
    assert.equal(s.setsCompleted, golden.fec_sets.length);
    assert.equal(s.setsRecovered, 5); // 1–5 data shreds missing in every set
    assert.equal(s.drops.signature + s.drops.merkle_proof + s.drops.internal, 0);
    checkBatches(run, golden.entry_batches);
    assert.deepEqual(run.slots, [385970984n]);
    checkPublished(run, golden.entry_batches);
    const published = run.produces.filter((p) => p.topic === TEST_TOPICS.transactions).flatMap((p) => p.records.map((r) => bs58.encode(r.key!)));
    const goldenSigs = golden.entry_batches.flatMap((b) => b.entries.flatMap((e) => e.txs.map((t) => t.signatures[0]!)));
    assert.equal(published.length, 63);
    assert.deepEqual([...published].sort(), [...goldenSigs].sort());
    assert.equal(new Set(published).size, published.length, 'each signature once');
    // observed-at = the batch's first shred arrival (the synthetic clock of runCapture)
    const first = recordToGolden(run.produces.find((p) => p.topic === TEST_TOPICS.transactions)!.records[0]!.value!);
    assert.ok(first.observedAtMs >= 1_700_000_000_000 && first.observedAtMs < 1_700_000_000_000 + golden.num_packets);
  });

  it('deshreds the demo pcap to demo-shreds.entries.bin byte for byte, and to its golden', async () => {
    const golden = loadGolden(DEMO.expected);
    const leader = fs.readFileSync(DEMO.key).subarray(32, 64);
    const run = await runCapture(DEMO.capture, DEMO.shredVersion, leader);
    assert.equal(run.outputs.length, 1);
    assert.ok(run.outputs[0]!.batch.payload.equals(fs.readFileSync(DEMO.entries)));
    checkBatches(run, golden.entry_batches);
    checkPublished(run, golden.entry_batches);
    assert.deepEqual(run.slots, [0n]);
  });

  it('drops everything when the leader key is wrong (no batch, no slot)', async () => {
    const run = await runCapture(TURBINE.capture, TURBINE.shredVersion, Buffer.alloc(32, 1));
    assert.equal(run.outputs.length, 0);
    assert.equal(run.slots.length, 0);
    assert.equal(run.produces.length, 0);
    assert.ok(run.pipeline.stats().drops.signature > 0);
  });
});
