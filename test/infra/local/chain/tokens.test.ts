import assert from 'node:assert/strict';
import { Keypair, PublicKey, SystemProgram, Transaction, TransactionInstruction, sendAndConfirmTransaction, type Connection } from '@solana/web3.js';
import type { LocalChain } from '../../../../infra/local/chain';
import { closeConnection, connect, payerOf, rpc, startNode } from './support';

// SPL Token on the node: a mint and a token account made by real Token-program instructions, then read back
// with the token methods and jsonParsed, as wallets read them.

const TOKEN = new PublicKey('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');

function initializeMint2(mint: PublicKey, decimals: number, authority: PublicKey): TransactionInstruction {
  const data = Buffer.concat([Buffer.from([20, decimals]), authority.toBuffer(), Buffer.from([0])]);
  return new TransactionInstruction({ programId: TOKEN, keys: [{ pubkey: mint, isSigner: false, isWritable: true }], data });
}

function initializeAccount3(account: PublicKey, mint: PublicKey, owner: PublicKey): TransactionInstruction {
  return new TransactionInstruction({ programId: TOKEN, keys: [{ pubkey: account, isSigner: false, isWritable: true }, { pubkey: mint, isSigner: false, isWritable: false }], data: Buffer.concat([Buffer.from([18]), owner.toBuffer()]) });
}

function mintTo(mint: PublicKey, account: PublicKey, authority: PublicKey, amount: bigint): TransactionInstruction {
  const data = Buffer.alloc(9);
  data[0] = 7;
  data.writeBigUInt64LE(amount, 1);
  return new TransactionInstruction({
    programId: TOKEN,
    keys: [{ pubkey: mint, isSigner: false, isWritable: true }, { pubkey: account, isSigner: false, isWritable: true }, { pubkey: authority, isSigner: true, isWritable: false }],
    data,
  });
}

describe('local chain: SPL Token reads', function () {
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

  it('mints to a token account and reports balance, supply, accounts by owner, largest holders and jsonParsed', async () => {
    const payer = payerOf(node);
    const mint = Keypair.generate();
    const account = Keypair.generate();
    const owner = Keypair.generate().publicKey;
    const mintRent = await conn.getMinimumBalanceForRentExemption(82);
    const accRent = await conn.getMinimumBalanceForRentExemption(165);
    const tx = new Transaction().add(
      SystemProgram.createAccount({ fromPubkey: payer.publicKey, newAccountPubkey: mint.publicKey, lamports: mintRent, space: 82, programId: TOKEN }),
      initializeMint2(mint.publicKey, 6, payer.publicKey),
      SystemProgram.createAccount({ fromPubkey: payer.publicKey, newAccountPubkey: account.publicKey, lamports: accRent, space: 165, programId: TOKEN }),
      initializeAccount3(account.publicKey, mint.publicKey, owner),
      mintTo(mint.publicKey, account.publicKey, payer.publicKey, 1_500_000n),
    );
    const sig = await sendAndConfirmTransaction(conn, tx, [payer, mint, account], { commitment: 'confirmed' });
    const got = await conn.getTransaction(sig, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    // The token account did not exist before the transaction and holds 1.5 after it.
    assert.equal(got!.meta!.preTokenBalances!.length, 0);
    const post = got!.meta!.postTokenBalances!;
    assert.equal(post.length, 1);
    assert.equal(post[0]!.mint, mint.publicKey.toBase58());
    assert.equal(post[0]!.owner, owner.toBase58());
    assert.equal(post[0]!.uiTokenAmount.amount, '1500000');
    assert.ok(got!.transaction.message.staticAccountKeys[post[0]!.accountIndex]!.equals(account.publicKey));

    const balance = await conn.getTokenAccountBalance(account.publicKey);
    assert.deepEqual(balance.value, { amount: '1500000', decimals: 6, uiAmount: 1.5, uiAmountString: '1.5' });
    const supply = await conn.getTokenSupply(mint.publicKey);
    assert.equal(supply.value.amount, '1500000');
    const byOwner = await conn.getTokenAccountsByOwner(owner, { mint: mint.publicKey });
    assert.equal(byOwner.value.length, 1);
    assert.ok(byOwner.value[0]!.pubkey.equals(account.publicKey));
    const parsed = await conn.getParsedTokenAccountsByOwner(owner, { programId: TOKEN });
    assert.equal(parsed.value.length, 1);
    const info = parsed.value[0]!.account.data.parsed.info;
    assert.equal(info.mint, mint.publicKey.toBase58());
    assert.equal(info.owner, owner.toBase58());
    assert.equal(info.state, 'initialized');
    assert.equal(info.tokenAmount.uiAmountString, '1.5');
    const largest = await conn.getTokenLargestAccounts(mint.publicKey);
    assert.equal(largest.value.length, 1);
    assert.ok(largest.value[0]!.address.equals(account.publicKey));
    const parsedMint = await conn.getParsedAccountInfo(mint.publicKey);
    const mintData = parsedMint.value!.data as { program: string; parsed: { type: string; info: { decimals: number; supply: string } } };
    assert.equal(mintData.program, 'spl-token');
    assert.equal(mintData.parsed.type, 'mint');
    assert.equal(mintData.parsed.info.decimals, 6);
    assert.equal(mintData.parsed.info.supply, '1500000');
    const notToken = await rpc(node.httpUrl, 'getTokenAccountBalance', [payer.publicKey.toBase58()]);
    assert.equal(notToken.error?.code, -32602);
    assert.equal((await conn.getTokenAccountsByOwner(Keypair.generate().publicKey, { programId: TOKEN })).value.length, 0);
  });
});
