import { StreamClient } from '../support/stream-client';
import { makeTx, startTestFanout } from './support';
describe('exp', () => {
  it('paused grpc client with slow feed', async () => {
    const f = await startTestFanout({ queueMaxMessages: 200, queueMaxBytes: 1 << 20, endGraceMs: 300, heartbeatMs: 10_000 });
    const slow = StreamClient.open(f.address);
    slow.send({ transactions: { all: {} }, pingId: 1 });
    await slow.waitFor((r) => r.pingId === 1);
    slow.call.pause();
    for (let i = 0; i < 300; i++) {
      await f.publishTx(...Array.from({ length: 10 }, () => makeTx()));
      await new Promise((r) => setTimeout(r, 3));
      if (i % 20 === 0) console.log(i, JSON.stringify(f.fanout.stats().queue), f.fanout.stats().delivered, f.fanout.stats().bytes);
      if (f.fanout.stats().subscribers === 0) { console.log('ended at', i); break; }
    }
    await new Promise((r) => setTimeout(r, 1000));
    console.log('stats', JSON.stringify(f.fanout.stats()));
    slow.call.resume();
    const s = await slow.waitForEnd(5000);
    console.log('status', s.codeName, s.details, 'got', slow.transactions.length);
    await f.close();
  });
});
