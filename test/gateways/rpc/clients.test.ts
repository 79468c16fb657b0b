import assert from 'node:assert/strict';
import { Connection, Keypair, LAMPORTS_PER_SOL, sendAndConfirmTransaction, SystemProgram, Transaction } from '@solana/web3.js';
import bs58 from 'bs58';
import type { LocalChain } from '../../../infra/local/chain';
import { closeConnection } from '../../infra/local/chain/support';
import { waitFor } from '../../support/wait';
import { chainUpstream, localChain, rental, testGateway, type TestGateway } from './support';

// A published client (@solana/web3.js 1.x) through the chain gateway to the real local chain node, unchanged:
// plain calls, a transfer sent and confirmed (confirmation rides signatureSubscribe on the gateway's
// WebSocket), and slot/signature notifications through the gateway's WebSocket port.

describe('chain gateway: @solana/web3.js through the gateway to the local chain node', function () {
  this.timeout(60_000);
  let chain: LocalChain;
  let gw: TestGateway;
  let conn: Connection;
  before(async () => {
    chain = await localChain();
    gw = await testGateway({ upstreams: [chainUpstream(chain)], rentals: [rental({ id: 'web3', ips: ['127.0.0.1'], rps: 1000, tps: 50 })] });
    conn = new Connection(gw.http.url, { commitment: 'confirmed', wsEndpoint: gw.ws.url });
  });
  after(async () => {
    closeConnection(conn); // web3.js would otherwise reconnect to the closed gateway for the rest of the run
    await gw.close();
    await chain.close();
  });

  it('answers reads the same as the node does', async () => {
    const direct = new Connection(chain.httpUrl, 'confirmed');
    // The slot through the gateway lies between the node's own slot read just before and just after it (slots
    // only move forward): the same chain, answered live, whatever the machine's speed.
    for (const commitment of ['confirmed', 'processed'] as const) {
      const lo = await direct.getSlot(commitment);
      const slot = await conn.getSlot(commitment);
      const hi = await direct.getSlot(commitment);
      assert.ok(Number.isInteger(slot) && lo <= slot && slot <= hi, `${commitment} slot ${slot} within the node's [${lo}, ${hi}]`);
    }
    const version = await conn.getVersion();
    assert.equal(typeof version['solana-core'], 'string');
    assert.deepEqual(version, await direct.getVersion());
    // A blockhash the node itself holds valid, good for 150 blocks (MAX_PROCESSING_AGE) past the node's latest
    // block height at the time, again bracketed by the node's own reads.
    const h0 = await direct.getBlockHeight('confirmed');
    const { blockhash, lastValidBlockHeight } = await conn.getLatestBlockhash();
    const h1 = await direct.getBlockHeight('confirmed');
    assert.equal(bs58.decode(blockhash).length, 32);
    assert.equal((await direct.isBlockhashValid(blockhash)).value, true);
    assert.ok(h0 + 150 <= lastValidBlockHeight && lastValidBlockHeight <= h1 + 150, `lastValidBlockHeight ${lastValidBlockHeight} within [${h0} + 150, ${h1} + 150]`);
    const payer = Keypair.fromSecretKey(chain.payer);
    const viaGateway = await conn.getBalance(payer.publicKey);
    assert.ok(viaGateway > 0);
    assert.equal(viaGateway, await direct.getBalance(payer.publicKey));
    const [a, b] = await Promise.all([conn.getEpochInfo(), conn.getGenesisHash()]);
    assert.equal(a.slotsInEpoch, (await direct.getEpochSchedule()).slotsPerEpoch);
    assert.equal(b, chain.genesisHash);
  });

  it('sends a transfer and confirms it, with signatureSubscribe and slotSubscribe notifications through the WebSocket', async () => {
    const direct = new Connection(chain.httpUrl, 'confirmed');
    const payer = Keypair.fromSecretKey(chain.payer);
    const to = Keypair.generate().publicKey;
    const slots: number[] = [];
    const before = await direct.getSlot('processed');
    const slotSub = conn.onSlotChange((s) => slots.push(s.slot));
    const tx = new Transaction().add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: LAMPORTS_PER_SOL / 100 }));
    const sig = await sendAndConfirmTransaction(conn, tx, [payer], { commitment: 'confirmed' });
    assert.equal(typeof sig, 'string');
    assert.equal(await conn.getBalance(to), LAMPORTS_PER_SOL / 100);
    const seen = await conn.getTransaction(sig, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    assert.ok(seen !== null);
    assert.equal(seen.meta?.err, null);

    // A second transfer confirmed by an explicit signatureSubscribe notification.
    const tx2 = new Transaction().add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 1_000 }));
    tx2.recentBlockhash = (await conn.getLatestBlockhash()).blockhash;
    tx2.feePayer = payer.publicKey;
    tx2.sign(payer);
    const sig2 = await conn.sendRawTransaction(tx2.serialize());
    const notified = await new Promise<{ err: unknown }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no signature notification')), 20_000);
      conn.onSignature(sig2, (r) => {
        clearTimeout(timer);
        resolve(r);
      }, 'confirmed');
    });
    assert.equal(notified.err, null);
    // The notified transaction is the one sent: on the node, it moved 1,000 lamports to the same recipient.
    const seen2 = await direct.getTransaction(sig2, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    assert.ok(seen2 !== null);
    assert.equal(seen2.meta?.err, null);
    const keys = seen2.transaction.message.staticAccountKeys;
    const toIndex = keys.findIndex((k) => k.equals(to));
    assert.ok(toIndex > 0, `the recipient is among the account keys: ${keys.map((k) => k.toBase58()).join(',')}`);
    assert.equal(seen2.meta!.postBalances[toIndex]! - seen2.meta!.preBalances[toIndex]!, 1_000);
    assert.equal(await conn.getBalance(to), LAMPORTS_PER_SOL / 100 + 1_000);
    assert.equal(await direct.getBalance(to), LAMPORTS_PER_SOL / 100 + 1_000);

    await waitFor(() => slots.length >= 3, 20_000, 'slot notifications');
    await conn.removeSlotChangeListener(slotSub);
    const after = await direct.getSlot('processed');
    for (let i = 1; i < slots.length; i++) assert.ok(slots[i]! > slots[i - 1]!, `slots in order: ${slots.join(',')}`);
    // The node's own slots, live: none from before the subscription, none past what the node has reached since.
    assert.ok(before <= slots[0]! && slots[slots.length - 1]! <= after, `notified slots ${slots.join(',')} within the node's [${before}, ${after}]`);
  });
});
