import assert from 'node:assert/strict';
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey, sendAndConfirmTransaction, SystemProgram, Transaction } from '@solana/web3.js';
import type { LocalChain } from '../../../infra/local/chain';
import { closeConnection } from '../../localchain/support';
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
    const slot = await conn.getSlot();
    assert.ok(Number.isInteger(slot) && slot >= 0);
    const direct0 = await new Connection(chain.httpUrl, 'processed').getSlot('processed');
    assert.ok(Math.abs(direct0 - (await conn.getSlot('processed'))) < 50, 'same chain behind the gateway');
    const version = await conn.getVersion();
    assert.equal(typeof version['solana-core'], 'string');
    const { blockhash, lastValidBlockHeight } = await conn.getLatestBlockhash();
    assert.equal(typeof blockhash, 'string');
    assert.ok(lastValidBlockHeight >= 0);
    const payer = Keypair.fromSecretKey(chain.payer);
    const viaGateway = await conn.getBalance(payer.publicKey);
    const direct = await new Connection(chain.httpUrl, 'confirmed').getBalance(payer.publicKey);
    assert.ok(viaGateway > 0);
    assert.equal(viaGateway, direct);
    const [a, b] = await Promise.all([conn.getEpochInfo(), conn.getGenesisHash()]);
    assert.ok(a.slotsInEpoch > 0);
    assert.equal(b, chain.genesisHash);
  });

  it('sends a transfer and confirms it, with signatureSubscribe and slotSubscribe notifications through the WebSocket', async () => {
    const payer = Keypair.fromSecretKey(chain.payer);
    const to = Keypair.generate().publicKey;
    const slots: number[] = [];
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

    await waitFor(() => slots.length >= 3, 20_000, 'slot notifications');
    assert.ok(slots.length >= 3);
    for (let i = 1; i < slots.length; i++) assert.ok(slots[i]! > slots[i - 1]!, `slots in order: ${slots.join(',')}`);
    await conn.removeSlotChangeListener(slotSub);
    assert.ok(new PublicKey(to).equals(to));
  });
});
