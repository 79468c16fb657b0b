import assert from 'node:assert/strict';
import {
  AccountRole, address, appendTransactionMessageInstruction, createKeyPairSignerFromBytes, createSolanaRpc, createSolanaRpcSubscriptions,
  createTransactionMessage, generateKeyPairSigner, getSignatureFromTransaction, lamports, pipe, sendAndConfirmTransactionFactory,
  setTransactionMessageFeePayerSigner, setTransactionMessageLifetimeUsingBlockhash, signTransactionMessageWithSigners, type Address,
  type Instruction,
} from '@solana/kit';
import type { LocalChain } from '../../../../infra/local/chain';
import { startNode } from './support';

// @solana/kit (the newer client) against the node unchanged: its strict response parsing (u64 as bigint),
// its transaction pipeline, and sendAndConfirmTransaction over RPC subscriptions.

const SYSTEM_PROGRAM = address('11111111111111111111111111111111');

function transferIx(from: Address, to: Address, amount: bigint): Instruction {
  const data = new Uint8Array(12);
  const v = new DataView(data.buffer);
  v.setUint32(0, 2, true);
  v.setBigUint64(4, amount, true);
  return { programAddress: SYSTEM_PROGRAM, accounts: [{ address: from, role: AccountRole.WRITABLE_SIGNER }, { address: to, role: AccountRole.WRITABLE }], data };
}

describe('local chain: @solana/kit', function () {
  let node: LocalChain;

  before(async () => {
    ({ node } = await startNode());
  });

  after(async () => {
    await node.close();
  });

  it('reads, builds, signs, sends and confirms a transfer through kit RPC and RPC subscriptions', async () => {
    const rpc = createSolanaRpc(node.httpUrl);
    const subs = createSolanaRpcSubscriptions(node.wsUrl);
    const payer = await createKeyPairSignerFromBytes(node.payer);
    const to = (await generateKeyPairSigner()).address;
    const start = await rpc.getBalance(payer.address, { commitment: 'confirmed' }).send();
    assert.equal(typeof start.value, 'bigint');
    assert.ok(start.value > 0n);
    const info = await rpc.getAccountInfo(payer.address, { encoding: 'base64' }).send();
    assert.ok(info.value !== null);
    assert.equal(info.value.owner, SYSTEM_PROGRAM);
    const { value: latest } = await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send();
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(payer, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash(latest, m),
      (m) => appendTransactionMessageInstruction(transferIx(payer.address, to, 7_000_000n), m),
    );
    const signed = await signTransactionMessageWithSigners(message);
    const send = sendAndConfirmTransactionFactory({ rpc, rpcSubscriptions: subs });
    await send(signed as Parameters<typeof send>[0], { commitment: 'confirmed' });
    const sig = getSignatureFromTransaction(signed);
    assert.equal((await rpc.getBalance(to, { commitment: 'confirmed' }).send()).value, lamports(7_000_000n));
    const got = await rpc.getTransaction(sig, { commitment: 'confirmed', maxSupportedTransactionVersion: 0, encoding: 'json' }).send();
    assert.ok(got !== null);
    assert.equal(got.version, 0);
    assert.equal(got.meta!.fee, lamports(5000n));
    assert.deepEqual(got.meta!.loadedAddresses, { readonly: [], writable: [] });
    const statuses = await rpc.getSignatureStatuses([sig]).send();
    assert.equal(statuses.value.length, 1);
    assert.equal(statuses.value[0]!.err, null);
    // A v0 transaction without maxSupportedTransactionVersion is refused as a real node refuses it.
    await assert.rejects(rpc.getTransaction(sig, { commitment: 'confirmed', encoding: 'json' }).send(), /-32015|not supported/);
  });
});
