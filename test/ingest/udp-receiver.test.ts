import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { Worker } from 'node:worker_threads';
import { startUdpReceiver } from '../../ingest/udp-receiver';
import { quietLog } from '../support/log-capture';
import { waitFor } from '../support/wait';

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
  it('a known-good sender gets a connected socket of its own (up to the cap), and sources are handed over', async () => {
    const got: Array<[string, number]> = [];
    const good = new Set<string>(['127.0.0.1']);
    const rx = await startUdpReceiver(
      { host: '127.0.0.1', port: 0, recvBufferBytes: 1 << 20, queuePackets: 1024, dedicatedSockets: 1, preferred: (s) => good.has(s) },
      (p, _t, source) => got.push([source, p.length]),
    );
    const bind = (addr: string): Promise<dgram.Socket> => new Promise((r) => { const s = dgram.createSocket('udp4'); s.bind(0, addr, () => r(s)); });
    const feedA = await bind('127.0.0.1');
    const feedB = await bind('127.0.0.1');
    const other = await bind('127.0.0.2');
    const send = (s: dgram.Socket, n: number): Promise<void> => new Promise((r) => s.send(Buffer.alloc(n), rx.address.port, '127.0.0.1', () => r()));
    try {
      await send(feedA, 10);
      await waitFor(() => rx.stats().dedicated === 1, 5000, 'the dedicated socket');
      await send(feedA, 11); // now on its own socket
      await send(feedB, 12); // a second good sender: over the cap, stays on the shared socket
      await send(other, 13);
      await waitFor(() => got.length === 4, 5000, 'four datagrams');
      assert.deepEqual(got, [['127.0.0.1', 10], ['127.0.0.1', 11], ['127.0.0.1', 12], ['127.0.0.2', 13]]);
      assert.equal(rx.stats().dedicated, 1);
      assert.equal(rx.stats().received, 4);
    } finally {
      for (const s of [feedA, feedB, other]) s.close();
      await rx.close();
    }
  });
  it('datagrams from others that reach a dedicated socket before its connect() keep their own source', async () => {
    // Each new feed port gets a socket bound to the port (SO_REUSEADDR) and only then connect()ed; in between,
    // Linux gives that socket what the shared one would have had. Another address floods throughout while
    // 40 feed ports are given sockets: every flood datagram must still be handed over as the flood's.
    const got: Array<[string, number]> = [];
    const rx = await startUdpReceiver(
      { host: '127.0.0.1', port: 0, recvBufferBytes: 1 << 20, queuePackets: 1 << 16, dedicatedSockets: 64, preferred: (s) => s === '127.0.0.1' },
      (p, _t, source) => got.push([source, p[0]!]),
    );
    const bind = (addr: string): Promise<dgram.Socket> => new Promise((r) => { const s = dgram.createSocket('udp4'); s.bind(0, addr, () => r(s)); });
    const feeds: dgram.Socket[] = [];
    const FLOOD = 0x46; // 'F'
    const FEED = 0x47;
    // The flood runs in a thread of its own, as a real one runs beside ingest (in this thread it would pause
    // whenever the receiver's bind and connect callbacks run, and never fall between them).
    const flooder = new Worker(`
      const dgram = require('node:dgram');
      const { parentPort, workerData } = require('node:worker_threads');
      const s = dgram.createSocket('udp4');
      let on = true, sent = 0;
      parentPort.on('message', () => { on = false; s.close(() => parentPort.postMessage(sent)); });
      const pkt = Buffer.from([workerData.tag, 0, 0, 0]);
      const go = () => { if (!on) return; for (let i = 0; i < 64; i++) s.send(pkt, workerData.port, '127.0.0.1'); sent += 64; setImmediate(go); };
      s.bind(0, '127.0.0.2', go);
    `, { eval: true, workerData: { port: rx.address.port, tag: FLOOD } });
    let floodSent = 0;
    const stopFlood = async (): Promise<void> => {
      const n = new Promise<number>((r) => flooder.once('message', r));
      flooder.postMessage('stop');
      floodSent = await n;
      await flooder.terminate();
    };
    try {
      await waitFor(() => got.length > 100, 5000, 'the flood');
      for (let i = 0; i < 40; i++) {
        const f = await bind('127.0.0.1');
        feeds.push(f);
        // The flood fills the shared socket's buffer, so the kernel may drop this sender's first datagrams too.
        await waitFor(() => {
          f.send(Buffer.from([FEED, 0, 0, 0]), rx.address.port, '127.0.0.1');
          return rx.stats().dedicated === i + 1;
        }, 10_000, `dedicated socket ${i + 1}`);
      }
      await stopFlood();
      await waitFor(() => rx.stats().queued === 0, 5000, 'the queue drained');
      const floodGot = got.filter(([, k]) => k === FLOOD);
      assert.ok(floodGot.length > 1000, `the flood arrived (${floodGot.length} of ${floodSent})`);
      const misattributed = floodGot.filter(([s]) => s !== '127.0.0.2').length;
      assert.equal(misattributed, 0, `flood datagrams handed over as the feed's (${misattributed} of ${floodGot.length})`);
      assert.ok(got.filter(([, k]) => k === FEED).every(([s]) => s === '127.0.0.1'));
    } finally {
      await flooder.terminate();
      for (const s of feeds) s.close();
      await rx.close();
    }
  });
  it('past half the queue, packets from senders that are not preferred are shed; preferred ones still queue', async () => {
    const got: string[] = [];
    const rx = await startUdpReceiver(
      { host: '127.0.0.1', port: 0, recvBufferBytes: 1 << 20, queuePackets: 16, dedicatedSockets: 0, preferred: (s) => s === '127.0.0.1' },
      (_p, _t, source) => got.push(source),
    );
    const bind = (addr: string): Promise<dgram.Socket> => new Promise((r) => { const s = dgram.createSocket('udp4'); s.bind(0, addr, () => r(s)); });
    const feed = await bind('127.0.0.1');
    const other = await bind('127.0.0.2');
    try {
      // One synchronous burst (read before the first drain, as above): 12 unproven, then 6 from the feed.
      const sends = [...Array.from({ length: 12 }, () => other), ...Array.from({ length: 6 }, () => feed)]
        .map((s) => new Promise<void>((r) => s.send(Buffer.alloc(50), rx.address.port, '127.0.0.1', () => r())));
      await Promise.all(sends);
      await waitFor(() => rx.stats().received === 18 && rx.stats().queued === 0, 5000, 'the burst read and drained');
      const s = rx.stats();
      assert.equal(got.filter((x) => x === '127.0.0.2').length, 8, 'unproven: up to half the queue');
      assert.equal(s.shed, 4);
      assert.equal(got.filter((x) => x === '127.0.0.1').length, 6, 'the feed queued past half');
      assert.equal(s.queueDrops, 0);
    } finally {
      feed.close();
      other.close();
      await rx.close();
    }
  });
  it('with dedicated sockets on (SO_REUSEADDR), a port another socket holds, even with SO_REUSEADDR, still fails the start', async () => {
    const taken = dgram.createSocket({ type: 'udp4', reuseAddr: true });
    await new Promise<void>((r) => taken.bind(0, '127.0.0.1', r));
    try {
      await assert.rejects(
        startUdpReceiver({ host: '127.0.0.1', port: taken.address().port, recvBufferBytes: 0, queuePackets: 16, preferred: () => true }, () => undefined),
        (e: NodeJS.ErrnoException) => e.code === 'EADDRINUSE',
      );
    } finally {
      taken.close();
    }
  });
});
