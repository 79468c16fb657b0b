import assert from 'node:assert/strict';
import fc from 'fast-check';
import { encodeFactsHeader } from '../../bus/topics/stream-transactions-facts';
import { WireInstruction, type InstructionFields, type TxFields } from '../../proto/tx-fields';
import { decodeTransaction } from '../../proto/txn/decode';
import { encodeTransactionInto, transactionSize } from '../../proto/wire';
import { Keypair, PublicKey, TransactionInstruction, VersionedTransaction } from '@solana/web3.js';
import { legacyTx, v0Tx } from '../gateways/submit/support';

// Decoded instructions are ranges of the transaction's bytes (proto/tx-fields.ts WireInstruction) that the encoder
// and the facts header read without making views; every other reader gets views on first use. The encoder's two
// paths (ranges, Buffers) must write the same bytes.

const bytes = (max: number): fc.Arbitrary<Buffer> => fc.uint8Array({ maxLength: max, size: 'max' }).map((u) => Buffer.from(u));

/** The same instructions twice: as plain objects with their own Buffers, and as ranges of one shared buffer. */
const arbInstructions = fc.array(fc.record({ programIdIndex: fc.nat({ max: 255 }), accounts: bytes(40), data: bytes(300) }), { maxLength: 6 }).chain((ixs) =>
  fc.nat({ max: 64 }).map((pad) => {
    // Laid out at an offset inside a larger buffer, as in a packet.
    const layout = Buffer.concat([Buffer.alloc(pad, 0xee), ...ixs.flatMap((i) => [i.accounts, i.data]), Buffer.alloc(7, 0xee)]);
    let o = pad;
    const wire = ixs.map((i) => {
      const w = new WireInstruction(i.programIdIndex, layout, o, i.accounts.length, o + i.accounts.length, i.data.length);
      o += i.accounts.length + i.data.length;
      return w;
    });
    return { plain: ixs.map((i) => ({ ...i })) as InstructionFields[], wire };
  }),
);

function tx(instructions: InstructionFields[]): TxFields {
  return {
    slot: 9n,
    numRequiredSignatures: 1,
    numReadonlySignedAccounts: 0,
    numReadonlyUnsignedAccounts: 1,
    recentBlockhash: Buffer.alloc(32, 3),
    signatures: [Buffer.alloc(64, 5)],
    accountKeys: [Buffer.alloc(32, 1), Buffer.alloc(32, 2)],
    instructions,
    addressTableLookups: [],
    versioned: false,
  };
}

function encode(t: TxFields): { bytes: Buffer; positions: Int32Array } {
  const size = transactionSize(t);
  const out = Buffer.alloc(size + 3, 0xaa);
  const positions = new Int32Array(1 + t.instructions.length);
  encodeTransactionInto(out, 3, t, size, positions);
  return { bytes: out, positions };
}

describe('proto: decoded instructions as ranges (WireInstruction)', () => {
  it('encode the same bytes, positions and facts header as the same instructions held as Buffers (property)', () => {
    fc.assert(
      fc.property(arbInstructions, ({ plain, wire }) => {
        const a = encode(tx(plain));
        const b = encode(tx(wire));
        assert.deepEqual(b.bytes, a.bytes);
        assert.deepEqual(b.positions, a.positions);
        assert.deepEqual(encodeFactsHeader(tx(wire), b.positions), encodeFactsHeader(tx(plain), a.positions));
        // Read through the getters, the fields are the bytes of the ranges (and the same view each time).
        wire.forEach((w, i) => {
          assert.deepEqual(w.accounts, plain[i]!.accounts);
          assert.deepEqual(w.data, plain[i]!.data);
          assert.equal(w.data, w.data);
          assert.equal(w.data.buffer, w.bytes.buffer, 'a view, not a copy');
        });
      }),
      { numRuns: 300, seed: 31 },
    );
  });

  it("the decoder's ranges are web3.js's compiled instructions, legacy and v0 (data of 0, ≤ 32 and > 32 bytes)", () => {
    const extra = [
      new TransactionInstruction({ programId: new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr'), keys: [], data: Buffer.from('x'.repeat(45)) }),
      new TransactionInstruction({ programId: Keypair.generate().publicKey, keys: [], data: Buffer.alloc(0) }),
    ];
    for (const raw of [legacyTx({ amount: 1234, extra }), v0Tx({ amount: 99, extra })]) {
      const d = decodeTransaction(raw, 1n);
      assert.ok(d.ok);
      const want = VersionedTransaction.deserialize(raw).message.compiledInstructions;
      const got = d.tx.instructions;
      assert.equal(got.length, want.length);
      got.forEach((ix, i) => {
        assert.ok(ix instanceof WireInstruction);
        assert.equal(ix.bytes, raw);
        assert.equal(ix.programIdIndex, want[i]!.programIdIndex);
        assert.deepEqual([...ix.accounts], want[i]!.accountKeyIndexes);
        assert.deepEqual(Buffer.from(ix.data), Buffer.from(want[i]!.data));
        assert.equal(ix.dataLength, want[i]!.data.length);
      });
      assert.deepEqual(got.map((ix) => ix.data.length).sort((a, b) => a - b).slice(0, 1), [0], 'an empty data field among them');
    }
  });
});
