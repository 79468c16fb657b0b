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
import { seqsContiguous, V2Client } from './client';
import { V2LightClient } from './light-client';

// The reconnect test peers fail: a client killed mid-stream at random points (20 times, under 4,000 tx/s) resumes
// each time from the last cursor it received and ends with exactly the transactions of an uninterrupted reference
// subscriber, with the same cursors, in the same order — no gap, no duplicate; every segment's seq runs 1, 2, 3, …
// and no stream sees a gap notice. The streams use lag policy close (the default): a segment cut off with DATA_LOSS
// would be resumed from its cursor like a killed one, and the summary line names any that was. On the embedded bus once per transport; on Kafka the resumes alternate between
// two fanout instances reading the same topics, one on each transport (a cursor from the own HTTP/2 server resumes on
// grpc-js and back), and one instance is restarted in the middle.

const KILLS = 20;
// tx/s published (three of every four match the clients' filter). The issue's figure; V2_RECONNECT_RATE overrides it.
// The reference and most segments are V2LightClient (node:http2, only the compared fields scanned): grpc-js with
// google-protobuf decoding in this process keeps up with only ~1,600–2,000 updates/s in all on the loaded 2-core
// development machine, less than the 3,000/s each client gets here. Every third segment is the published-library
// path (V2Client, grpc-js), so a resume through it is covered too: it may fall behind while it lives, and then the
// next segment replays more.
const RATE = Number(process.env.V2_RECONNECT_RATE ?? 4000);
const TICK_MS = 10;
/** Segments k with k % GRPC_JS_EVERY === 1 use grpc-js (on Kafka they land on both instances in turn). */
const GRPC_JS_EVERY = 3;

type Transport = 'h2' | 'grpc-js';
/** Per variant, the transport of each fanout instance (the reference subscribes on the last). */
const VARIANTS: ReadonlyArray<{ kind: 'embedded' | 'kafka'; transports: readonly Transport[] }> = [
  { kind: 'embedded', transports: ['h2'] },
  { kind: 'embedded', transports: ['grpc-js'] },
  { kind: 'kafka', transports: ['h2', 'grpc-js'] },
];
const NAMES: Record<Transport, string> = { h2: 'own HTTP/2 server', 'grpc-js': 'grpc-js server' };
const alternating = (ts: readonly Transport[]): string => (ts.length > 1 ? ' on alternating instances and transports, one restarted' : '');

/** One client's life between two kills, whichever client library it is. */
interface Segment {
  readonly lib: 'node:http2' | 'grpc-js';
  /** Transactions received, as compared: `slot signature cursor` (hex), in order. */
  rows(): string[];
  /** rows().length, without building them. */
  count(): number;
  lastCursor(): Uint8Array | undefined;
  /** Every update's seq is 1, 2, 3, … */
  seqsContiguous(): boolean;
  gaps(): number;
  acked(): boolean;
  /** How the stream ended, if it did (not by our kill). */
  ended(): { code: number; details: string } | undefined;
  error(): Error | undefined;
  kill(): void;
}

const row = (slot: number, signature: string, cursor: string): string => `${slot} ${signature} ${cursor}`;

function lightSegment(address: string, key58: string, cursor?: Uint8Array): Segment {
  const c = new V2LightClient(address);
  c.add('a', [key58]);
  c.start(cursor);
  return {
    lib: 'node:http2',
    rows: () => c.txs.map((t) => row(t.slot, t.signature, t.cursor)),
    count: () => c.txs.length,
    lastCursor: () => (c.lastCursorHex === undefined ? undefined : Buffer.from(c.lastCursorHex, 'hex')),
    seqsContiguous: () => c.seqs.every((s, i) => s === i + 1),
    gaps: () => c.gaps,
    acked: () => c.acks > 0,
    ended: () => c.status,
    error: () => c.error,
    kill: () => c.kill(),
  };
}

function grpcJsSegment(address: string, key58: string, cursor?: Uint8Array): Segment {
  const c = new V2Client(address);
  c.add('a', [key58]);
  c.start(cursor === undefined ? {} : { cursor });
  const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
  return {
    lib: 'grpc-js',
    rows: () => c.txs().map((u) => row(u.getTransaction()!.getSlot(), hex(u.getTransaction()!.getSignature_asU8()), hex(u.getCursor_asU8()))),
    count: () => c.txs().length,
    lastCursor: () => c.lastCursor(),
    seqsContiguous: () => seqsContiguous(c.updates),
    gaps: () => c.updates.filter((u) => u.hasGap()).length,
    acked: () => c.updates.some((u) => u.hasFilterAck()),
    ended: () => (c.status === undefined ? undefined : { code: c.status.code, details: c.status.details }),
    error: () => undefined,
    kill: () => c.cancel(),
  };
}

