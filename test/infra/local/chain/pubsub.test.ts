import assert from 'node:assert/strict';
import { Keypair, LAMPORTS_PER_SOL, SystemProgram, Transaction } from '@solana/web3.js';
import bs58 from 'bs58';
import type { LocalChain } from '../../../../infra/local/chain';
import { waitFor } from '../../../support/wait';
import { payerOf, rpc, startNode, WsClient } from './support';

// The PubSub WebSocket on the node's port, with a raw client so the notification shapes are asserted as sent.

async function signedTransfer(node: LocalChain, to = Keypair.generate().publicKey, lamports = 1_000_000): Promise<{ tx: Transaction; wire: string; sig: string }> {
  const payer = payerOf(node);
  const tx = new Transaction().add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports }));
  tx.recentBlockhash = (await rpc(node.httpUrl, 'getLatestBlockhash')).result.value.blockhash;
  tx.feePayer = payer.publicKey;
  tx.sign(payer);
  const wire = tx.serialize().toString('base64');
  return { tx, wire, sig: bs58.encode(tx.signature!) };
}

describe('local chain: PubSub WebSocket', function () {
  let node: LocalChain;
  let ws: WsClient;

  before(async () => {
    ({ node } = await startNode());
    ws = await WsClient.open(node.wsUrl);
  });

  after(async () => {
    ws.close();
    await node.close();
  });

  it('slotSubscribe notifies every new slot with parent and root, until slotUnsubscribe', async () => {
    const sub = await ws.call('slotSubscribe');
    assert.equal(typeof sub.result, 'number');
    await waitFor(() => ws.notifications('slotNotification', sub.result).length >= 3, 10_000, 'three slot notifications');
    const n = ws.notifications('slotNotification', sub.result).map((m) => m.params.result);
    assert.ok(n.length >= 3);
    for (let i = 1; i < n.length; i++) assert.equal(n[i].slot, n[i - 1].slot + 1);
    assert.equal(n[0].parent, n[0].slot - 1);
    assert.equal(n[0].root, n[0].parent);
    // The fence: a second subscription on the same socket. Every slot is notified to each subscriber in turn,
    // so once it has seen two slots past the unsubscribe, the first would have had them too.
    const fence = await ws.call('slotSubscribe');
    const un = await ws.call('slotUnsubscribe', [sub.result]);
    assert.equal(un.result, true);
    const count = ws.notifications('slotNotification', sub.result).length;
    const last = (): number => ws.notifications('slotNotification', fence.result).at(-1)?.params.result.slot ?? -1;
    const after = last();
    await waitFor(() => last() >= after + 2, 10_000, 'two more slots on the other subscription');
    assert.equal(ws.notifications('slotNotification', sub.result).length, count);
    assert.equal((await ws.call('slotUnsubscribe', [fence.result])).result, true);
    const again = await ws.call('slotUnsubscribe', [sub.result]);
    assert.equal(again.error.code, -32602);
    assert.equal(again.error.message, 'Invalid subscription id.');
  });

  it('signatureSubscribe notifies once at processed and at confirmed, then ends the subscription', async () => {
    const t = await signedTransfer(node);
    const processed = await ws.call('signatureSubscribe', [t.sig, { commitment: 'processed' }]);
    const confirmed = await ws.call('signatureSubscribe', [t.sig, { commitment: 'confirmed' }]);
    const sent = await rpc(node.httpUrl, 'sendTransaction', [t.wire, { encoding: 'base64' }]);
    assert.equal(sent.result, t.sig);
    await waitFor(() => ws.notifications('signatureNotification', confirmed.result).length === 1, 10_000, 'confirmed notification');
    const p = ws.notifications('signatureNotification', processed.result);
    assert.equal(p.length, 1);
    assert.deepEqual(p[0].params.result.value, { err: null });
    const c = ws.notifications('signatureNotification', confirmed.result)[0];
    assert.deepEqual(c.params.result.value, { err: null });
    assert.equal(typeof c.params.result.context.slot, 'number');
    // Auto-removed after its notification.
    assert.equal((await ws.call('signatureUnsubscribe', [confirmed.result])).error.code, -32602);
    // A signature that already reached the commitment notifies right after the subscribe response.
    const late = await ws.call('signatureSubscribe', [t.sig, { commitment: 'confirmed' }]);
    await waitFor(() => ws.notifications('signatureNotification', late.result).length === 1, 5_000, 'late subscription notification');
  });

  it('accountSubscribe and logsSubscribe notify on a transfer that writes the account / mentions it', async () => {
    const to = Keypair.generate().publicKey;
    const acct = await ws.call('accountSubscribe', [to.toBase58(), { encoding: 'base64', commitment: 'confirmed' }]);
    const logs = await ws.call('logsSubscribe', [{ mentions: [to.toBase58()] }, { commitment: 'confirmed' }]);
    const other = await ws.call('logsSubscribe', [{ mentions: [Keypair.generate().publicKey.toBase58()] }, { commitment: 'processed' }]);
    const t = await signedTransfer(node, to, LAMPORTS_PER_SOL);
    assert.equal((await rpc(node.httpUrl, 'sendTransaction', [t.wire, { encoding: 'base64' }])).result, t.sig);
    await waitFor(() => ws.notifications('accountNotification', acct.result).length >= 1 && ws.notifications('logsNotification', logs.result).length >= 1, 10_000, 'account and logs notifications');
    const a = ws.notifications('accountNotification', acct.result)[0].params.result;
    assert.equal(a.value.lamports, LAMPORTS_PER_SOL);
    assert.deepEqual(a.value.data, ['', 'base64']);
    assert.equal(a.value.owner, '11111111111111111111111111111111');
    const l = ws.notifications('logsNotification', logs.result)[0].params.result.value;
    assert.equal(l.signature, t.sig);
    assert.equal(l.err, null);
    assert.equal(l.logs.length, 2);
    assert.equal(ws.notifications('logsNotification', other.result).length, 0);
    assert.equal((await ws.call('accountUnsubscribe', [acct.result])).result, true);
    assert.equal((await ws.call('logsUnsubscribe', [logs.result])).result, true);
    assert.equal((await ws.call('logsUnsubscribe', [other.result])).result, true);
  });

  it('answers bad calls with JSON-RPC errors on the socket and keeps it open', async () => {
    assert.equal((await ws.call('getSlot')).error.code, -32601);
    assert.equal((await ws.call('accountSubscribe', ['xyz'])).error.code, -32602);
    assert.equal((await ws.call('logsSubscribe', [{ mentions: ['a', 'b'] }])).error.code, -32602);
    ws.ws.send('{not json');
    await waitFor(() => ws.messages.some((m) => m.error?.code === -32700), 5_000, 'parse error');
    const sub = await ws.call('rootSubscribe');
    await waitFor(() => ws.notifications('rootNotification', sub.result).length >= 1, 5_000, 'root notification');
    assert.equal(typeof ws.notifications('rootNotification', sub.result)[0].params.result, 'number');
  });
  it('programSubscribe, blockSubscribe, slotsUpdatesSubscribe and the received notification of signatureSubscribe', async () => {
    const program = await ws.call('programSubscribe', ['11111111111111111111111111111111', { encoding: 'base64', commitment: 'processed', filters: [{ dataSize: 0 }] }]);
    const blocks = await ws.call('blockSubscribe', ['all', { commitment: 'confirmed', encoding: 'json', transactionDetails: 'signatures', maxSupportedTransactionVersion: 0 }]);
    const updates = await ws.call('slotsUpdatesSubscribe');
    const to = Keypair.generate().publicKey;
    const t = await signedTransfer(node, to, 2 * LAMPORTS_PER_SOL);
    const sig = await ws.call('signatureSubscribe', [t.sig, { commitment: 'confirmed', enableReceivedNotification: true }]);
    assert.equal((await rpc(node.httpUrl, 'sendTransaction', [t.wire, { encoding: 'base64' }])).result, t.sig);
    await waitFor(() => ws.notifications('signatureNotification', sig.result).length === 2, 10_000, 'received + confirmed');
    const s = ws.notifications('signatureNotification', sig.result).map((m) => m.params.result.value);
    assert.equal(s[0], 'receivedSignature');
    assert.deepEqual(s[1], { err: null });
    await waitFor(() => ws.notifications('blockNotification', blocks.result).some((m) => m.params.result.value.block.signatures.includes(t.sig)), 10_000, 'block notification with the transaction');
    const p = ws.notifications('programNotification', program.result).map((m) => m.params.result.value);
    const mine = p.filter((v) => v.pubkey === to.toBase58());
    assert.equal(mine.length, 1);
    assert.equal(mine[0].account.lamports, 2 * LAMPORTS_PER_SOL);
    const kinds = new Set(ws.notifications('slotsUpdatesNotification', updates.result).map((m) => m.params.result.type));
    assert.ok(kinds.has('createdBank') && kinds.has('frozen') && kinds.has('root'), [...kinds].join(','));
    for (const [m, id] of [['programUnsubscribe', program.result], ['blockUnsubscribe', blocks.result], ['slotsUpdatesUnsubscribe', updates.result]] as const) {
      assert.equal((await ws.call(m, [id])).result, true);
    }
    assert.equal((await ws.call('blockSubscribe', ['all', { commitment: 'processed' }])).error.code, -32602);
  });
});
