import assert from 'node:assert/strict';
import bs58 from 'bs58';
import { randomKeypair } from '../../infra/base/keypair';
import type { Running } from '../../infra/launcher';
import { metrics } from '../../infra/base/metrics';
import { balance, chainClient, latestBlockhash, sendTx, transfer, waitConfirmed } from '../support/chain';
import { kafkaBrokers } from '../support/kafka';
import { quietLog } from '../support/log-capture';
import { StreamClient } from '../support/stream-client';
import { waitFor } from '../support/wait';
import { sendSlotShreds } from './support';
import { launchOneMachine } from '../support/one-machine';
import { blockFormatsFor } from '../support/block-formats';

// The whole loop on one machine: a transfer sent to the local chain is executed, lands in its block, is shredded
// to ingest (leader-signature check on, schedule from the chain's RPC), published on the bus, and delivered to a
// gRPC subscriber filtering on the sender. Once on the embedded bus, once on a real Kafka broker. The filters
// name fresh keys, so other tests sharing the broker's default topics cannot match them.

const SIGNATURE_DROPS = /^meridian_ingest_shreds_dropped_total\{reason="signature"\} (\d+)$/m;

function signatureDrops(): number {
  const m = SIGNATURE_DROPS.exec(metrics.render());
  return m === null ? 0 : Number(m[1]);
}

for (const busKind of ['embedded', 'kafka'] as const) for (const format of blockFormatsFor(busKind)) {
  describe(`one machine, ${busKind} bus, ${format} blocks: sendTransaction → chain → shreds → ingest → bus → fanout → subscriber`, function () {
    this.timeout(240_000);
    let running: Running | undefined;
    const clients: StreamClient[] = [];
    after(async () => {
      for (const c of clients) await c.close();
      await running?.stop();
    });

    it('delivers the executed transfer to a subscriber filtering on its sender, and drops an impostor leader\'s slot', async () => {
      const { log, lines } = quietLog();
      running = await launchOneMachine({ bus: busKind === 'kafka' ? await kafkaBrokers() : 'embedded', log, blockFormat: format });
      const e = running.endpoints;
      assert.match(e.chain?.http ?? '', /^http:\/\/127\.0\.0\.1:\d+/);
      assert.match(e.chain?.ws ?? '', /^ws:\/\/127\.0\.0\.1:\d+/);
      assert.equal(e.demo?.payerSecretKey?.length, 64);
      assert.ok(lines.some((l) => l.includes('leader schedule from the local chain')), 'the launcher points ingest at the chain');
      assert.ok(!lines.some((l) => l.includes('skips the leader-signature check')), 'leader check must be on');

      const { call, payer } = chainClient(e);
      const sender = randomKeypair();
      const recipient = randomKeypair();
      const fund = transfer(payer, sender.publicKey, 1_000_000_000n, await latestBlockhash(call));
      assert.equal(await sendTx(call, fund.tx), fund.signature);
      await waitConfirmed(call, fund.signature);
      assert.equal(await balance(call, sender.publicKey), 1_000_000_000);

      const sub = StreamClient.open(e.stream!);
      clients.push(sub);
      sub.send({ transactions: { sender: { accountInclude: [bs58.encode(sender.publicKey)] } }, pingId: 1 });
      await sub.waitFor((r) => r.pingId === 1, 10_000); // the filter is in place

      const t = transfer(sender, recipient.publicKey, 2_000_000n, await latestBlockhash(call));
      assert.equal(await sendTx(call, t.tx), t.signature);
      const status = await waitConfirmed(call, t.signature);
      assert.equal(status.err, null);

      // Executed: getTransaction has its meta, the block lists it, balances moved.
      const got = await call<{ slot: number; meta: { err: unknown; fee: number; preBalances: number[]; postBalances: number[] } } | null>('getTransaction', [t.signature, { encoding: 'json', commitment: 'confirmed' }]);
      assert.ok(got !== null);
      assert.equal(got.slot, status.slot);
      assert.equal(got.meta.err, null);
      assert.equal(got.meta.fee, 5000);
      assert.deepEqual(got.meta.postBalances.slice(0, 2), [1_000_000_000 - 2_000_000 - 5000, 2_000_000]);
      const block = await call<{ signatures: string[] }>('getBlock', [status.slot, { transactionDetails: 'signatures', rewards: false, commitment: 'confirmed' }]);
      assert.ok(block.signatures.includes(t.signature), 'the block lists the transfer');

      // Delivered through shreds, ingest and the bus to the subscriber.
      const r = await sub.waitFor((x) => x.transaction?.signature === t.signature, 30_000);
      const delivered = r.transaction!;
      assert.deepEqual(r.filters, ['sender']);
      assert.equal(delivered.signature, t.signature);
      assert.equal(delivered.slot, status.slot);
      assert.deepEqual(delivered.accountKeys, [bs58.encode(sender.publicKey), bs58.encode(recipient.publicKey), '11111111111111111111111111111111']);

      // Leader check on: a slot shredded by an impostor (a real signed transfer inside) is dropped, not streamed.
      const thief = randomKeypair();
      const forged = transfer(thief, recipient.publicKey, 1n, await latestBlockhash(call));
      const thiefSub = StreamClient.open(e.stream!);
      clients.push(thiefSub);
      thiefSub.send({ transactions: { thief: { accountInclude: [bs58.encode(thief.publicKey)] } }, pingId: 2 });
      await thiefSub.waitFor((x) => x.pingId === 2, 10_000);
      const dropsBefore = signatureDrops();
      const slotNow = await call<number>('getSlot', [{ commitment: 'processed' }]);
      // The chain's shred version, so the forgery passes every check but the leader's signature.
      const nodes = await call<Array<{ shredVersion: number }>>('getClusterNodes', []);
      assert.equal(nodes.length, 1);
      await sendSlotShreds(e.ingest!, slotNow + 20, nodes[0]!.shredVersion, forged.tx); // signed by an impostor
      await waitFor(() => signatureDrops() > dropsBefore, 10_000, 'forged shreds dropped for their signature');
      // The fence: a real transfer sender → thief, sent only now, takes the same way (the chain's shreds → ingest,
      // one socket read in order → bus → fanout) and matches both filters. Whatever ingest made of the forged
      // shreds, it made before it read this transfer's shreds, so it reaches each subscriber first.
      const fence = transfer(sender, thief.publicKey, 1_000_000n, await latestBlockhash(call));
      assert.equal(await sendTx(call, fence.tx), fence.signature);
      await thiefSub.waitFor((x) => x.transaction?.signature === fence.signature, 30_000);
      await sub.waitFor((x) => x.transaction?.signature === fence.signature, 30_000);
      assert.deepEqual(thiefSub.transactions.map((x) => x.signature), [fence.signature], 'the forged transfer was never streamed');
      // The funding transfer also names the sender; it was confirmed before the subscription, so at most it.
      const others = sub.transactions.filter((x) => x.signature !== t.signature && x.signature !== fence.signature);
      assert.ok(others.every((x) => x.signature === fund.signature), JSON.stringify(others));
      assert.equal(sub.transactions.filter((x) => x.signature === t.signature).length, 1);
      assert.equal(sub.transactions.filter((x) => x.signature === fence.signature).length, 1);
    });
  });
}
