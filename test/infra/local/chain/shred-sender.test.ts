import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { ShredSender } from '../../../../infra/local/chain/shred-sender';
import { waitFor } from '../../../support/wait';
import { SlotStatusCode } from '../../../../bus/topics/stream-slot-status';
import { Pipeline } from '../../../../ingest/pipeline';
import type { SlotStatusEvent } from '../../../../ingest/slot-status';
import { fixtureTxs } from '../../../ingest/support/alpenglow';

// Every socket of the local run is loopback: the chain's shred sender too, when its ingest target is loopback.

describe('local chain: the shred sender binds where it sends', () => {
  it('a loopback target: the socket is bound to that loopback address, not every interface', async () => {
    const rx = dgram.createSocket('udp4');
    await new Promise<void>((r) => rx.bind(0, '127.0.0.1', () => r()));
    const s = new ShredSender({ host: '127.0.0.1', port: rx.address().port, shredVersion: 1, leaderSeed: Buffer.alloc(32, 7), genesisRoot: Buffer.alloc(32, 1) });
    try {
      await waitFor(() => s.localAddress() !== undefined, 5_000, 'bound');
      assert.equal(s.localAddress()!.address, '127.0.0.1');
      // It still sends: one batch of one tick entry arrives (from that address).
      const got = new Promise<dgram.RemoteInfo>((r) => rx.once('message', (_m, info) => r(info)));
      s.send(1, 0, [{ numHashes: 1n, hash: Buffer.alloc(32, 2), txs: [] }], 1, true);
      assert.equal((await got).address, '127.0.0.1');
    } finally {
      await s.close();
      rx.close();
    }
  });

  it('format alpenglow: each slot is a Header · batches · Footer · final tick block that ingest decodes, with the block id the sender computed', async () => {
    const rx = dgram.createSocket('udp4');
    await new Promise<void>((r) => rx.bind(0, '127.0.0.1', () => r()));
    const statuses: SlotStatusEvent[] = [];
    let txs = 0;
    const p = new Pipeline({ blockFormat: 'alpenglow', sink: { batch: (o) => void (txs += o.txs.length), slot: () => {}, slotStatus: (e) => void statuses.push(e) } });
    rx.setRecvBufferSize(8 << 20); // a slot's few hundred datagrams leave at once here (a chain spreads them over the slot)
    rx.on('message', (m) => p.push(m, Date.now()));
    const s = new ShredSender({ host: '127.0.0.1', port: rx.address().port, shredVersion: 0, leaderSeed: Buffer.alloc(32, 7), genesisRoot: Buffer.alloc(32, 1), format: 'alpenglow' });
    const T = fixtureTxs();
    try {
      const decoded = (slot: number) => statuses.find((e) => e.slot === BigInt(slot) && e.status === SlotStatusCode.decoded);
      const judged = (slot: number) => decoded(slot) !== undefined || statuses.some((e) => e.slot === BigInt(slot) && e.status === SlotStatusCode.dead);
      // One slot at a time, as a leader sends them.
      for (const slot of [1, 2, 3]) {
        s.send(slot, slot - 1, [{ numHashes: 10n, hash: Buffer.alloc(32, slot), txs: T.slice(0, 2) }], 1, false);
        s.send(slot, slot - 1, [{ numHashes: 10n, hash: Buffer.alloc(32, slot + 10), txs: T.slice(2, 3) }, { numHashes: 1n, hash: Buffer.alloc(32, slot + 20), txs: [] }], 2, true);
        await waitFor(() => judged(slot), 10_000, `slot ${slot} judged (${JSON.stringify(statuses.map((e) => [Number(e.slot), e.status, e.reason]))})`);
      }
      for (const slot of [1, 2, 3]) {
        const d = decoded(slot);
        assert.ok(d?.block !== undefined, `slot ${slot}: ${JSON.stringify(statuses.filter((e) => e.slot === BigInt(slot)).map((e) => e.reason))}`);
        assert.equal(d.block.blockId.toString('hex'), s.blockIds.get(slot)!.toString('hex'), 'the id ingest announces is the sender\'s');
        assert.equal(d.block.parentSlot, BigInt(slot - 1));
        assert.equal(d.block.footer.userAgent.toString(), 'meridian-localchain');
        if (slot > 1) assert.equal(d.block.parentBlockId.toString('hex'), s.blockIds.get(slot - 1)!.toString('hex'), 'the header names the parent block id');
      }
      assert.equal(txs, 9);
    } finally {
      await s.close();
      rx.close();
    }
  });
});
