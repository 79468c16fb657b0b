import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import bs58 from 'bs58';
import { Chain } from '../../../../infra/local/chain/chain';
import { transferTx } from '../../../../infra/local/chain/system-tx';
import { LOCALCHAIN_DEFAULTS } from '../../../../infra/local/chain/config';
import { decodeTransaction } from '../../../../proto/txn/decode';

// What the ledger keeps of a transaction must be its own memory: a transaction arrives as a view (of a pooled slab,
// from Buffer.from(base64), or of a datagram), and every decoded field is a view of the same memory. Kept as they
// came, ledgerTransactions records pinned up to that many slabs (8 KiB each on Node 20, 64 KiB on Node 24).

describe('local chain: ledger memory', () => {
  let chain: Chain;

  before(() => {
    const d = LOCALCHAIN_DEFAULTS;
    // A slot clock that does not tick during the test: the working slot stays the one submitted into.
    chain = new Chain({ ...d, slotMs: 600_000, ledgerSlots: d.ledgerSlots, ledgerTransactions: d.ledgerTransactions });
    chain.start();
  });

  after(() => chain.close());

  it('keeps each transaction in an allocation of its own, not the pooled view it arrived in', () => {
    const wire = transferTx(chain.payer, crypto.randomBytes(32), 1_000_000n, Buffer.from(bs58.decode(chain.ledger.latest!.blockhash)));
    // As the JSON-RPC method receives it: decoded from base64 into the shared pool.
    const pooled = Buffer.from(wire.toString('base64'), 'base64');
    assert.ok(pooled.buffer.byteLength > pooled.length, 'precondition: a view of a larger (pooled) buffer');
    const d = decodeTransaction(pooled, 0n);
    assert.ok(d.ok);
    const r = chain.submit(pooled, d.tx);
    assert.ok(r.ok, 'the transfer executes');
    const kept = chain.ledger.tx(bs58.encode(d.tx.signatures[0]!))!;
    assert.ok(kept.raw.equals(wire));
    assert.equal(kept.raw.buffer.byteLength, wire.length, 'the ledger holds exactly the transaction bytes');
    const views = [kept.tx.recentBlockhash, ...kept.tx.signatures, ...kept.tx.accountKeys, ...kept.tx.instructions.flatMap((i) => [i.accounts, i.data])];
    for (const v of views) assert.equal(v.buffer, kept.raw.buffer, 'every decoded field is a view of the kept copy');
  });
});
