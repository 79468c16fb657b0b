import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fc from 'fast-check';
import { decodeTransaction, readTransaction, type DecodedTxn } from '../../proto/txn/decode';
import { TXN_REASONS, type TxnReason } from '../../proto/txn/reasons';
import { encodeV1Message, encodeV1Transaction, V1_MAX_TX_SZ, type V1TxInput } from '../../proto/txn/v1';
import { decodeEntryBatch } from '../../ingest/entry/entries';
import { isGood, v1Tx, v1Vectors, type VectorDecoded } from '../support/v1-vectors';

// Transaction v1 (SIMD-0385) against golden vectors the published Rust crates wrote and decoded
// (test/fixtures/txn-v1/README.md), then properties of the codec pair.

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');
function verifies(sig: Buffer, key: Buffer, msg: Buffer): boolean {
  return crypto.verify(null, msg, crypto.createPublicKey({ key: Buffer.concat([SPKI_ED25519, key]), format: 'der', type: 'spki' }), sig);
}

/** Compares our decode with what the crate decoded, field by field. */
function assertMatches(d: DecodedTxn, e: VectorDecoded, what: string): void {
  const t = d.tx;
  assert.equal(d.version, e.version, what);
  assert.equal(d.wireLen, e.wire_len, what);
  assert.equal(d.message.length, e.message_len, what);
  assert.deepEqual([t.numRequiredSignatures, t.numReadonlySignedAccounts, t.numReadonlyUnsignedAccounts], e.header, what);
  assert.equal(hex(t.recentBlockhash), e.recent_blockhash, what);
  assert.deepEqual(t.accountKeys.map(hex), e.account_keys, what);
  assert.deepEqual(
    t.instructions.map((ix) => ({ program_id_index: ix.programIdIndex, accounts: [...ix.accounts], data: hex(ix.data) })),
    e.instructions,
    what,
  );
  assert.equal(t.addressTableLookups.length, e.address_table_lookups, what);
  assert.deepEqual(t.signatures.map(hex), e.signatures, what);
  assert.equal(t.versioned, e.version !== 'legacy', what);
  if (e.version === 1) {
    const c = d.config;
    assert.ok(c !== null, what);
    assert.equal(c.mask, e.config_mask, what);
    assert.deepEqual(
      {
        priority_fee: c.priorityFee?.toString() ?? null,
        compute_unit_limit: c.computeUnitLimit ?? null,
        loaded_accounts_data_size_limit: c.loadedAccountsDataSizeLimit ?? null,
        heap_size: c.heapSize ?? null,
      },
      e.config,
      what,
    );
  } else {
    assert.equal(d.config, null, what);
  }
}

/** Our reason for each vector the crate or the SIMD refuses. */
const REFUSED: Record<string, TxnReason> = {
  bad_mask_fee_low_bit: 'partial_config_field',
  bad_mask_fee_high_bit: 'partial_config_field',
  bad_mask_unknown_bit: 'unknown_config_bit',
  bad_truncated: 'truncated',
  bad_thirteen_signatures: 'too_many_signatures',
  bad_heap_size: 'bad_heap_size',
  bad_duplicate_keys: 'duplicate_account_keys',
  bad_program_is_payer: 'program_index_out_of_bounds',
  bad_account_index: 'account_index_out_of_bounds',
  bad_65_instructions: 'too_many_instructions',
  bad_65_addresses: 'too_many_addresses',
  bad_4097_bytes: 'oversize',
};

