import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { rentalsFromList } from '../../bus/rental-registry';
import { parseRental } from '../../bus/topics/rentals';
import type { UsageEvent } from '../../bus/topics/usage-events';
import { StreamUsage } from '../../fanout/stream-usage';
import { StreamClient } from '../support/stream-client';
import { waitFor } from '../support/wait';
import { makeTx, startTestFanout, testKey, testKey58, type TestFanout } from './support';

// Usage of the stream surface: the transactions written to a rental's streams, billed per period and at a
// stream's end, through the same usage events as every other surface.

class Sink {
  readonly events: UsageEvent[] = [];
  emit(e: UsageEvent): void {
    this.events.push(e);
  }
  units(rental: string): number {
    return this.events.filter((e) => e.rental === rental).reduce((n, e) => n + e.units, 0);
  }
}

function withToken(token: string): grpc.Metadata {
  const m = new grpc.Metadata();
  m.set('x-token', token);
  return m;
}

describe('fanout: stream usage events', () => {
  it('bills the transactions written to a rental\'s streams, per period and at the end of a stream', async () => {
    const sink = new Sink();
    const rentals = rentalsFromList([
      parseRental({ id: 'streamer', tokens: ['tok-stream-usage-1'], pps: 100 }),
      parseRental({ id: 'fence', tokens: ['tok-stream-usage-fence'], pps: 100 }),
    ]);
    const f: TestFanout = await startTestFanout({ auth: { mode: 'token' } }, rentals, undefined, { usage: sink, usagePeriodMs: 150 });
    const key = testKey(1, 77);
    const streamerEvents = (): number => sink.events.filter((e) => e.rental === 'streamer').length;
    try {
      // Another rental's stream, open throughout: what it receives is billed by a period's flush only, so each of
      // its events shows that a whole period (every open stream billed at once) ran after that transaction.
      const fence = StreamClient.open(f.address, { metadata: withToken('tok-stream-usage-fence') });
      fence.send({ transactions: { fence: { accountInclude: [testKey58(9, 77)] } }, pingId: 1 });
      await fence.waitFor((r) => r.pingId === 1);
      const c = StreamClient.open(f.address, { metadata: withToken('tok-stream-usage-1') });
      c.send({ transactions: { mine: { accountInclude: [testKey58(1, 77)] } }, pingId: 1 });
      await c.waitFor((r) => r.pingId === 1);
      await f.publishTx(...Array.from({ length: 5 }, () => makeTx({ keys: [key, testKey(2, 77)] })), ...Array.from({ length: 3 }, () => makeTx({ keys: [testKey(3, 77)] })));
      await waitFor(() => sink.units('streamer') === 5, 5_000, 'the first period billed');
      assert.ok(sink.events.every((e) => e.surface === 'stream' && e.method === 'Subscribe' && e.outcome === 'ok'));
      const periods = streamerEvents();
      await f.publishTx(makeTx({ keys: [key] }), makeTx({ keys: [key] }));
      await waitFor(() => c.responses.filter((r) => r.transaction !== undefined).length === 7, 5_000, '7 transactions received');
      await c.close();
      await waitFor(() => sink.units('streamer') === 7, 5_000, 'the end of the stream billed');
      assert.ok(streamerEvents() > periods);
      // Idle periods add nothing: two periods that bill the fence stream pass after the end was billed.
      for (const n of [1, 2]) {
        await f.publishTx(makeTx({ keys: [testKey(9, 77)] }));
        await waitFor(() => sink.units('fence') === n, 5_000, `period ${n} after the end billed the fence stream`);
      }
      assert.equal(sink.units('streamer'), 7, 'idle periods bill nothing more');
      assert.ok(sink.events.every((e) => e.units > 0), 'no zero-unit events');
      await fence.close();
    } finally {
      await f.close();
    }
  });

  it('sums one rental\'s streams into one event per period and bills nothing for streams without a rental', () => {
    const sink = new Sink();
    const counts = [3, 4, 0, 9];
    const streams = [
      { rental: { id: 'a' }, takeDelivered: () => counts[0]! },
      { rental: { id: 'a' }, takeDelivered: () => counts[1]! },
      { rental: { id: 'b' }, takeDelivered: () => counts[2]! },
      { takeDelivered: () => counts[3]! },
    ];
    const u = new StreamUsage(sink, () => streams, 60_000);
    u.close(); // close() flushes
    assert.equal(sink.events.length, 1);
    assert.deepEqual([sink.events[0]!.rental, sink.events[0]!.units], ['a', 7]);
  });
});
