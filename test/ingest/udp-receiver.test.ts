import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { startUdpReceiver } from '../../ingest/udp-receiver';

describe('ingest: UDP receiver', () => {
  it('hands packets over with arrival times, reports SO_RCVBUF, and counts queue overflow', async () => {
    const got: Array<[number, number]> = [];
    const rx = await startUdpReceiver({ host: '127.0.0.1', port: 0, recvBufferBytes: 1 << 20, queuePackets: 16 }, (p, t) => got.push([p.length, t]));
    const tx = dgram.createSocket('udp4');
    try {
      assert.ok(rx.address.port > 0);
      assert.ok(rx.recvBufferBytes >= 1 << 20, `SO_RCVBUF ${rx.recvBufferBytes}`); // Linux reports double what it grants
      const before = Date.now();
      // 64 datagrams in one go: the drain runs only after this synchronous burst is read, so 16 fit.
      await Promise.all(Array.from({ length: 64 }, (_, i) => new Promise<void>((r) => tx.send(Buffer.alloc(100 + i), rx.address.port, '127.0.0.1', () => r()))));
      const deadline = Date.now() + 5000;
      while (rx.stats().received < 64 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      await new Promise((r) => setTimeout(r, 50));
      const s = rx.stats();
      assert.equal(s.received, 64);
      assert.equal(got.length + s.queueDrops, 64);
      assert.ok(got.length >= 16);
      // Sender and receiver share this event loop, so the whole burst is in the kernel before the first read.
      assert.ok(s.queueDrops > 0, 'the burst overflowed the 16-packet queue');
      assert.ok(got.every(([, t]) => t >= before - 1 && t <= Date.now() + 1));
    } finally {
      tx.close();
      await rx.close();
    }
  });
});
