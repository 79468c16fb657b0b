import assert from 'node:assert/strict';
import { randomKeypair } from '../../infra/base/keypair';
import { createAndExtendTx } from '../../infra/local/demo/lookup-table';
import { decodeAltInstruction } from '../../proto/lookup-table/program';
import { decodeTransaction } from '../../proto/txn/decode';

// The demo's table transaction is built by hand (no SDK in production code): it must be a transaction our own
// decoder — the submission service's — reads, at every size the demo may ask for. An extension of 4 or more
// addresses has ≥ 128 bytes of instruction data, where compact-u16 lengths take two bytes.
describe('demo lookup table: the create + extend transaction decodes at every size', () => {
  for (const n of [1, 3, 4, 20]) {
    it(`${n} address(es)`, () => {
      const payer = randomKeypair();
      const addresses = Array.from({ length: n }, () => randomKeypair().publicKey);
      const { tx } = createAndExtendTx(payer, 7n, addresses, Buffer.alloc(32, 9));
      const d = decodeTransaction(tx, 0n);
      assert.ok(d.ok, d.ok ? '' : d.reason);
      const extend = decodeAltInstruction(d.tx.instructions[1]!.data);
      assert.equal(extend?.kind, 'extend');
      assert.deepEqual(extend?.kind === 'extend' ? extend.addresses : null, Buffer.concat(addresses));
    });
  }
});
