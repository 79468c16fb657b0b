import assert from 'node:assert/strict';
import bs58 from 'bs58';
import { randomKeypair } from '../../infra/base/keypair';
import type { Running } from '../../infra/launcher';
import { chainClient, latestBlockhash, sendTx, transfer, waitConfirmed } from '../support/chain';
import { kafkaBrokers } from '../support/kafka';
import { quietLog } from '../support/log-capture';
import { seqsContiguous, V2Client } from '../fanout/v2/client';
import { launchOneMachine } from '../support/one-machine';
import { blockFormatsFor } from '../support/block-formats';

// The whole loop for stream v2's entries and RAW bytes: a transfer sent to the local chain is executed, shredded to
// ingest, published on stream.transactions and stream.entries, and a v2 client gets its Entry, its RAW bytes (equal
// to what the chain's getTransaction returns with encoding base64) and its DECODED form. Once on the embedded bus,
// once on a real Kafka broker (the default topic names: the filters name a fresh key, and only entries holding the
// transfer are looked at).

for (const busKind of ['embedded', 'kafka'] as const) for (const format of blockFormatsFor(busKind)) {
  describe(`one machine, ${busKind} bus, ${format} blocks: chain → shreds → ingest → stream.entries → v2 Entry and RAW`, function () {
    this.timeout(240_000);
    let running: Running | undefined;
    const clients: V2Client[] = [];
    after(async () => {
      for (const c of clients) c.cancel();
      await running?.stop();
    });

    it("the transfer's Entry, RAW bytes equal to getTransaction base64, and its DECODED form", async () => {
      const { log } = quietLog();
      running = await launchOneMachine({ bus: busKind === 'kafka' ? await kafkaBrokers() : 'embedded', log, blockFormat: format });
      const e = running.endpoints;
      const { call, payer } = chainClient(e);
      const recipient = randomKeypair();
      const r58 = bs58.encode(recipient.publicKey);

      const c = new V2Client(e.stream!);
      clients.push(c);
      c.add('raw', [r58], { encoding: 'raw' });
      c.add('dec', [r58]);
      c.start({ entries: true });
      await c.waitUpdates((u) => u.filter((x) => x.hasFilterAck()).length === 2 && u.some((x) => x.hasHeartbeat() && x.getCursor_asU8().length > 0), 'acks and a heartbeat', 30_000);

      const t = transfer(payer, recipient.publicKey, 3_000_000n, await latestBlockhash(call));
      assert.equal(await sendTx(call, t.tx), t.signature);
      const status = await waitConfirmed(call, t.signature);
      assert.equal(status.err, null);
      const got = await call<{ slot: number; transaction: [string, string] } | null>('getTransaction', [t.signature, { encoding: 'base64', commitment: 'confirmed' }]);
      assert.ok(got !== null && got.transaction[1] === 'base64');
      const chainBytes = Buffer.from(got.transaction[0], 'base64');
      assert.ok(chainBytes.equals(t.tx), 'the chain returns the bytes that were sent');

      const sig = bs58.decode(t.signature);
      const isRaw = (u: (typeof c.updates)[number]): boolean => u.hasTransaction() && u.getTransaction()!.getRaw_asU8().length > 0;
      await c.waitUpdates((us) => us.filter((u) => u.hasTransaction()).length >= 2 && us.some((u) => u.hasEntry() && u.getEntry()!.getSignaturesList_asU8().some((s) => Buffer.from(s).equals(sig))), 'RAW, DECODED and the Entry', 30_000);
      const raw = c.updates.filter(isRaw);
      assert.equal(raw.length, 1);
      const rt = raw[0]!.getTransaction()!;
      assert.ok(Buffer.from(rt.getRaw_asU8()).equals(chainBytes), 'RAW = getTransaction base64 bytes');
      assert.equal(rt.getSlot(), status.slot);
      assert.deepEqual(raw[0]!.getFiltersList(), ['raw']);
      const dec = c.updates.filter((u) => u.hasTransaction() && !isRaw(u));
      assert.equal(dec.length, 1);
      assert.deepEqual(dec[0]!.getFiltersList(), ['dec']);
      assert.equal(bs58.encode(dec[0]!.getTransaction()!.getDecoded()!.getSignaturesList_asU8()[0]!), t.signature);
      const entry = c.updates.find((u) => u.hasEntry() && u.getEntry()!.getSignaturesList_asU8().some((s) => Buffer.from(s).equals(sig)))!.getEntry()!;
      assert.equal(entry.getSlot(), status.slot);
      assert.equal(entry.getTransactionCount(), entry.getSignaturesList().length);
      assert.equal(entry.getHash_asU8().length, 32);
      assert.ok(entry.getNumHashes() > 0);
      // The chain's shreds reach ingest from each slot's start, in order: the slot-wide position is known.
      assert.ok(entry.getIndexKnown(), 'index known');
      assert.ok(seqsContiguous(c.updates));
    });
  });
}
