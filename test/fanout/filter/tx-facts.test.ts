import assert from 'node:assert/strict';
import bs58 from 'bs58';
import fc from 'fast-check';
import { compileFilters } from '../../../fanout/filter/compile';
import { FilterIndex } from '../../../fanout/filter/filter-index';
import { TxFacts } from '../../../fanout/filter/tx-facts';
import { FieldWalker } from '../../../proto/tx-message-reader';
import type { TxFields } from '../../../proto/tx-fields';
import { encodeFactsHeader, factsHeaderOf, FACTS_HEADER } from '../../../bus/topics/stream-transactions-facts';
import { encodeTransaction, encodeTransactionInto, transactionSize } from '../../../proto/wire';
import { fixtureTxs } from '../support';

// TxFacts.read walks a record's message with its varints written out (it runs per matched record); what it reads
// must be what the generic protobuf walker (proto/tx-message-reader.ts FieldWalker) reads of the same bytes —
// header counts, first signature, instructions, version, and whether the message parses at all — for every
// message, well-formed or not: the fixture transactions, every truncation of them, and random corruptions.

/** The facts by FieldWalker: one top-level pass, one inner pass per instruction (a malformed one is left out). */
function reference(keys: Uint8Array, message: Uint8Array): Record<string, unknown> {
  const w = new FieldWalker();
  const iw = new FieldWalker();
  const r = { keyCount: keys.length >>> 5, nReq: 0, roS: 0, roU: 0, sigOff: -1, sigCount: 0, legacy: true, ix: [] as number[][], bad: false };
  w.reset(message, 0, message.length);
  while (w.next()) {
    if (w.wire === 0) {
      if (w.field === 2) r.nReq = w.value;
      else if (w.field === 3) r.roS = w.value;
      else if (w.field === 4) r.roU = w.value;
    } else if (w.wire === 2) {
      if (w.field === 6) {
        if (r.sigCount++ === 0 && w.len === 64) r.sigOff = w.off;
      } else if (w.field === 8) {
        let program = 0;
        let off = w.off + w.len;
        let len = 0;
        iw.reset(message, w.off, w.off + w.len);
        while (iw.next()) {
          if (iw.field === 1 && iw.wire === 0) program = iw.value;
          else if (iw.field === 3 && iw.wire === 2) {
            off = iw.off;
            len = iw.len;
          }
        }
        // An index that is not a small integer names no static key (it is past any of them).
        if (!iw.bad) r.ix.push([Number.isFinite(program) && program <= 0x7fffffff ? program : -1, off, len]);
      } else if (w.field === 10) {
        let v = false;
        for (let i = w.off; i + 1 < w.off + w.len; i += 2)
          if (message[i] === 0x08) {
            v = message[i + 1] !== 0;
            break;
          }
        r.legacy = !v;
      }
    }
  }
  r.bad = w.bad;
  return r;
}

function facts(t: TxFacts): Record<string, unknown> {
  const ix: number[][] = [];
  for (let i = 0; i < t.ixCount; i++) ix.push([t.ixProgram[i]!, t.ixDataOff[i]!, t.ixDataLen[i]!]);
  return { keyCount: t.keyCount, nReq: t.numRequiredSignatures, roS: t.numReadonlySigned, roU: t.numReadonlyUnsigned, sigOff: t.signatureOff, sigCount: t.signatureCount, legacy: t.legacy, ix, bad: t.bad };
}

