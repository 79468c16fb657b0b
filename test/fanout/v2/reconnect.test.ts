import assert from 'node:assert/strict';
import type { Bus } from '../../../bus/bus';
import { EmbeddedBus } from '../../../bus/embedded';
import { emptyRegistry } from '../../../bus/rental-registry';
import { KafkaBus } from '../../../bus/kafka';
import { startFanout, type FanoutHandle } from '../../../fanout/server';
import { kafkaBrokers } from '../../support/kafka';
import { rng } from '../../support/prng';
import { waitFor } from '../../support/wait';
import { makeTx, quietLog, testConfig, testKey, testKey58, txRecord, uniqueTopics } from '../support';
import { V2Client } from './client';

// The reconnect test peers fail: a client killed mid-stream at random points (20 times, under load) resumes each
// time from the last cursor it received and ends with exactly the transactions of an uninterrupted reference
// subscriber — no gap, no duplicate. On the embedded bus once per transport; on Kafka the resumes alternate between
// two fanout instances reading the same topics, one on each transport (a cursor from the own HTTP/2 server resumes on
// grpc-js and back), and one instance is restarted in the middle.

const KILLS = 20;
// tx/s published. The clients decode in this process (google-protobuf), which on the 2-core development machine
// under other load keeps up with ~1,600 updates/s in all; V2_RECONNECT_RATE=4000 is the figure for a
// quieter machine or clients out of process.
const RATE = Number(process.env.V2_RECONNECT_RATE ?? 800);
const TICK_MS = 10;

type Transport = 'h2' | 'grpc-js';
/** Per variant, the transport of each fanout instance (the reference subscribes on the last). */
const VARIANTS: ReadonlyArray<{ kind: 'embedded' | 'kafka'; transports: readonly Transport[] }> = [
  { kind: 'embedded', transports: ['h2'] },
  { kind: 'embedded', transports: ['grpc-js'] },
  { kind: 'kafka', transports: ['h2', 'grpc-js'] },
];
const NAMES: Record<Transport, string> = { h2: 'own HTTP/2 server', 'grpc-js': 'grpc-js server' };
const alternating = (ts: readonly Transport[]): string => (ts.length > 1 ? ' on alternating instances and transports, one restarted' : '');

