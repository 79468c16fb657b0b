import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { waitFor } from './wait';
import { LossRelay } from './udp-loss-relay';

// The bench's lossy path: a relay in front of a loopback echo server drops the seeded share each way, the same
// datagrams for the same seed, and a changed share applies from the next datagram.

async function echoServer(): Promise<dgram.Socket> {
  const s = dgram.createSocket('udp4');
  s.on('message', (m, r) => s.send(m, r.port, r.address));
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  return s;
}

/** Sends n numbered datagrams through the relay (paced, so the kernel drops none) and returns the numbers echoed back. */
async function run(relay: LossRelay, n: number): Promise<Set<number>> {
  const c = dgram.createSocket('udp4');
  const back = new Set<number>();
  c.on('message', (m) => back.add(m.readUInt32LE(0)));
  await new Promise<void>((r) => c.bind(0, '127.0.0.1', r));
  const [host, port] = relay.addr.split(':');
  const k = relay.counts;
  const up0 = k.upDropped;
  const down0 = k.downDropped;
  const fwd0 = k.downForwarded;
  for (let i = 0; i < n; i++) {
    const b = Buffer.alloc(64);
    b.writeUInt32LE(i, 0);
    c.send(b, Number(port), host);
    if (i % 20 === 19) await new Promise((r) => setTimeout(r, 2));
  }
  // Every datagram accounted for (dropped up, dropped down, or forwarded back) and every forwarded one received.
  await waitFor(() => k.upDropped - up0 + (k.downDropped - down0) + (k.downForwarded - fwd0) >= n && back.size === k.downForwarded - fwd0, 10_000, 'every datagram dropped or echoed', 10);
  c.close();
  return back;
}

describe('test support: the seeded UDP loss relay', () => {
  let echo: dgram.Socket;
  before(async () => (echo = await echoServer()));
  after(() => echo.close());

  it('drops the seeded share each way, the same datagrams for the same seed; a new share applies at once', async () => {
    const upstream = { host: '127.0.0.1', port: echo.address().port };
    const a = await LossRelay.start({ listen: '127.0.0.1', upstream, loss: 0.1, seed: 7 });
    const b = await LossRelay.start({ listen: '127.0.0.1', upstream, loss: 0.1, seed: 7 });
    try {
      const n = 2_000;
      const gotA = await run(a, n);
      const gotB = await run(b, n);
      assert.ok(a.counts.upDropped > n * 0.07 && a.counts.upDropped < n * 0.13, `up: ${a.counts.upDropped} of ${n}`);
      const down = a.counts.downDropped / (a.counts.downDropped + a.counts.downForwarded);
      assert.ok(down > 0.07 && down < 0.13, `down: ${down}`);
      assert.ok(gotA.size > n * 0.75 && gotA.size < n * 0.86, `≈ 0.9 × 0.9 came back: ${gotA.size}`);
      assert.deepEqual([...gotA].sort((x, y) => x - y), [...gotB].sort((x, y) => x - y), 'the same seed drops the same datagrams');
      a.loss = 0;
      const all = await run(a, 500);
      assert.equal(all.size, 500, 'loss 0 from now on');
      a.loss = 1;
      const none = await run(a, 200);
      assert.equal(none.size, 0, 'loss 1: nothing through');
    } finally {
      await a.close();
      await b.close();
    }
  });
});
