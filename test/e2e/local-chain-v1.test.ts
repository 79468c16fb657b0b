import assert from 'node:assert/strict';
import bs58 from 'bs58';
import { randomKeypair, sign, type Keypair } from '../../infra/base/keypair';
import type { Running } from '../../infra/launcher';
import { encodeV1Message, encodeV1Transaction } from '../../proto/txn/v1';
import { balance, chainClient, latestBlockhash, sendTx, transfer, waitConfirmed } from '../support/chain';
import { quietLog } from '../support/log-capture';
import { StreamClient } from '../support/stream-client';
import { launchOneMachine } from '../support/one-machine';
import { blockFormatsFor } from '../support/block-formats';

// The local chain's litesvm (1.4.1 in the lock; 1.5.0 too, checked on both) executes v1 transactions
// (checked here, not assumed): a v1 transfer sent to the chain's sendTransaction executes, lands in its block, is
// shredded to ingest and delivered to a gRPC subscriber as a v1 transaction, on the embedded bus.

function v1Transfer(from: Keypair, to: Buffer, lamports: bigint, blockhash: Buffer): { tx: Buffer; signature: string } {
  const data = Buffer.alloc(12);
  data.writeUInt32LE(2, 0); // System transfer
  data.writeBigUInt64LE(lamports, 4);
  const msg = encodeV1Message({
    numRequiredSignatures: 1,
    numReadonlySignedAccounts: 0,
    numReadonlyUnsignedAccounts: 1,
    // v1 has no ComputeBudget defaults: an unset loaded-accounts limit is 0, so a transfer must ask for some.
    config: { computeUnitLimit: 10_000, loadedAccountsDataSizeLimit: 1 << 20, priorityFee: 7_000n },
    recentBlockhash: blockhash,
    accountKeys: [from.publicKey, to, Buffer.alloc(32)],
    instructions: [{ programIdIndex: 2, accounts: [0, 1], data }],
  });
  const sig = sign(from, msg);
  return { tx: encodeV1Transaction(msg, [sig]), signature: bs58.encode(sig) };
}

for (const format of blockFormatsFor('embedded')) describe(`local chain, ${format} blocks: a v1 transaction runs the whole loop (sendTransaction → litesvm → shreds → ingest → fanout)`, function () {
  this.timeout(120_000);
  let running: Running | undefined;
  const clients: StreamClient[] = [];
  after(async () => {
    for (const c of clients) await c.close();
    await running?.stop();
  });

  it('executes a v1 transfer, lists it in its block and streams it as v1', async () => {
    const { log } = quietLog();
    running = await launchOneMachine({ bus: 'embedded', log, blockFormat: format });
    const e = running.endpoints;
    const { call, payer } = chainClient(e);
    const sender = randomKeypair();
    const recipient = randomKeypair();
    const fund = transfer(payer, sender.publicKey, 1_000_000_000n, await latestBlockhash(call));
    await sendTx(call, fund.tx);
    await waitConfirmed(call, fund.signature);

    const sub = StreamClient.open(e.stream!);
    clients.push(sub);
    sub.send({ transactions: { sender: { accountInclude: [bs58.encode(sender.publicKey)] } }, pingId: 1 });
    await sub.waitFor((r) => r.pingId === 1, 10_000);

    const t = v1Transfer(sender, recipient.publicKey, 2_000_000n, await latestBlockhash(call));
    assert.equal(t.tx[0], 0x81);
    assert.equal(await sendTx(call, t.tx), t.signature);
    const status = await waitConfirmed(call, t.signature);
    assert.equal(status.err, null);
    assert.equal(await balance(call, recipient.publicKey), 2_000_000);
    // The fee: 5,000 per signature + the config's priority fee (a total in lamports), as executed and as reported.
    assert.equal(await balance(call, sender.publicKey), 1_000_000_000 - 2_000_000 - 5_000 - 7_000);
    const got = await call<{ meta: { fee: number; err: unknown } } | null>('getTransaction', [t.signature, { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 1 }]);
    assert.equal(got?.meta.fee, 12_000);
    assert.equal((got as { version?: unknown } | null)?.version, 1);
    const block = await call<{ signatures: string[] }>('getBlock', [status.slot, { transactionDetails: 'signatures', rewards: false, commitment: 'confirmed' }]);
    assert.ok(block.signatures.includes(t.signature));

    const r = await sub.waitFor((x) => x.transaction?.signature === t.signature, 30_000);
    const d = r.transaction!;
    assert.equal(d.versioned, true);
    assert.equal(d.slot, status.slot);
    assert.deepEqual(d.accountKeys, [bs58.encode(sender.publicKey), bs58.encode(recipient.publicKey), '11111111111111111111111111111111']);
    assert.deepEqual(d.addressTableLookups, []);
  });
});
