import assert from 'node:assert/strict';
import fs from 'node:fs';
import fc from 'fast-check';
import { decodeCompactU16, encodeCompactU16, cu16Size, cu16Value, CU16_INVALID, CU16_SHORT } from '../../proto/txn/compact-u16';
import { decodeTransaction, readTransaction, MAX_TX_SZ } from '../../proto/txn/decode';
import { TXN_REASONS } from '../../proto/txn/reasons';
import { fixture } from '../support/paths';

// Expected shapes of the fixtures (counted by hand from the wire bytes, independently of the decoder).
interface Want {
  sigs: number;
  version: 'legacy' | 0;
  header: [number, number, number];
  keys: number;
  ixs: number;
  programs: number[];
  lookups: Array<[number, number]>; // [writable, readonly] index counts per table
}
const L = 'legacy' as const;
const WANT: Record<string, Want> = {
  'ballet_txn_transaction1.bin': { sigs: 4, version: L, header: [4, 1, 11], keys: 23, ixs: 7, programs: [20, 18, 18, 18, 17, 21, 22], lookups: [] },
  'ballet_txn_transaction2.bin': { sigs: 1, version: 0, header: [1, 0, 2], keys: 6, ixs: 2, programs: [4, 5], lookups: [[4, 4], [4, 4], [4, 1]] },
  'ballet_txn_transaction3.bin': { sigs: 1, version: 0, header: [1, 0, 1], keys: 2, ixs: 64, programs: new Array<number>(64).fill(1), lookups: new Array<[number, number]>(24).fill([1, 0]) },
  'ballet_txn_transaction4.bin': { sigs: 1, version: L, header: [1, 0, 0], keys: 1, ixs: 0, programs: [], lookups: [] },
  'ballet_txn_transaction6.bin': { sigs: 2, version: L, header: [2, 1, 0], keys: 2, ixs: 1, programs: [1], lookups: [] },
  'disco_pack_sample_vote.bin': { sigs: 1, version: L, header: [1, 0, 3], keys: 5, ixs: 1, programs: [4], lookups: [] },
  'disco_pack_txn1.bin': { sigs: 1, version: 0, header: [1, 0, 2], keys: 13, ixs: 11, programs: [11, ...new Array<number>(10).fill(12)], lookups: [] },
  'disco_pack_txn2.bin': { sigs: 1, version: 0, header: [1, 0, 2], keys: 3, ixs: 3, programs: [1, 2, 2], lookups: [[5, 2], [1, 3], [2, 0], [4, 2], [1, 0], [6, 1], [0, 1]] },
  'disco_pack_txn3.bin': { sigs: 1, version: L, header: [1, 0, 5], keys: 16, ixs: 2, programs: [12, 15], lookups: [] },
  'disco_pack_txn4.bin': { sigs: 1, version: L, header: [1, 0, 9], keys: 14, ixs: 4, programs: [10, 10, 8, 7], lookups: [] },
  'disco_pack_txn5.bin': { sigs: 1, version: L, header: [1, 0, 6], keys: 20, ixs: 14, programs: [17, 17, ...new Array<number>(12).fill(15)], lookups: [] },
  'disco_pack_txn6.bin': { sigs: 1, version: 0, header: [1, 0, 4], keys: 6, ixs: 4, programs: [3, 3, 3, 4], lookups: [] },
  'disco_pack_txn7.bin': { sigs: 1, version: L, header: [1, 0, 3], keys: 8, ixs: 3, programs: [6, 6, 7], lookups: [] },
};

function txnFixtures(): Array<{ name: string; bytes: Buffer }> {
  const dir = fixture('txns');
  return fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.bin'))
    .sort()
    .map((name) => ({ name, bytes: fs.readFileSync(`${dir}/${name}`) }));
}

