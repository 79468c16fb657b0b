import assert from 'node:assert/strict';
import {
  AddressLookupTableProgram, Keypair, SystemProgram, TransactionMessage, VersionedTransaction, type AddressLookupTableAccount, type Connection,
  type TransactionInstruction,
} from '@solana/web3.js';
import type { LocalChain } from '../../../../infra/local/chain';
import { waitFor } from '../../../support/wait';
import { closeConnection, connect, payerOf, startNode } from './support';

// A v0 transaction that loads an account through an address lookup table: the table is created and extended
// on the node (the ALT program checks its recent slot against SlotHashes), and the executed transaction's meta
// carries the loaded addresses and their balances, as a real node reports them.

describe('local chain: v0 transactions with address lookup tables', function () {
  let node: LocalChain;
  let conn: Connection;

  before(async () => {
    ({ node } = await startNode());
    conn = connect(node);
  });

  after(async () => {
    closeConnection(conn);
    await node.close();
  });

  it('executes a transfer to a table-loaded account and reports loadedAddresses', async () => {
    const payer = payerOf(node);
    const dest = Keypair.generate().publicKey;
    const recentSlot = await conn.getSlot('finalized');
    const [createIx, table] = AddressLookupTableProgram.createLookupTable({ authority: payer.publicKey, payer: payer.publicKey, recentSlot });
    const extendIx = AddressLookupTableProgram.extendLookupTable({ lookupTable: table, authority: payer.publicKey, payer: payer.publicKey, addresses: [dest, Keypair.generate().publicKey] });
    const send = async (ixs: TransactionInstruction[], tables: AddressLookupTableAccount[] = []): Promise<string> => {
      const { blockhash, lastValidBlockHeight } = await conn.getLatestBlockhash();
      const msg = new TransactionMessage({ payerKey: payer.publicKey, recentBlockhash: blockhash, instructions: ixs }).compileToV0Message(tables);
      const tx = new VersionedTransaction(msg);
      tx.sign([payer]);
      const sig = await conn.sendTransaction(tx);
      const r = await conn.confirmTransaction({ signature: sig, blockhash, lastValidBlockHeight }, 'confirmed');
      assert.equal(r.value.err, null);
      return sig;
    };
    await send([createIx, extendIx]);
    // Extended addresses are usable from the slot after the extension.
    const extendedAt = await conn.getSlot('confirmed');
    await waitFor(() => node.slot() > extendedAt + 1, 5_000, 'a slot after the extension');
    const lut = (await conn.getAddressLookupTable(table)).value;
    assert.ok(lut !== null);
    assert.equal(lut.state.addresses.length, 2);
    assert.ok(lut.state.addresses[0]!.equals(dest));

    const sig = await send([SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: dest, lamports: 3_000_000 })], [lut]);
    const got = await conn.getTransaction(sig, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    assert.ok(got !== null);
    assert.equal(got.version, 0);
    const meta = got.meta!;
    assert.equal(meta.err, null);
    assert.equal(meta.loadedAddresses!.writable.length, 1);
    assert.ok(meta.loadedAddresses!.writable[0]!.equals(dest));
    assert.equal(meta.loadedAddresses!.readonly.length, 0);
    // Static keys (payer, system program) + the loaded one.
    assert.equal(meta.preBalances.length, 3);
    assert.equal(meta.postBalances[2]! - meta.preBalances[2]!, 3_000_000);
    assert.equal(got.transaction.message.addressTableLookups.length, 1);
    assert.equal(await conn.getBalance(dest), 3_000_000);
  });
});