for (const { kind, transports } of VARIANTS) {
  describe(`stream v2 reconnect under load, ${kind} bus, ${transports.map((t) => NAMES[t]).join(' and ')}`, function () {
    this.timeout(300_000);
    const buses: Bus[] = [];
    const fanouts: FanoutHandle[] = [];
    const clients: V2Client[] = [];

    after(async () => {
      for (const c of clients) c.cancel();
      for (const f of fanouts) await f.close();
      for (const b of buses) await b.close();
    });

    it(`${KILLS} kills at random points, resumed from the last cursor${alternating(transports)}: exactly the reference's transactions`, async () => {
      const topics = uniqueTopics('v2-reconnect');
      const newBus = async (): Promise<Bus> => {
        const b = kind === 'embedded' ? (buses[0] ?? new EmbeddedBus({ log: quietLog(), maxMessagesPerPartition: 1_000_000 })) : new KafkaBus({ brokers: await kafkaBrokers(), clientId: 'v2-reconnect', log: quietLog() });
        if (!buses.includes(b)) buses.push(b);
        return b;
      };
      const pubBus = await newBus();
      await pubBus.createTopics([
        { name: topics.transactions, partitions: 1, compacted: false },
        { name: topics.slots, partitions: 1, compacted: false },
        { name: topics.entries, partitions: 1, compacted: false },
      ]);
      const start = async (i: number): Promise<FanoutHandle> => {
        const f = await startFanout(testConfig({ topics, heartbeatMs: 100, transport: transports[i] }), await newBus(), emptyRegistry(), quietLog());
        fanouts.push(f);
        return f;
      };
      const instances: FanoutHandle[] = [];
      for (let i = 0; i < transports.length; i++) instances.push(await start(i));
      const refOn = instances[instances.length - 1]!; // never restarted
      const key = testKey(3, 2323);
      const key58 = testKey58(3, 2323);

      const ref = new V2Client(refOn.address);
      clients.push(ref);
      ref.add('a', [key58]);
      ref.start();
      let seg = new V2Client(instances[0]!.address);
      clients.push(seg);
      seg.add('a', [key58]);
      seg.start();
      await waitFor(() => ref.updates.some((u) => u.hasFilterAck()) && seg.updates.some((u) => u.hasFilterAck()), 10_000, 'acks');
      await waitFor(() => instances.reduce((n, f) => n + f.v2Stats()!.streams, 0) === 2, 10_000, 'both open');
      // Both start live at the next record; a marker the two must see first fences the start.
      const marker = makeTx({ keys: [key] });
      await pubBus.produce(topics.transactions, [txRecord(marker)]);
      await waitFor(() => ref.txs().length === 1 && seg.txs().length === 1, 20_000, 'marker on both');

      // The publisher: RATE tx/s in ticks, three matching of every four (the fourth moves cursors only).
      let published = 1;
      let stop = false;
      const other = testKey(4, 2323);
      const publisher = (async () => {
        const perTick = Math.max(1, Math.round((RATE * TICK_MS) / 1000));
        let n = 0;
        const t0 = Date.now();
        // Produce calls overlap (a Kafka produce with acks from all replicas takes longer than a tick).
        const inFlight = new Set<Promise<void>>();
        while (!stop) {
          const batch = Array.from({ length: perTick }, () => makeTx({ keys: [(n++ & 3) === 3 ? other : key], slot: BigInt(1000 + Math.floor(n / 400)) }));
          published += batch.filter((t) => t.keys.subarray(0, 32).equals(key)).length;
          const p = pubBus.produce(topics.transactions, batch.map((t) => txRecord(t))).finally(() => inFlight.delete(p));
          inFlight.add(p);
          if (inFlight.size >= 16) await Promise.race(inFlight);
          const due = t0 + (n / RATE) * 1000;
          const wait = due - Date.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        }
        await Promise.all(inFlight);
      })();

      const rand = rng(2323);
      const got: string[] = [];
      let resumes = 0;
      let cursor: Uint8Array | undefined;
      for (let k = 0; k < KILLS; k++) {
        await new Promise((r) => setTimeout(r, 50 + Math.floor(rand() * 350)));
        // Killed before its first update with a cursor: the client still holds the one before.
        cursor = seg.lastCursor() ?? cursor;
        assert.ok(cursor !== undefined, 'a cursor to resume from');
        got.push(...seg.sigs());
        seg.cancel();
        if (instances.length > 1 && k === KILLS / 2) {
          // Restart instance 0 while the client resumes on the other one.
          const old = instances[0]!;
          await old.close();
          instances[0] = await start(0);
        }
        const on = instances[(k + 1) % instances.length]!;
        seg = new V2Client(on.address);
        clients.push(seg);
        seg.add('a', [key58]);
        seg.start({ cursor });
        resumes++;
      }
      stop = true;
      await publisher;
      await waitFor(() => ref.txs().length === published || ref.status !== undefined, 60_000, `reference has all ${published}`);
      assert.equal(ref.status?.details, undefined, 'the reference stream stays open');
      assert.equal(ref.txs().length, published);
      const expected = ref.sigs();
      await waitFor(() => got.length + seg.txs().length >= expected.length, 60_000, 'the last segment catches up');
      got.push(...seg.sigs());
      assert.equal(resumes, KILLS);
      assert.equal(got.length, expected.length, `no gap, no duplicate (${got.length} vs ${expected.length})`);
      assert.deepEqual(got, expected);
      assert.ok(!seg.updates.some((u) => u.hasGap()), 'no gap notice');
      console.log(`      ${published} matching transactions of ${Math.round((published * 4) / 3)} published at ~${RATE}/s; ${KILLS} resumes`);
    });
  });
}