describe('proto/txn: transaction decoding', () => {
  const all = txnFixtures();
  const valid = all.filter((f) => f.name !== 'ballet_txn_transaction5.bin');

  it('finds every fixture the table describes', () => {
    assert.equal(all.length, 14);
    assert.deepEqual(valid.map((f) => f.name), Object.keys(WANT).sort());
  });

  for (const name of Object.keys(WANT)) {
    it(`decodes ${name}`, () => {
      const bytes = fs.readFileSync(fixture('txns', name));
      const w = WANT[name]!;
      const r = decodeTransaction(bytes, 42n);
      assert.ok(r.ok, r.ok ? '' : r.reason);
      assert.equal(r.wireLen, bytes.length);
      assert.equal(r.version, w.version);
      const t = r.tx;
      assert.equal(t.slot, 42n);
      assert.equal(t.versioned, w.version === 0);
      assert.equal(t.signatures.length, w.sigs);
      assert.deepEqual([t.numRequiredSignatures, t.numReadonlySignedAccounts, t.numReadonlyUnsignedAccounts], w.header);
      assert.equal(t.accountKeys.length, w.keys);
      assert.equal(r.staticKeys.length, 32 * w.keys);
      assert.equal(t.instructions.length, w.ixs);
      assert.deepEqual(t.instructions.map((ix) => ix.programIdIndex), w.programs);
      assert.deepEqual(t.addressTableLookups.map((l) => [l.writableIndexes.length, l.readonlyIndexes.length]), w.lookups);
      // Signatures sit right after the compact-u16 count (< 128 here: one byte).
      for (let i = 0; i < w.sigs; i++) assert.ok(t.signatures[i]!.equals(bytes.subarray(1 + 64 * i, 65 + 64 * i)));
      // The static keys follow the header (and the version byte for v0) and the key count (one byte here).
      const keysOff = 1 + 64 * w.sigs + (w.version === 0 ? 1 : 0) + 3 + 1;
      assert.ok(r.staticKeys.equals(bytes.subarray(keysOff, keysOff + 32 * w.keys)));
      assert.ok(t.recentBlockhash.equals(bytes.subarray(keysOff + 32 * w.keys, keysOff + 32 * w.keys + 32)));
      // Views, not copies: every field shares the input's memory.
      assert.equal(t.signatures[0]!.buffer, bytes.buffer);
      assert.equal(t.accountKeys[0]!.buffer, bytes.buffer);
      assert.equal(t.recentBlockhash.buffer, bytes.buffer);
    });
  }

  it('rejects ballet_txn_transaction5.bin (a lookup that loads nothing, a program index past the static keys)', () => {
    const r = decodeTransaction(fs.readFileSync(fixture('txns', 'ballet_txn_transaction5.bin')), 0n);
    assert.equal(r.ok, false);
    assert.equal(r.ok ? '' : r.reason, 'empty_lookup');
  });

  it('refuses a message version other than 0 after a signature count (v1 puts its 0x81 first, not here)', () => {
    const b = Buffer.from(fs.readFileSync(fixture('txns', 'ballet_txn_transaction2.bin')));
    assert.equal(b[65], 0x80);
    b[65] = 0x81;
    const r = decodeTransaction(b, 0n);
    assert.deepEqual(r, { ok: false, reason: 'unsupported_version' });
  });

  it('rejects every truncation and a trailing byte', () => {
    for (const { bytes } of valid) {
      for (let n = 0; n < bytes.length; n++) {
        const r = decodeTransaction(bytes.subarray(0, n), 0n);
        assert.equal(r.ok, false, `prefix ${n}`);
      }
      assert.deepEqual(decodeTransaction(Buffer.concat([bytes, Buffer.from([0])]), 0n), { ok: false, reason: 'trailing_bytes' });
    }
  });

  it('readTransaction stops at the end of one transaction inside a longer buffer', () => {
    const a = valid[0]!.bytes;
    const b = valid[1]!.bytes;
    const both = Buffer.concat([a, b]);
    const r1 = readTransaction(both, 0, 1n);
    assert.ok(r1.ok);
    assert.equal(r1.wireLen, a.length);
    const r2 = readTransaction(both, a.length, 1n);
    assert.ok(r2.ok);
    assert.equal(r2.wireLen, b.length);
  });

  it('checks the header and index rules', () => {
    const base = fs.readFileSync(fixture('txns', 'ballet_txn_transaction6.bin')); // legacy, 2 sigs, header 2/1/0, 2 keys, program 1
    const hdr = 1 + 128;
    const cases: Array<[string, (b: Buffer) => void, string]> = [
      ['num_required_signatures ≠ signature count', (b) => (b[hdr] = 1), 'signature_count_mismatch'],
      ['every signer read-only', (b) => (b[hdr + 1] = 2), 'bad_header'],
      ['more signed + unsigned-readonly than keys', (b) => (b[hdr + 2] = 1), 'bad_header'],
      ['program index 0 (the payer)', (b) => (b[hdr + 3 + 1 + 64 + 32 + 1] = 0), 'program_index_out_of_bounds'],
      ['program index past the keys', (b) => (b[hdr + 3 + 1 + 64 + 32 + 1] = 2), 'program_index_out_of_bounds'],
      ['signature count 0', (b) => (b[0] = 0), 'no_signatures'],
      // (A first byte ≥ 0x80 is a version byte since v1, so the non-minimal form is tried on the key count.)
      ['non-minimal compact-u16', (b) => b.set([0x82, 0x00], hdr + 3), 'bad_compact_u16'],
      ['an unknown transaction version byte first', (b) => (b[0] = 0x82), 'unsupported_version'],
    ];
    for (const [what, mutate, reason] of cases) {
      const b = Buffer.from(base);
      mutate(b);
      const r = decodeTransaction(b, 0n);
      assert.deepEqual(r.ok ? r : { ok: r.ok, reason: r.reason }, { ok: false, reason }, what);
    }
    const ixAccountsOff = hdr + 3 + 1 + 64 + 32 + 1 + 1; // compact-u16 account index count of instruction 0
    assert.ok(base[ixAccountsOff]! >= 1);
    const b = Buffer.from(base);
    b[ixAccountsOff + 1] = 2;
    assert.deepEqual(decodeTransaction(b, 0n), { ok: false, reason: 'account_index_out_of_bounds' });
  });

  it('rejects more than 1232 bytes as oversize', () => {
    // A legacy tx whose instruction data pushes it past 1232 bytes.
    const base = fs.readFileSync(fixture('txns', 'ballet_txn_transaction4.bin')); // 0 instructions, ends with compact-u16 0
    const data = Buffer.alloc(MAX_TX_SZ);
    const big = Buffer.concat([base.subarray(0, base.length - 1), Buffer.from([1, 0, 0]), encodeCompactU16(data.length), data]);
    // program index 0 would fail sanitize later, but the size limit is hit first.
    assert.equal(decodeTransaction(big, 0n).ok, false);
    assert.deepEqual(readTransaction(Buffer.concat([big, Buffer.alloc(10)]), 0, 0n), { ok: false, reason: 'oversize' });
  });

  it('has a description for every reason code', () => {
    for (const [code, text] of Object.entries(TXN_REASONS)) assert.ok(text.length > 10, code);
  });

  it('never throws on random or mutated bytes (property)', () => {
    const seeds = all.map((f) => f.bytes);
    const mutated = fc
      .tuple(fc.constantFrom(...seeds), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }), fc.nat(), fc.boolean())
      .map(([s, muts, cut, doCut]) => {
        const b = Buffer.from(s);
        for (const [at, v] of muts) b[at % b.length] = v;
        return doCut ? b.subarray(0, cut % (b.length + 1)) : b;
      });
    const random = fc.uint8Array({ maxLength: 1400, size: 'max' }).map((u) => Buffer.from(u));
    fc.assert(
      fc.property(fc.oneof(mutated, random), (b) => {
        const r = decodeTransaction(b, 7n);
        if (r.ok) {
          assert.equal(r.wireLen, b.length);
          assert.ok(r.wireLen <= MAX_TX_SZ);
          assert.equal(r.tx.signatures.length, r.tx.numRequiredSignatures);
        } else {
          assert.ok(r.reason in TXN_REASONS);
        }
      }),
      { numRuns: 20_000 },
    );
  });
});

describe('proto/txn: compact-u16 codec pair', () => {
  it('round-trips every value 0..0xffff with the minimal size', () => {
    for (let v = 0; v <= 0xffff; v++) {
      const e = encodeCompactU16(v);
      const p = decodeCompactU16(e, 0, e.length);
      assert.equal(cu16Value(p), v);
      assert.equal(cu16Size(p), e.length);
      assert.equal(e.length, v < 0x80 ? 1 : v < 0x4000 ? 2 : 3);
      if (e.length > 1) assert.equal(decodeCompactU16(e, 0, e.length - 1), CU16_SHORT);
    }
  });

  it('rejects non-minimal and out-of-range forms', () => {
    for (const bad of [[0x80, 0x00], [0x80, 0x80, 0x00], [0xff, 0xff, 0x04], [0xff, 0xff, 0x80]]) {
      assert.equal(decodeCompactU16(Buffer.from(bad), 0, bad.length), CU16_INVALID, JSON.stringify(bad));
    }
    assert.throws(() => encodeCompactU16(0x10000), RangeError);
  });
});