describe('proto/txn v1: golden vectors from the published crates', () => {
  const vectors = v1Vectors();

  it('has every shape the issue asks for', () => {
    const good = vectors.transactions.filter(isGood);
    const v1 = good.filter((t) => t.expected.version === 1);
    const sigCounts = new Set(v1.map((t) => t.expected.signatures.length));
    assert.ok(sigCounts.has(1) && sigCounts.has(12));
    for (const bit of [0b11, 0b100, 0b1000, 0b10000]) assert.ok(v1.some((t) => t.expected.config_mask === bit), `mask ${bit} alone`);
    assert.ok(v1.some((t) => t.expected.config_mask === 0b11111));
    assert.ok(v1.some((t) => t.expected.instructions.some((ix) => ix.data === '')));
    assert.equal(v1.filter((t) => t.hex.length / 2 === V1_MAX_TX_SZ).length, 2);
    assert.deepEqual(
      new Set(vectors.entry_batches.flatMap((b) => b.batch.expected.flatMap((e) => e.txs.map((t) => t.version)))),
      new Set(['legacy', 0, 1]),
    );
  });

  for (const t of v1Vectors().transactions.filter(isGood)) {
    it(`decodes ${t.name} exactly as the crate did (${t.note})`, () => {
      const bytes = Buffer.from(t.hex, 'hex');
      const r = decodeTransaction(bytes, 9n);
      assert.ok(r.ok, r.ok ? '' : r.reason);
      assertMatches(r, t.expected, t.name);
      // Every signature verifies over our signing payload (the crate's verify said so over its own).
      for (let i = 0; i < r.tx.signatures.length; i++) assert.ok(verifies(r.tx.signatures[i]!, r.tx.accountKeys[i]!, r.message), `${t.name} sig ${i}`);
      // Views, not copies.
      assert.equal(r.tx.signatures[0]!.buffer, bytes.buffer);
    });
  }

  for (const [name, reason] of Object.entries(REFUSED)) {
    it(`refuses ${name} with '${reason}'`, () => {
      const t = vectors.transactions.find((x) => x.name === name)!;
      // The crate refused it too (decode or sanitize), except the 4097-byte one whose limit is the SIMD's.
      if (name !== 'bad_4097_bytes') assert.ok(t.expected.crate_decode === 'error' || t.expected.sanitize !== 'ok', name);
      assert.deepEqual(decodeTransaction(v1Tx(name), 0n), { ok: false, reason });
    });
  }

  it('decodes bad_signature (verification is the submission service\'s job) and the signature fails to verify', () => {
    const r = decodeTransaction(v1Tx('bad_signature'), 0n);
    assert.ok(r.ok);
    assert.equal(verifies(r.tx.signatures[0]!, r.tx.accountKeys[0]!, r.message), false);
  });

  for (const b of v1Vectors().entry_batches) {
    it(`decodes the entry batch ${b.name} exactly (${b.note})`, () => {
      const r = decodeEntryBatch(Buffer.from(b.batch.hex, 'hex'), 3n);
      assert.ok(r.ok, r.ok ? '' : `${r.reason} ${r.txReason ?? ''}`);
      assert.equal(r.consumed, b.batch.hex.length / 2);
      assert.equal(r.entries.length, b.batch.expected.length);
      r.entries.forEach((e, i) => {
        const w = b.batch.expected[i]!;
        assert.equal(e.numHashes, BigInt(w.num_hashes));
        assert.equal(hex(e.hash), w.hash);
        assert.deepEqual(
          e.txs.map((t) => [t.version, t.wireLen, t.tx.signatures.map(hex)]),
          w.txs.map((t) => [t.version, t.wire_len, t.signatures]),
        );
        // Each transaction's bytes, decoded alone, give the same result.
        e.txs.forEach((t, j) => assert.equal(hex(t.message), hex(decodeOk(Buffer.from(w.txs[j]!.hex, 'hex')).message)));
      });
    });
  }
});

function decodeOk(b: Buffer): DecodedTxn {
  const r = decodeTransaction(b, 0n);
  if (!r.ok) throw new Error(r.reason);
  return r;
}

/** A V1TxInput from decoded fields: the encoder's inverse. */
function inputOf(d: DecodedTxn): V1TxInput {
  const t = d.tx;
  const c = d.config!;
  return {
    numRequiredSignatures: t.numRequiredSignatures,
    numReadonlySignedAccounts: t.numReadonlySignedAccounts,
    numReadonlyUnsignedAccounts: t.numReadonlyUnsignedAccounts,
    config: { priorityFee: c.priorityFee, computeUnitLimit: c.computeUnitLimit, loadedAccountsDataSizeLimit: c.loadedAccountsDataSizeLimit, heapSize: c.heapSize },
    recentBlockhash: t.recentBlockhash,
    accountKeys: t.accountKeys,
    instructions: t.instructions.map((ix) => ({ programIdIndex: ix.programIdIndex, accounts: ix.accounts, data: ix.data })),
  };
}

/** Random valid v1 inputs: distinct keys, in-range indexes, sizes kept under 4096. */
const v1Input: fc.Arbitrary<V1TxInput> = fc
  .record({
    sigs: fc.integer({ min: 1, max: 12 }),
    roSigned: fc.nat(),
    extraKeys: fc.integer({ min: 1, max: 20 }),
    roUnsigned: fc.nat(),
    fee: fc.option(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), { nil: undefined }),
    cu: fc.option(fc.nat({ max: 0xffffffff }), { nil: undefined }),
    loaded: fc.option(fc.nat({ max: 0xffffffff }), { nil: undefined }),
    heap: fc.option(fc.integer({ min: 32, max: 256 }).map((k) => k * 1024), { nil: undefined }),
    seed: fc.nat(),
    ixs: fc.array(fc.record({ p: fc.nat(), accounts: fc.array(fc.nat(), { maxLength: 10 }), dataLen: fc.nat({ max: 200 }) }), { maxLength: 8 }),
  })
  .map((r) => {
    const n = r.sigs + r.extraKeys;
    const keys = Array.from({ length: n }, (_, i) => crypto.createHash('sha256').update(`${r.seed}/${i}`).digest());
    return {
      numRequiredSignatures: r.sigs,
      numReadonlySignedAccounts: r.roSigned % r.sigs,
      numReadonlyUnsignedAccounts: r.roUnsigned % (r.extraKeys + 1),
      config: { priorityFee: r.fee, computeUnitLimit: r.cu, loadedAccountsDataSizeLimit: r.loaded, heapSize: r.heap },
      recentBlockhash: crypto.createHash('sha256').update(`bh${r.seed}`).digest(),
      accountKeys: keys,
      instructions: r.ixs.map((ix) => ({
        programIdIndex: 1 + (ix.p % (n - 1)),
        accounts: ix.accounts.map((a) => a % n),
        data: Buffer.alloc(ix.dataLen, ix.p & 0xff),
      })),
    };
  });

