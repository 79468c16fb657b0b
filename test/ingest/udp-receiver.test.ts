import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { startUdpReceiver } from '../../ingest/udp-receiver';
import { quietLog } from '../support/log-capture';

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

  it('a kernel cap on SO_RCVBUF is one info line for the default request, a warning when the config asked for it', async function () {
    const request = 1 << 30; // above any usual net.core.rmem_max
    const levels: Array<{ explicit: boolean; lines: Array<{ level: number; msg: string }> }> = [];
    for (const explicit of [false, true]) {
      const { log, lines } = quietLog('info');
      const rx = await startUdpReceiver({ host: '127.0.0.1', port: 0, recvBufferBytes: request, recvBufferExplicit: explicit, queuePackets: 16, log }, () => undefined);
      await rx.close();
      if (rx.recvBufferBytes >= request) this.skip(); // this kernel grants it: nothing to report
      levels.push({ explicit, lines: lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => /SO_RCVBUF/.test(l.msg)) });
    }
    assert.equal(levels.length, 2);
    const [local, production] = levels;
    assert.equal(local!.lines.length, 1);
    assert.equal(local!.lines[0]!.level, 30, 'info in local runs');
    assert.equal(production!.lines.length, 1);
    assert.equal(production!.lines[0]!.level, 40, 'warn where the config asks for the size');
    assert.match(production!.lines[0]!.msg, /ingest\.recvBufferBytes/);
  });

  it('a port already taken fails the start with the bind error, and nothing is logged for it', async () => {
    const taken = dgram.createSocket('udp4');
    await new Promise<void>((r) => taken.bind(0, '127.0.0.1', () => r()));
    const { log, lines } = quietLog('info');
    try {
      await assert.rejects(
        startUdpReceiver({ host: '127.0.0.1', port: taken.address().port, recvBufferBytes: 0, queuePackets: 16, log }, () => undefined),
        (e: NodeJS.ErrnoException) => e.code === 'EADDRINUSE',
      );
      assert.equal(lines.length, 0, lines.join('\n'));
    } finally {
      taken.close();
    }
  });
});
