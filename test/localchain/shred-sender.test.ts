import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { ShredSender } from '../../infra/local/chain/shred-sender';
import { waitFor } from '../support/wait';

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
});