describe('TxFacts.read (= FieldWalker)', () => {
  const txs = fixtureTxs().map((f) => ({ keys: Buffer.concat(f.fields.accountKeys), message: encodeTransaction(f.fields) }));
  const t = new TxFacts();

  it('reads the fixture transactions, and every truncation of them, as the walker does', () => {
    assert.ok(txs.length > 3);
    let bad = 0;
    for (const x of txs) {
      for (let n = 0; n <= x.message.length; n++) {
        const m = x.message.subarray(0, n);
        const want = reference(x.keys, m);
        assert.deepEqual(facts(t.read(x.keys, x.keys.length, m)), want, `truncated at ${n} of ${x.message.length}`);
        if (want.bad === true) bad++;
      }
      assert.equal(t.read(x.keys, x.keys.length, x.message).bad, false);
    }
    assert.ok(bad > 100, `${bad} truncations are malformed`);
  });

  it('reads randomly corrupted messages as the walker does (over-long varints, unknown wire types, lengths past the end)', () => {
    fc.assert(
      fc.property(fc.nat({ max: txs.length - 1 }), fc.array(fc.record({ at: fc.nat(), byte: fc.oneof(fc.constantFrom(0x80, 0xff, 0x00, 0x07, 0x0b, 0x0e, 0x42, 0x52), fc.nat({ max: 255 })) }), { minLength: 1, maxLength: 4 }), (i, edits) => {
        const x = txs[i]!;
        const m = Buffer.from(x.message);
        for (const e of edits) m[e.at % m.length] = e.byte;
        assert.deepEqual(facts(t.read(x.keys, x.keys.length, m)), reference(x.keys, m));
      }),
      { numRuns: 3000, seed: 38 },
    );
  });

  it('a program_id_index beyond 32 bits names no program (it used to wrap around to a static key)', () => {
    // CompiledInstruction { 1: 2^32 + 1, 3: [7] } beside two static keys: key 1 is the filter's program.
    const keys = Buffer.concat([Buffer.alloc(32, 1), Buffer.alloc(32, 2)]);
    const fields: TxFields = { slot: 1n, numRequiredSignatures: 1, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 1, recentBlockhash: Buffer.alloc(32, 3), signatures: [Buffer.alloc(64, 4)], accountKeys: [keys.subarray(0, 32), keys.subarray(32)], instructions: [], addressTableLookups: [], versioned: false };
    const ix = Buffer.from([0x08, 0x81, 0x80, 0x80, 0x80, 0x10, 0x1a, 0x01, 0x07]);
    const message = Buffer.concat([encodeTransaction(fields), Buffer.from([0x42, ix.length]), ix]);
    assert.deepEqual(facts(t.read(keys, keys.length, message)).ix, [[-1, message.length - 1, 1]]);
    const r = compileFilters([['p', { include: [], exclude: [], required: [], extra: { instructions: [{ programId: bs58.encode(keys.subarray(32)), dataPrefix: new Uint8Array(0), dataAt: [] }], writable: [], signer: [], signature: '' } }]], { maxFilters: 4, maxKeysPerList: 10, maxFilterNameLen: 16 });
    assert.ok(r.ok);
    assert.equal(Buffer.from(r.set.filters[0]!.extra!.instructions[0]!.program).equals(keys.subarray(32)), true, 'the filter names key 1');
    const index = new FilterIndex<string>();
    index.replace('s', r.set);
    index.prepare(keys, message);
    assert.equal(index.match(keys).length, 0);
    // The same instruction with index 1 is matched (the filter is right).
    const ok = Buffer.concat([encodeTransaction(fields), Buffer.from([0x42, 5, 0x08, 0x01, 0x1a, 0x01, 0x07])]);
    index.prepare(keys, ok);
    assert.equal(index.match(keys).length, 1);
  });
});

/** What ingest writes (ingest/publish-sink.ts): the message, and the facts header from where it wrote things. */
function encodeWithFacts(tx: TxFields): { message: Buffer; header: Buffer | null } {
  const size = transactionSize(tx);
  const message = Buffer.alloc(size);
  const positions = new Int32Array(1 + tx.instructions.length);
  encodeTransactionInto(message, 0, tx, size, positions);
  return { message, header: encodeFactsHeader(tx, positions) };
}

const bytes = (maxLength: number): fc.Arbitrary<Buffer> => fc.oneof(fc.constant(Buffer.alloc(0)), fc.uint8Array({ maxLength }).map((a) => Buffer.from(a)));
const count = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 0xffffffff }));
const txArb: fc.Arbitrary<TxFields> = fc
  .record({
    numRequiredSignatures: count,
    numReadonlySignedAccounts: count,
    numReadonlyUnsignedAccounts: count,
    signatures: fc.array(fc.oneof(fc.uint8Array({ minLength: 64, maxLength: 64 }).map((a) => Buffer.from(a)), bytes(70)), { maxLength: 3 }),
    keyCount: fc.integer({ min: 0, max: 6 }),
    instructions: fc.array(fc.record({ programIdIndex: fc.oneof(fc.integer({ min: 0, max: 7 }), count), accounts: bytes(8), data: bytes(300) }), { maxLength: 5 }),
    versioned: fc.constantFrom(undefined, true, false),
  })
  .map((t) => ({
    slot: 7n,
    numRequiredSignatures: t.numRequiredSignatures,
    numReadonlySignedAccounts: t.numReadonlySignedAccounts,
    numReadonlyUnsignedAccounts: t.numReadonlyUnsignedAccounts,
    recentBlockhash: Buffer.alloc(32, 9),
    signatures: t.signatures,
    accountKeys: Array.from({ length: t.keyCount }, (_v, i) => Buffer.alloc(32, i + 1)),
    instructions: t.instructions.map((i) => ({ ...i })),
    addressTableLookups: [],
    versioned: t.versioned,
  }));

