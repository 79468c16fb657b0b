import assert from 'node:assert/strict';
import {
  ComputeBudgetProgram, Keypair, LAMPORTS_PER_SOL, NONCE_ACCOUNT_LENGTH, PublicKey, SendTransactionError, SystemProgram, Transaction, sendAndConfirmTransaction,
  type Connection, type SignatureStatus,
} from '@solana/web3.js';
import bs58 from 'bs58';
import type { LocalChain } from '../../../../infra/local/chain';
import { Registry } from '../../../../infra/base/metrics';
import { waitFor } from '../../../support/wait';
import { closeConnection, connect, payerOf, post, rpc, startNode } from './support';

// The local chain node with @solana/web3.js as the client: what a real client does against a real node.

describe('local chain: JSON-RPC with @solana/web3.js', function () {
  let node: LocalChain;
  let conn: Connection;

  const registry = new Registry();

  before(async () => {
    ({ node } = await startNode({ registry }));
    conn = connect(node);
  });

  after(async () => {
    closeConnection(conn);
    await node.close();
  });

  it('reports version, identity, genesis hash, health, and the identity as leader of every slot', async () => {
    const v = await conn.getVersion();
    assert.equal(typeof v['solana-core'], 'string');
    assert.equal((await rpc(node.httpUrl, 'getIdentity')).result.identity, node.identity);
    assert.equal(await conn.getGenesisHash(), node.genesisHash);
    assert.equal((await rpc(node.httpUrl, 'getHealth')).result, 'ok');
    const info = await conn.getEpochInfo();
    const schedule = await conn.getLeaderSchedule();
    const keys = Object.keys(schedule);
    assert.equal(keys.length, 1);
    assert.equal(keys[0], node.identity);
    assert.equal(schedule[node.identity]!.length, info.slotsInEpoch);
    assert.equal(await conn.getSlotLeader(), node.identity);
    const es = await conn.getEpochSchedule();
    assert.equal(es.slotsPerEpoch, info.slotsInEpoch);
    const slotLine = registry.render().split('\n').find((l) => l.startsWith('meridian_localchain_slot '));
    assert.ok(slotLine !== undefined);
    assert.ok(Number(slotLine.split(' ')[1]) >= info.absoluteSlot);
  });

  it('produces slots on the clock, with blocks and a valid latest blockhash', async () => {
    const s0 = await conn.getSlot('confirmed');
    let s1 = s0;
    await waitFor(async () => (s1 = await conn.getSlot('confirmed')) >= s0 + 2, 20_000, `the confirmed slot to advance by 2 from ${s0}`, 50);
    const processed = await conn.getSlot('processed');
    assert.ok(processed > s1 - 1);
    const { blockhash, lastValidBlockHeight } = await conn.getLatestBlockhash();
    assert.equal(bs58.decode(blockhash).length, 32);
    assert.ok(lastValidBlockHeight > (await conn.getBlockHeight()));
    assert.equal(await conn.isBlockhashValid(blockhash).then((r) => r.value), true);
    assert.equal(await conn.isBlockhashValid(bs58.encode(Buffer.alloc(32, 7))).then((r) => r.value), false);
    const blocks = await conn.getBlocks(s0, s1);
    assert.deepEqual(blocks, Array.from({ length: s1 - s0 + 1 }, (_, i) => s0 + i));
  });

  it('airdrops with requestAirdrop, and the demo payer is funded', async () => {
    const payer = payerOf(node);
    assert.ok((await conn.getBalance(payer.publicKey)) > 100 * LAMPORTS_PER_SOL);
    const kp = Keypair.generate();
    const sig = await conn.requestAirdrop(kp.publicKey, 2 * LAMPORTS_PER_SOL);
    const bh = await conn.getLatestBlockhash();
    const res = await conn.confirmTransaction({ signature: sig, ...bh }, 'confirmed');
    assert.equal(res.value.err, null);
    assert.equal(await conn.getBalance(kp.publicKey), 2 * LAMPORTS_PER_SOL);
  });

  it('executes a transfer confirmed through signatureSubscribe, with getTransaction meta and getBlock listing it', async () => {
    const payer = payerOf(node);
    const to = Keypair.generate().publicKey;
    const before = await conn.getBalance(payer.publicKey);
    const tx = new Transaction().add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 5_000_000 }));
    // sendAndConfirmTransaction → confirmTransaction, which waits on a signatureSubscribe notification.
    const sig = await sendAndConfirmTransaction(conn, tx, [payer], { commitment: 'confirmed' });
    assert.equal(await conn.getBalance(to), 5_000_000);
    assert.equal(await conn.getBalance(payer.publicKey), before - 5_000_000 - 5000);

    const got = await conn.getTransaction(sig, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    assert.ok(got !== null);
    const meta = got.meta!;
    assert.equal(meta.err, null);
    assert.equal(meta.fee, 5000);
    assert.equal(meta.preBalances.length, 3);
    assert.equal(meta.postBalances.length, 3);
    assert.equal(meta.preBalances[0]! - meta.postBalances[0]!, 5_000_000 + 5000);
    assert.equal(meta.postBalances[1]! - meta.preBalances[1]!, 5_000_000);
    assert.ok(meta.logMessages !== null && meta.logMessages !== undefined);
    assert.equal(meta.logMessages.length, 2);
    assert.equal(meta.logMessages[0], 'Program 11111111111111111111111111111111 invoke [1]');
    assert.equal(meta.logMessages[1], 'Program 11111111111111111111111111111111 success');
    assert.ok((meta.computeUnitsConsumed ?? 0) > 0);
    assert.equal(got.transaction.signatures[0], sig);
    assert.equal(got.version, 'legacy');
    assert.equal(typeof got.blockTime, 'number');

    const block = await conn.getBlock(got.slot, { maxSupportedTransactionVersion: 0 });
    assert.ok(block !== null);
    const sigs = block.transactions.map((t) => t.transaction.signatures[0]);
    assert.ok(sigs.includes(sig), `block ${got.slot} lists ${sigs.length} transactions`);
    assert.equal(block.parentSlot, got.slot - 1);
    const prev = await conn.getBlock(got.slot - 1, { maxSupportedTransactionVersion: 0, transactionDetails: 'none' });
    assert.equal(block.previousBlockhash, prev!.blockhash);

    const statuses = await conn.getSignatureStatuses([sig]);
    assert.equal(statuses.value.length, 1);
    assert.equal(statuses.value[0]!.slot, got.slot);
    assert.equal(statuses.value[0]!.confirmationStatus, 'finalized');
    const history = await conn.getSignaturesForAddress(to);
    assert.equal(history.length, 1);
    assert.equal(history[0]!.signature, sig);
    const b64 = await rpc(node.httpUrl, 'getTransaction', [sig, { encoding: 'base64', commitment: 'confirmed' }]);
    assert.equal(Transaction.from(Buffer.from(b64.result.transaction[0], 'base64')).signatures[0]!.signature!.toString('base64'), Buffer.from(bs58.decode(sig)).toString('base64'));
  });

  it('simulates a failing transaction with the program error and logs, and preflight refuses it', async () => {
    const payer = payerOf(node);
    const poor = Keypair.generate();
    await conn.confirmTransaction({ signature: await conn.requestAirdrop(poor.publicKey, LAMPORTS_PER_SOL), ...(await conn.getLatestBlockhash()) }, 'confirmed');
    const tx = new Transaction().add(SystemProgram.transfer({ fromPubkey: poor.publicKey, toPubkey: payer.publicKey, lamports: 10 * LAMPORTS_PER_SOL }));
    tx.recentBlockhash = (await conn.getLatestBlockhash()).blockhash;
    tx.feePayer = poor.publicKey;
    tx.sign(poor);
    const sim = await conn.simulateTransaction(tx);
    assert.deepEqual(sim.value.err, { InstructionError: [0, { Custom: 1 }] });
    assert.ok(sim.value.logs !== null);
    assert.equal(sim.value.logs.length, 3);
    assert.match(sim.value.logs[1]!, /^Transfer: insufficient lamports \d+, need 10000000000$/);
    assert.equal(sim.value.logs[2], 'Program 11111111111111111111111111111111 failed: custom program error: 0x1');
    assert.ok((sim.value.unitsConsumed ?? 0) > 0);

    const err = await conn.sendRawTransaction(tx.serialize()).then(() => null, (e: unknown) => e);
    assert.ok(err instanceof SendTransactionError);
    assert.match(err.message, /Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1/);
    const raw = await rpc(node.httpUrl, 'sendTransaction', [tx.serialize().toString('base64'), { encoding: 'base64' }]);
    assert.equal(raw.error?.code, -32002);
    assert.deepEqual(raw.error?.data.err, { InstructionError: [0, { Custom: 1 }] });
    // Nothing landed: the fee was not charged.
    assert.equal(await conn.getBalance(poor.publicKey), LAMPORTS_PER_SOL);
  });

  it('lands a failing transaction sent without preflight: in its block with the error, fee charged', async () => {
    const poor = Keypair.generate();
    await conn.confirmTransaction({ signature: await conn.requestAirdrop(poor.publicKey, LAMPORTS_PER_SOL), ...(await conn.getLatestBlockhash()) }, 'confirmed');
    const tx = new Transaction().add(SystemProgram.transfer({ fromPubkey: poor.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 10 * LAMPORTS_PER_SOL }));
    const bh = await conn.getLatestBlockhash();
    tx.recentBlockhash = bh.blockhash;
    tx.feePayer = poor.publicKey;
    tx.sign(poor);
    const sig = await conn.sendRawTransaction(tx.serialize(), { skipPreflight: true });
    // (web3.js's confirmTransaction rejects with the error when its status poll wins the race: poll instead.)
    const statusOf = async (): Promise<SignatureStatus | null> => (await conn.getSignatureStatuses([sig])).value[0] ?? null;
    await waitFor(async () => (await statusOf())?.confirmationStatus === 'finalized', 20_000, 'the failed transaction to finalize', 20);
    const status = await statusOf();
    assert.ok(status !== null);
    assert.deepEqual(status.err, { InstructionError: [0, { Custom: 1 }] });
    const got = await conn.getTransaction(sig, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    assert.ok(got !== null);
    assert.deepEqual(got.meta!.err, { InstructionError: [0, { Custom: 1 }] });
    assert.equal(got.meta!.fee, 5000);
    assert.equal(await conn.getBalance(poor.publicKey), LAMPORTS_PER_SOL - 5000);
    const block = await rpc(node.httpUrl, 'getBlock', [got.slot, { maxSupportedTransactionVersion: 0, transactionDetails: 'signatures', rewards: false }]);
    assert.ok(Array.isArray(block.result.signatures));
    assert.ok(block.result.signatures.includes(sig));
    assert.equal(block.result.rewards, undefined);
  });

  it('honours simulateTransaction sigVerify and replaceRecentBlockhash, and returns accounts when asked', async () => {
    const payer = payerOf(node);
    const to = Keypair.generate().publicKey;
    const tx = new Transaction().add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 3_000_000 }));
    tx.recentBlockhash = bs58.encode(Buffer.alloc(32, 9)); // unknown to the node
    tx.feePayer = payer.publicKey;
    tx.sign(payer);
    const wire = tx.serialize().toString('base64');
    const stale = await rpc(node.httpUrl, 'simulateTransaction', [wire, { encoding: 'base64' }]);
    assert.equal(stale.result.value.err, 'BlockhashNotFound');
    const replaced = await rpc(node.httpUrl, 'simulateTransaction', [wire, { encoding: 'base64', replaceRecentBlockhash: true, accounts: { addresses: [to.toBase58()], encoding: 'base64' } }]);
    assert.equal(replaced.result.value.err, null);
    assert.equal(typeof replaced.result.value.replacementBlockhash.blockhash, 'string');
    assert.equal(replaced.result.value.accounts.length, 1);
    assert.equal(replaced.result.value.accounts[0].lamports, 3_000_000);
    const both = await rpc(node.httpUrl, 'simulateTransaction', [wire, { encoding: 'base64', replaceRecentBlockhash: true, sigVerify: true }]);
    assert.equal(both.error?.code, -32602);
    // A corrupted signature passes without sigVerify and fails with it.
    const fresh = new Transaction().add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 3_000_000 }));
    fresh.recentBlockhash = (await conn.getLatestBlockhash()).blockhash;
    fresh.feePayer = payer.publicKey;
    fresh.sign(payer);
    const bytes = fresh.serialize();
    bytes[10] ^= 0xff;
    const noVerify = await rpc(node.httpUrl, 'simulateTransaction', [bytes.toString('base64'), { encoding: 'base64' }]);
    assert.equal(noVerify.result.value.err, null);
    const verify = await rpc(node.httpUrl, 'simulateTransaction', [bytes.toString('base64'), { encoding: 'base64', sigVerify: true }]);
    assert.equal(verify.result.value.err, 'SignatureFailure');
    const send = await rpc(node.httpUrl, 'sendTransaction', [bytes.toString('base64'), { encoding: 'base64' }]);
    assert.equal(send.error?.code, -32003);
    // The account simulated into existence does not exist.
    assert.equal(await conn.getAccountInfo(to), null);
  });

  it('charges and reports priority fees', async () => {
    const payer = payerOf(node);
    const tx = new Transaction().add(
      ComputeBudgetProgram.setComputeUnitLimit({ units: 10_000 }),
      ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 500_000 }),
      SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 2_000_000 }),
    );
    const sig = await sendAndConfirmTransaction(conn, tx, [payer], { commitment: 'confirmed' });
    const got = await conn.getTransaction(sig, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    assert.equal(got!.meta!.fee, 5000 + 5000);
    assert.equal(got!.meta!.preBalances[0]! - got!.meta!.postBalances[0]!, 2_000_000 + 10_000);
    const fees = await conn.getRecentPrioritizationFees({ lockedWritableAccounts: [payer.publicKey] });
    const atSlot = fees.filter((f) => f.slot === got!.slot);
    assert.equal(atSlot.length, 1);
    assert.equal(atSlot[0]!.prioritizationFee, 500_000);
    const msg = tx.compileMessage();
    assert.equal(await conn.getFeeForMessage(msg).then((r) => r.value), 10_000);
  });

  it('serves accounts: getAccountInfo, getMultipleAccounts, getProgramAccounts, rent exemption', async () => {
    const payer = payerOf(node);
    const acct = Keypair.generate();
    const owner = Keypair.generate().publicKey;
    const rent = await conn.getMinimumBalanceForRentExemption(40);
    assert.ok(rent > 0);
    const tx = new Transaction().add(SystemProgram.createAccount({ fromPubkey: payer.publicKey, newAccountPubkey: acct.publicKey, lamports: rent, space: 40, programId: owner }));
    await sendAndConfirmTransaction(conn, tx, [payer, acct], { commitment: 'confirmed' });
    const info = await conn.getAccountInfo(acct.publicKey);
    assert.ok(info !== null);
    assert.equal(info.data.length, 40);
    assert.equal(info.lamports, rent);
    assert.ok(info.owner.equals(owner));
    const many = await conn.getMultipleAccountsInfo([acct.publicKey, Keypair.generate().publicKey]);
    assert.equal(many.length, 2);
    assert.equal(many[0]!.lamports, rent);
    assert.equal(many[1], null);
    const owned = await conn.getProgramAccounts(owner, { filters: [{ dataSize: 40 }] });
    assert.equal(owned.length, 1);
    assert.ok(owned[0]!.pubkey.equals(acct.publicKey));
    assert.equal((await conn.getProgramAccounts(owner, { filters: [{ dataSize: 41 }] })).length, 0);
    const b58 = await rpc(node.httpUrl, 'getAccountInfo', [acct.publicKey.toBase58(), { encoding: 'base58' }]);
    assert.equal(b58.result.value.data[1], 'base58');
    assert.equal(bs58.decode(b58.result.value.data[0]).length, 40);
    assert.equal(typeof b58.result.context.slot, 'number');
  });

  it('answers JSON-RPC errors as a real node does and keeps serving', async () => {
    const unknown = await rpc(node.httpUrl, 'getNoSuchThing');
    assert.equal(unknown.error?.code, -32601);
    assert.equal(unknown.error?.message, 'Method not found');
    const badKey = await rpc(node.httpUrl, 'getBalance', ['not-a-key!']);
    assert.equal(badKey.error?.code, -32602);
    assert.match(badKey.error!.message, /^Invalid param/);
    const missing = await rpc(node.httpUrl, 'getBalance', []);
    assert.equal(missing.error?.code, -32602);
    const badCommitment = await rpc(node.httpUrl, 'getSlot', [{ commitment: 'soon' }]);
    assert.equal(badCommitment.error?.code, -32602);
    const badTx = await rpc(node.httpUrl, 'sendTransaction', ['AAAA', { encoding: 'base64' }]);
    assert.equal(badTx.error?.code, -32602);
    const future = await rpc(node.httpUrl, 'getBlock', [node.slot() + 1000]);
    assert.equal(future.error?.code, -32004);
    const parse = await post(node.httpUrl, '{"jsonrpc":"2.0","id":1,"method":');
    assert.equal(parse.status, 200);
    assert.deepEqual(parse.body, { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null });
    const invalid = await post(node.httpUrl, { id: 4, method: 'getSlot' });
    assert.equal((invalid.body as { error: { code: number } }).error.code, -32600);
    const batch = await post(node.httpUrl, [{ jsonrpc: '2.0', id: 1, method: 'getSlot' }, { jsonrpc: '2.0', id: 2, method: 'nope' }]);
    const replies = batch.body as Array<{ id: number; result?: number; error?: { code: number } }>;
    assert.equal(replies.length, 2);
    assert.equal(typeof replies[0]!.result, 'number');
    assert.equal(replies[1]!.error?.code, -32601);
    const big = await fetch(node.httpUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'x'.repeat(2 * 1024 * 1024) }).catch(() => null);
    assert.ok(big === null || big.status === 413);
    assert.equal((await rpc(node.httpUrl, 'getHealth')).result, 'ok');
  });

  it('refuses a duplicate and a stale blockhash like a validator', async () => {
    const payer = payerOf(node);
    const tx = new Transaction().add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new PublicKey(Keypair.generate().publicKey), lamports: 1_000_000 }));
    const sig = await sendAndConfirmTransaction(conn, tx, [payer], { commitment: 'confirmed' });
    const again = await rpc(node.httpUrl, 'sendTransaction', [tx.serialize().toString('base64'), { encoding: 'base64' }]);
    assert.equal(again.error?.code, -32002);
    assert.equal(again.error?.data.err, 'AlreadyProcessed');
    assert.equal(typeof sig, 'string');
    const stale = new Transaction().add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 1_000_000 }));
    stale.recentBlockhash = bs58.encode(Buffer.alloc(32, 3));
    stale.feePayer = payer.publicKey;
    stale.sign(payer);
    const r = await rpc(node.httpUrl, 'sendTransaction', [stale.serialize().toString('base64'), { encoding: 'base64' }]);
    assert.equal(r.error?.code, -32002);
    assert.equal(r.error?.message, 'Transaction simulation failed: Blockhash not found');
  });
  it('accepts a durable-nonce transaction (AdvanceNonceAccount first) whose blockhash is the stored nonce, once', async () => {
    const payer = payerOf(node);
    const nonce = Keypair.generate();
    const rent = await conn.getMinimumBalanceForRentExemption(NONCE_ACCOUNT_LENGTH);
    const create = new Transaction().add(...SystemProgram.createNonceAccount({ fromPubkey: payer.publicKey, noncePubkey: nonce.publicKey, authorizedPubkey: payer.publicKey, lamports: rent }).instructions);
    await sendAndConfirmTransaction(conn, create, [payer, nonce], { commitment: 'confirmed' });
    const before = await conn.getNonce(nonce.publicKey, 'confirmed');
    assert.ok(before !== null);
    // The stored nonce is no recent blockhash of the chain: only the nonce rule admits the transaction.
    assert.equal((await conn.isBlockhashValid(before.nonce)).value, false);
    const to = Keypair.generate().publicKey;
    const tx = new Transaction().add(
      SystemProgram.nonceAdvance({ noncePubkey: nonce.publicKey, authorizedPubkey: payer.publicKey }),
      SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 4_000_000 }),
    );
    tx.recentBlockhash = before.nonce;
    tx.feePayer = payer.publicKey;
    tx.sign(payer);
    const sig = await conn.sendRawTransaction(tx.serialize());
    const statusOf = async (): Promise<SignatureStatus | null> => (await conn.getSignatureStatuses([sig])).value[0] ?? null;
    await waitFor(async () => (await statusOf())?.confirmationStatus === 'finalized', 20_000, 'the nonce transaction to finalize', 20);
    const status = await statusOf();
    assert.ok(status !== null);
    assert.equal(status.err, null);
    assert.equal(await conn.getBalance(to), 4_000_000);
    const after = await conn.getNonce(nonce.publicKey, 'confirmed');
    assert.notEqual(after!.nonce, before.nonce);
    // The same nonce again: no longer valid.
    const again = await rpc(node.httpUrl, 'sendTransaction', [tx.serialize().toString('base64'), { encoding: 'base64' }]);
    assert.equal(again.error?.code, -32002);
  });
});