function fakeSigs(n: number, seed: Buffer): Buffer[] {
  return Array.from({ length: n }, (_, i) => crypto.createHash('sha512').update(seed).update(String(i)).digest());
}

describe('proto/txn v1: codec properties', () => {
  it('encodes the golden vectors\' messages byte for byte from their decoded fields', () => {
    for (const t of v1Vectors().transactions.filter(isGood)) {
      if (t.expected.version !== 1) continue;
      const bytes = Buffer.from(t.hex, 'hex');
      const d = decodeOk(bytes);
      const msg = encodeV1Message(inputOf(d));
      assert.equal(hex(msg), hex(d.message), t.name);
      assert.equal(hex(encodeV1Transaction(msg, d.tx.signatures)), t.hex, t.name);
    }
  });

  it('round-trips random valid transactions (encode → decode → encode)', () => {
    fc.assert(
      fc.property(v1Input, (m) => {
        const msg = encodeV1Message(m);
        const tx = encodeV1Transaction(msg, fakeSigs(m.numRequiredSignatures, msg));
        const r = decodeTransaction(tx, 1n);
        assert.ok(r.ok, r.ok ? '' : r.reason);
        assert.equal(r.version, 1);
        assert.equal(r.wireLen, tx.length);
        assert.ok(r.message.equals(msg));
        assert.ok(encodeV1Message(inputOf(r)).equals(msg));
        // Inside a longer buffer, the reader stops exactly at its end.
        const inBatch = readTransaction(Buffer.concat([tx, Buffer.from([1, 2, 3])]), 0, 1n);
        assert.ok(inBatch.ok && inBatch.wireLen === tx.length);
      }),
      { numRuns: 2_000 },
    );
  });

  it('answers every truncation and every single-bit flip of every vector with a named reason, never a throw', () => {
    let flips = 0;
    for (const t of v1Vectors().transactions) {
      const bytes = Buffer.from(t.hex, 'hex');
      for (let n = 0; n < bytes.length; n++) {
        const r = decodeTransaction(bytes.subarray(0, n), 0n);
        assert.equal(r.ok, false, `${t.name} prefix ${n}`);
        if (!r.ok) assert.ok(r.reason in TXN_REASONS);
      }
      // Bit flips over the message (signature bytes decode either way); every vector's first 400 bytes.
      const upto = Math.min(bytes.length, 400);
      for (let i = 0; i < upto; i++) {
        for (let bit = 0; bit < 8; bit++) {
          const b = Buffer.from(bytes);
          b[i]! ^= 1 << bit;
          const r = decodeTransaction(b, 0n);
          flips++;
          if (!r.ok) assert.ok(r.reason in TXN_REASONS, `${t.name} byte ${i} bit ${bit}: ${r.reason}`);
          else assert.equal(r.wireLen, b.length);
        }
      }
    }
    assert.ok(flips > 50_000);
  });

  it('reads a future version byte as unsupported_version with its number, and a v1 past 4096 bytes as oversize', () => {
    for (const first of [0x80, 0x82, 0x83, 0xff]) {
      const b = Buffer.from(v1Tx('v1_one_signature'));
      b[0] = first;
      assert.deepEqual(readTransaction(b, 0, 0n), { ok: false, reason: 'unsupported_version', version: first & 0x7f });
    }
    const max = v1Tx('v1_max_data_4096');
    assert.ok(decodeTransaction(max, 0n).ok);
    assert.deepEqual(decodeTransaction(Buffer.concat([max, Buffer.alloc(1)]), 0n), { ok: false, reason: 'trailing_bytes' });
    assert.deepEqual(decodeTransaction(v1Tx('bad_4097_bytes'), 0n), { ok: false, reason: 'oversize' });
  });

  it('decodes v1 where legacy and v0 would be oversize: legacy/v0 keep 1232', () => {
    const big = v1Tx('v1_many_instructions');
    assert.ok(big.length > 1232);
    assert.ok(decodeTransaction(big, 0n).ok);
  });
});