describe('TxFacts.fromHeader (the record\'s facts header, written by ingest) = TxFacts.read', () => {
  const t = new TxFacts();
  const h = new TxFacts();

  it('the fixture transactions: the same facts without walking the message', () => {
    const txs = fixtureTxs();
    assert.ok(txs.length > 3);
    for (const f of txs) {
      const keys = Buffer.concat(f.fields.accountKeys);
      const { message, header } = encodeWithFacts(f.fields);
      assert.ok(message.equals(encodeTransaction(f.fields)), `${f.name}: the positions change nothing of the bytes`);
      assert.ok(header !== null && factsHeaderOf({ [FACTS_HEADER]: header }) === header, `${f.name}: a header`);
      assert.equal(h.fromHeader(keys, keys.length, message, header), true);
      assert.deepEqual(facts(h), facts(t.read(keys, keys.length, message)), f.name);
    }
  });

  it('random transactions: the same facts whenever ingest writes the header; none only when a figure does not fit (property)', () => {
    fc.assert(
      fc.property(txArb, (tx) => {
        const keys = Buffer.concat(tx.accountKeys);
        const { message, header } = encodeWithFacts(tx);
        const fits = [tx.numRequiredSignatures, tx.numReadonlySignedAccounts, tx.numReadonlyUnsignedAccounts, ...tx.instructions.map((i) => i.programIdIndex)].every((v) => v <= 255);
        assert.equal(header !== null, fits);
        if (header === null) return;
        assert.equal(h.fromHeader(keys, keys.length, message, header), true);
        assert.deepEqual(facts(h), facts(t.read(keys, keys.length, message)));
      }),
      { numRuns: 2000, seed: 38 },
    );
  });

  it('a header that does not fit its message is not believed, and the index reads the message instead', () => {
    const f = fixtureTxs().find((x) => x.fields.instructions.some((i) => i.data.length > 0))!;
    const keys = Buffer.concat(f.fields.accountKeys);
    const { message, header } = encodeWithFacts(f.fields);
    assert.ok(header !== null);
    // Every instruction's data and the signature lie within the message; cut it inside the last data and they do not.
    const read = new TxFacts().read(keys, keys.length, message);
    let lastEnd = 0;
    for (let i = 0; i < read.ixCount; i++) lastEnd = Math.max(lastEnd, read.ixDataOff[i]! + read.ixDataLen[i]!);
    assert.equal(h.fromHeader(keys, keys.length, message.subarray(0, lastEnd), header), true);
    assert.equal(h.fromHeader(keys, keys.length, message.subarray(0, lastEnd - 1), header), false);
    const badLength = Buffer.concat([header, Buffer.alloc(1)]);
    assert.equal(factsHeaderOf({ [FACTS_HEADER]: badLength }), null, 'a length that does not match the count');
    assert.equal(factsHeaderOf({ [FACTS_HEADER]: Buffer.from([2, ...header.subarray(1)]) }), null, 'an unknown VERSION');
    // Matching with a header from another transaction (same count, offsets past this message) gives what the
    // message gives: a filter on the fixture's first program with its data's first byte.
    const ix = f.fields.instructions.find((i) => i.data.length > 0)!;
    const r = compileFilters([['p', { include: [], exclude: [], required: [], extra: { instructions: [{ programId: bs58.encode(f.fields.accountKeys[ix.programIdIndex]!), dataPrefix: ix.data.subarray(0, 1), dataAt: [] }], writable: [], signer: [], signature: '' } }]], { maxFilters: 4, maxKeysPerList: 10, maxFilterNameLen: 16 });
    assert.ok(r.ok);
    const index = new FilterIndex<string>();
    index.replace('s', r.set);
    index.prepare(keys, message, header);
    assert.equal(index.match(keys).length, 1, 'matched through the header');
    // A header that fits but points the data elsewhere is believed (so the match above went through it).
    const elsewhere = Buffer.from(header);
    for (let o = 10; o + 5 <= elsewhere.length; o += 5) elsewhere.writeUInt16LE(0, o + 1);
    assert.notEqual(message[0], ix.data[0]);
    index.prepare(keys, message, elsewhere);
    assert.equal(index.match(keys).length, 0, 'the header is what is read');
    const foreign = Buffer.from(header);
    for (let o = 10; o + 5 <= foreign.length; o += 5) foreign.writeUInt16LE(0xfff0, o + 1);
    index.prepare(keys, message, foreign);
    assert.equal(index.match(keys).length, 1, 'a header past the message: read from the message');
  });
});