for (const { kind, transports } of VARIANTS) {
  describe(`stream v2 reconnect under load, ${kind} bus, ${transports.map((t) => NAMES[t]).join(' and ')}`, function () {
    this.timeout(300_000);
    const buses: Bus[] = [];
    const fanouts: FanoutHandle[] = [];
    const segments: Segment[] = [];

    after(async () => {
      for (const c of segments) c.kill();
      for (const f of fanouts) await f.close();
      for (const b of buses) await b.close();
    });

    it(`${KILLS} kills at random points, resumed from the last cursor${alternating(transports)}: exactly the reference's transactions and cursors`, async () => {
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

      const ref = lightSegment(refOn.address, key58);
      segments.push(ref);
      let seg = lightSegment(instances[0]!.address, key58);
      segments.push(seg);
      await waitFor(() => ref.acked() && seg.acked(), 10_000, 'acks');
      await waitFor(() => instances.reduce((n, f) => n + f.v2Stats()!.streams, 0) === 2, 10_000, 'both open');
      // Both start live at the next record; a marker the two must see first fences the start.
      const marker = makeTx({ keys: [key] });
      await pubBus.produce(topics.transactions, [txRecord(marker)]);
      await waitFor(() => ref.count() === 1 && seg.count() === 1, 20_000, 'marker on both');

      // The publisher: RATE tx/s in ticks, three matching of every four (the fourth moves cursors only).
      let published = 1;
      let produced = 0;
      let stop = false;
      const other = testKey(4, 2323);
      const t0 = Date.now();
      const publisher = (async () => {
        const perTick = Math.max(1, Math.round((RATE * TICK_MS) / 1000));
        let n = 0;
        // Produce calls overlap (a Kafka produce with acks from all replicas takes longer than a tick).
        const inFlight = new Set<Promise<void>>();
        while (!stop) {
          const batch = Array.from({ length: perTick }, () => makeTx({ keys: [(n++ & 3) === 3 ? other : key], slot: BigInt(1000 + Math.floor(n / 400)) }));
          published += batch.filter((t) => t.keys.subarray(0, 32).equals(key)).length;
          const p = pubBus
            .produce(topics.transactions, batch.map((t) => txRecord(t)))
            .then(() => void (produced += batch.length))
            .finally(() => inFlight.delete(p));
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
      let grpcJsResumes = 0;
      /** Segments that ended on their own before their kill (a lag-policy DATA_LOSS would be one; also a resume). */
      const endedEarly: string[] = [];
      let cursor: Uint8Array | undefined;
      const closeSegment = (s: Segment): void => {
        // Killed before its first update with a cursor: the client still holds the one before.
        cursor = s.lastCursor() ?? cursor;
        assert.ok(cursor !== undefined, 'a cursor to resume from');
        const end = s.ended();
        if (end !== undefined) endedEarly.push(`${s.lib}: ${end.code} ${end.details}`);
        s.kill();
        assert.equal(s.error(), undefined, 'every update scans');
        assert.ok(s.seqsContiguous(), `${s.lib} segment: seq 1, 2, 3, … without holes`);
        assert.equal(s.gaps(), 0, 'no gap notice');
        got.push(...s.rows());
      };
      for (let k = 0; k < KILLS; k++) {
        await new Promise((r) => setTimeout(r, 50 + Math.floor(rand() * 350)));
        closeSegment(seg);
        if (instances.length > 1 && k === KILLS / 2) {
          // Restart instance 0 while the client resumes on the other one.
          const old = instances[0]!;
          await old.close();
          instances[0] = await start(0);
        }
        const on = instances[(k + 1) % instances.length]!;
        const grpcJs = (k + 1) % GRPC_JS_EVERY === 1;
        seg = (grpcJs ? grpcJsSegment : lightSegment)(on.address, key58, cursor);
        segments.push(seg);
        resumes++;
        if (grpcJs) grpcJsResumes++;
      }
      stop = true;
      await publisher;
      const publishMs = Date.now() - t0;
      await waitFor(() => ref.count() === published || ref.ended() !== undefined, 60_000, `reference has all ${published}`);
      const refBehindMs = Date.now() - t0 - publishMs;
      assert.equal(ref.ended(), undefined, `the reference stream stays open (it ended: ${JSON.stringify(ref.ended())})`);
      assert.equal(ref.error(), undefined, 'every reference update scans');
      assert.ok(ref.seqsContiguous(), 'reference: seq without holes');
      assert.equal(ref.gaps(), 0, 'reference: no gap notice');
      const expected = ref.rows();
      assert.equal(expected.length, published);
      assert.equal(new Set(expected).size, expected.length, 'the reference has each transaction once');
      await waitFor(() => got.length + seg.count() >= expected.length || seg.ended() !== undefined, 60_000, 'the last segment catches up');
      closeSegment(seg);
      assert.equal(resumes, KILLS);
      assert.ok(grpcJsResumes > 0);
      const firstDiff = got.findIndex((r, i) => r !== expected[i]);
      assert.equal(got.length, expected.length, `no gap, no duplicate (${got.length} vs ${expected.length}; first difference at ${firstDiff})`);
      assert.equal(firstDiff, -1, `same transactions and cursors in the same order (first difference at ${firstDiff})`);
      console.log(
        `      ${published} matching of ${produced + 1} published in ${(publishMs / 1000).toFixed(1)} s (${Math.round(produced / (publishMs / 1000))} tx/s, target ${RATE}); ` +
          `the reference complete ${refBehindMs} ms after the last produce; ${KILLS} resumes (${grpcJsResumes} on grpc-js)${endedEarly.length > 0 ? `; ended before their kill: ${endedEarly.join(', ')}` : ''}`,
      );
    });
  });
}
