import assert from 'node:assert/strict';
import { status as Status } from '@grpc/grpc-js';
import type { Bus } from '../../../bus/bus';
import { EmbeddedBus } from '../../../bus/embedded';
import { Kafka, logLevel } from 'kafkajs';
import { KafkaBus } from '../../../bus/kafka';
import { decodeCursor } from '../../../fanout/v2/cursor';
import { FilterAckStatus, GapReason, SlotStatus, type SubscribeUpdate } from '../../../proto/gen/stream_v2_pb';
import { kafkaBrokers } from '../../support/kafka';
import { waitFor } from '../../support/wait';
import { makeTx, quietLog, startTestFanout, testKey, testKey58, type TestFanout, type TestTx } from '../support';
import { seqsContiguous, V2Client } from './client';

// Every v2 rule of proto/stream_v2.proto, on both buses (embedded, and a real Kafka broker) × both transports (the
// fanout's own HTTP/2 server and grpc-js: fanout.transport), with grpc-js clients over the generated messages.

type BusKind = 'embedded' | 'kafka';
type Transport = 'h2' | 'grpc-js';
const TRANSPORT_NAME: Record<Transport, string> = { h2: 'own HTTP/2 server', 'grpc-js': 'grpc-js server' };

async function openBus(kind: BusKind, embeddedMax?: number): Promise<Bus> {
  if (kind === 'embedded') return new EmbeddedBus({ log: quietLog(), ...(embeddedMax === undefined ? {} : { maxMessagesPerPartition: embeddedMax }) });
  return new KafkaBus({ brokers: await kafkaBrokers(), clientId: 'v2-conformance', log: quietLog() });
}

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

const COMBINATIONS = (['embedded', 'kafka'] as const).flatMap((kind) => (['h2', 'grpc-js'] as const).map((transport) => [kind, transport] as const));

for (const [kind, transport] of COMBINATIONS) {
  describe(`stream v2 conformance, ${kind} bus, ${TRANSPORT_NAME[transport]}, grpc-js clients`, function () {
    this.timeout(kind === 'kafka' ? 180_000 : 60_000);
    let bus: Bus;
    let f: TestFanout;
    const clients: V2Client[] = [];
    const client = (): V2Client => {
      const c = new V2Client(f.address);
      clients.push(c);
      return c;
    };
    const key = testKey(7, 23);
    const key58 = testKey58(7, 23);
    /** A fanout on this describe's transport and bus. */
    const fanout = (over: Record<string, unknown>): Promise<TestFanout> => startTestFanout({ transport, ...over }, undefined, bus);
    const matching = (n: number, slot = 1000n): TestTx[] => Array.from({ length: n }, () => makeTx({ keys: [key, testKey(1, 1)], slot }));

    beforeEach(async () => {
      bus = await openBus(kind);
      f = await fanout({ heartbeatMs: 200 });
    });

    afterEach(async () => {
      for (const c of clients.splice(0)) c.cancel();
      await f.close();
      await bus.close();
    });

    it('acknowledges every filter request by id (OK or a reason) and keeps the stream', async () => {
      const c = client();
      c.add('a', [key58]);
      c.add('bad', ['not-a-key!']);
      c.remove('nope');
      c.add('b', [testKey58(99, 99)]);
      c.remove('b');
      c.ping(5);
      await c.waitUpdates((u) => u.filter((x) => x.hasFilterAck()).length === 5 && u.some((x) => x.hasPong()), 'five acks and a pong');
      const acks = c.updates.filter((u) => u.hasFilterAck()).map((u) => u.getFilterAck()!);
      assert.deepEqual(
        acks.map((a) => [a.getId(), a.getStatus(), a.getReasonCode()]),
        [
          ['a', FilterAckStatus.FILTER_ACK_OK, ''],
          ['bad', FilterAckStatus.FILTER_ACK_INVALID, 'invalid_pubkey'],
          ['nope', FilterAckStatus.FILTER_ACK_UNKNOWN_FILTER, 'unknown_filter'],
          ['b', FilterAckStatus.FILTER_ACK_OK, ''],
          ['b', FilterAckStatus.FILTER_ACK_OK, ''],
        ],
      );
      assert.match(acks[1]!.getReason(), /invalid public key/);
      assert.equal(c.updates.find((u) => u.hasPong())!.getPong()!.getId(), 5);
      // Nothing is delivered before Start; after it, the filter that was acknowledged OK matches. A fence stream
      // shows the hub has read `early` before c starts (a live start begins at the hub's next record).
      const fence = client();
      fence.add('a', [key58]);
      fence.start();
      await fence.waitUpdates((u) => u.some((x) => x.hasFilterAck()), 'fence ack');
      await waitFor(() => f.fanout.v2Stats()!.streams === 2, 5000, 'fence open');
      const early = matching(1);
      await f.publishTx(...early);
      await fence.waitUpdates(() => fence.txs().length === 1, 'fence has early');
      c.start();
      await c.waitUpdates((u) => u.some((x) => x.hasHeartbeat() && x.getCursor_asU8().length > 0), 'a heartbeat after start');
      const txs = matching(3);
      await f.publishTx(...txs);
      await c.waitUpdates(() => c.txs().length === 3, 'three transactions');
      assert.deepEqual(c.sigs(), txs.map((t) => hex(t.signature)));
      assert.deepEqual(c.txs()[0]!.getFiltersList(), ['a']);
      assert.equal(c.status, undefined, 'the stream is still open');
      assert.ok(seqsContiguous(c.updates));
    });

    it('transactions carry the decoded message byte for byte, the slot, a cursor and seq without holes; heartbeats carry newest slot and cursor', async () => {
      const c = client();
      c.add('a', [key58]);
      c.start();
      await c.waitUpdates((u) => u.some((x) => x.hasFilterAck()), 'ack');
      await waitFor(() => f.fanout.v2Stats()!.streams === 1, 5000, 'open');
      await new Promise((r) => setImmediate(r));
      const txs = matching(5, 4242n);
      await f.publishTx(...txs);
      await c.waitUpdates(() => c.txs().length === 5, 'five');
      for (const [i, u] of c.txs().entries()) {
        const t = u.getTransaction()!;
        assert.equal(t.getSlot(), 4242);
        assert.equal(hex(t.getSignature_asU8()), hex(txs[i]!.signature));
        assert.equal(hex(t.getDecoded()!.serializeBinary()), hex(txs[i]!.message));
        const d = decodeCursor(u.getCursor_asU8());
        assert.ok(d.ok);
      }
      // A heartbeat after the last transaction (heartbeats every 200 ms: on a loaded machine two may come before the
      // transactions do, and counting any two let the check read one of those).
      const afterTxs = (u: readonly SubscribeUpdate[]): readonly SubscribeUpdate[] => u.slice(u.map((x) => x.hasTransaction()).lastIndexOf(true) + 1);
      await c.waitUpdates((u) => afterTxs(u).some((x) => x.hasHeartbeat()), 'a heartbeat after the transactions');
      const hb = [...c.updates].reverse().find((u) => u.hasHeartbeat())!;
      assert.equal(hb.getHeartbeat()!.getNewestSlot(), 4242);
      assert.equal(hex(hb.getCursor_asU8()), hex(c.txs()[4]!.getCursor_asU8()), 'idle: the heartbeat names the position after the last record');
      assert.ok(seqsContiguous(c.updates));
    });

    it('resumes from a cursor: replay with the same filters, ReplayComplete, then live with no gap and no duplicate', async () => {
      const ref = client();
      ref.add('a', [key58]);
      ref.start();
      const a = client();
      a.add('a', [key58]);
      a.start();
      await Promise.all([ref, a].map((c) => c.waitUpdates((u) => u.some((x) => x.hasFilterAck()), 'ack')));
      await waitFor(() => f.fanout.v2Stats()!.streams === 2, 5000, 'open');
      const first = matching(20);
      const other = makeTx({ keys: [testKey(50, 50)] }); // matches nobody: still moves the cursor
      await f.publishTx(...first.slice(0, 10), other, ...first.slice(10));
      await a.waitUpdates(() => a.txs().length === 20, 'a has 20');
      const cursor = a.txs()[11]!.getCursor_asU8(); // after the 12th
      a.cancel();
      const second = matching(30);
      await f.publishTx(...second);
      const b = client();
      b.add('a', [key58]);
      b.start({ cursor });
      await b.waitUpdates((u) => u.some((x) => x.hasReplayComplete()), 'replay complete');
      const third = matching(15);
      await f.publishTx(...third);
      await ref.waitUpdates(() => ref.txs().length === 65, 'ref has all');
      await b.waitUpdates(() => b.txs().length === 65 - 12, 'b has the rest');
      assert.deepEqual(b.sigs(), ref.sigs().slice(12));
      const rc = b.updates.findIndex((u) => u.hasReplayComplete());
      const replayed = b.updates.slice(0, rc).filter((u) => u.hasTransaction()).length;
      assert.equal(b.updates[rc]!.getReplayComplete()!.getReplayed(), replayed);
      assert.ok(replayed >= 38, `the 38 published before the start were replayed (${replayed})`);
      assert.ok(seqsContiguous(b.updates));
    });

    it('starts from a time and from a slot', async () => {
      const ref = client();
      ref.add('a', [key58]);
      ref.start({ slots: true });
      await ref.waitUpdates((u) => u.some((x) => x.hasFilterAck()), 'ack');
      await waitFor(() => f.fanout.v2Stats()!.streams === 1, 5000, 'open');
      await f.publishSlot(100n);
      await f.publishTx(...matching(5, 100n));
      await new Promise((r) => setTimeout(r, 20)); // append timestamps are ms: let the clock move past them
      const t0 = Date.now();
      await new Promise((r) => setTimeout(r, 20));
      await f.publishSlot(101n);
      const s101 = matching(4, 101n);
      await f.publishTx(...s101);
      await f.publishSlot(102n);
      const s102 = matching(3, 102n);
      await f.publishTx(...s102);
      await ref.waitUpdates(() => ref.txs().length === 12, 'ref has 12');
      const byTime = client();
      byTime.add('a', [key58]);
      byTime.start({ timeMs: t0 });
      await byTime.waitUpdates((u) => u.some((x) => x.hasReplayComplete()), 'time replay done');
      assert.deepEqual(byTime.sigs(), [...s101, ...s102].map((t) => hex(t.signature)));
      const bySlot = client();
      bySlot.add('a', [key58]);
      bySlot.start({ slot: 102, slots: true });
      await bySlot.waitUpdates((u) => u.some((x) => x.hasReplayComplete()), 'slot replay done');
      assert.deepEqual(bySlot.sigs(), s102.map((t) => hex(t.signature)));
      const slots = bySlot.updates.filter((u) => u.hasSlot()).map((u) => [u.getSlot()!.getSlot(), u.getSlot()!.getStatus()]);
      assert.deepEqual(slots, [[102, SlotStatus.SLOT_FIRST_SHRED_RECEIVED]]);
    });

    it('a cursor older than retention → OUT_OF_RANGE at once, naming the oldest point (a valid start)', async () => {
      if (kind === 'embedded') {
        await f.close();
        await bus.close();
        bus = await openBus('embedded', 20);
        f = await fanout({ heartbeatMs: 200 });
      }
      const a = client();
      a.add('a', [key58]);
      a.start();
      await a.waitUpdates((u) => u.some((x) => x.hasFilterAck()), 'ack');
      await waitFor(() => f.fanout.v2Stats()!.streams === 1, 5000, 'open');
      await f.publishTx(...matching(5));
      await a.waitUpdates(() => a.txs().length === 5, 'five');
      const old = a.txs()[0]!.getCursor_asU8();
      for (let i = 0; i < 4; i++) {
        await f.publishTx(...matching(10)); // ≤ the retention per produce: the live reader keeps up
        await a.waitUpdates(() => a.txs().length === 15 + 10 * i, 'the batch');
      }
      if (kind === 'kafka') {
        // Kafka's retention deletes whole log segments, on its own schedule: move the log start as it would.
        const admin = new Kafka({ brokers: await kafkaBrokers(), logLevel: logLevel.NOTHING }).admin();
        await admin.connect();
        await admin.fetchTopicMetadata({ topics: [f.cfg.topics.transactions] });
        await admin.deleteTopicRecords({ topic: f.cfg.topics.transactions, partitions: [{ partition: 0, offset: '25' }] });
        await admin.disconnect();
      }
      // The server checks starts against first offsets it refreshes every second: right after the log start moved,
      // a start may still be taken, and its replay then reports the loss with a retention gap. Never silence.
      await waitFor(
        async () => {
          const probe = client();
          probe.add('a', [key58]);
          probe.start({ cursor: old });
          await probe.waitUpdates((u) => probe.status !== undefined || u.some((x) => x.hasReplayComplete()), 'status or replay');
          if (probe.status !== undefined) return probe.status.code === Status.OUT_OF_RANGE;
          assert.ok(probe.updates.some((u) => u.hasGap() && u.getGap()!.getReason() === GapReason.GAP_REASON_RETENTION), 'a retention gap');
          probe.cancel();
          return false;
        },
        10_000,
        'OUT_OF_RANGE once the server has seen the new log start',
        100,
      );
      const times: number[] = [];
      for (let i = 0; i < 5; i++) {
        const b = client();
        b.ping(1); // the stream is up (connection, headers) before the clock starts
        await b.waitUpdates((u) => u.some((x) => x.hasPong()), 'pong');
        const t0 = performance.now();
        b.start({ cursor: old });
        const st = await b.waitStatus();
        times.push(performance.now() - t0);
        assert.equal(st.code, Status.OUT_OF_RANGE);
        assert.match(st.details, /oldest available: cursor [A-Za-z0-9_-]+/);
        // The named cursor is a valid start.
        const oldest = /oldest available: cursor ([A-Za-z0-9_-]+)/.exec(st.details)![1]!;
        if (i === 0) {
          const c = client();
          c.add('a', [key58]);
          c.start({ cursor: Buffer.from(oldest, 'base64url') });
          await c.waitUpdates((u) => u.some((x) => x.hasReplayComplete()), 'replay from the oldest cursor');
          assert.equal(c.txs().length, 20, 'the 20 records the bus still holds');
        }
      }
      times.sort((x, y) => x - y);
      console.log(`      OUT_OF_RANGE after ${times.map((t) => t.toFixed(1)).join(', ')} ms (Start sent → status received)`);
      assert.ok(times[2]! < 100, `median ${times[2]} ms`);
    });

    it('lag policy skip: a gap notice names the dropped range; seq keeps no holes; delivery carries on live', async () => {
      await f.close();
      f = await fanout({ heartbeatMs: 60_000, queueMaxMessages: 30 });
      const ref = client();
      ref.add('a', [key58]);
      ref.start();
      const slow = client();
      slow.add('a', [key58]);
      slow.start({ skip: true });
      await Promise.all([ref, slow].map((c) => c.waitUpdates((u) => u.some((x) => x.hasFilterAck()), 'ack')));
      await waitFor(() => f.fanout.v2Stats()!.streams === 2, 5000, 'open');
      slow.stream.pause();
      const big = Array.from({ length: 3000 }, () => makeTx({ keys: [key, ...Array.from({ length: 30 }, (_, i) => testKey(i, 77))], slot: 5n }));
      // In steps the reference (bound by the same 30-message queue) keeps up with; the paused one cannot.
      for (let i = 0; i < big.length; i += 25) {
        await f.publishTx(...big.slice(i, i + 25));
        await ref.waitUpdates(() => ref.txs().length === i + 25, 'ref keeps up');
      }
      slow.stream.resume();
      const tail = matching(3);
      await f.publishTx(...tail);
      // The resume reaches the server's queue when the client has read what the socket held: the first tail
      // transaction may still find the queue full and be dropped with the rest (counted in the gap, which is then
      // written before it). The last one always finds room, since that overflow emptied the queue.
      const tailSigs = tail.map((t) => hex(t.signature));
      await slow.waitUpdates((u) => u.some((x) => x.hasGap()) && slow.sigs().at(-1) === tailSigs[2], 'a gap, then the tail');
      assert.equal(slow.status, undefined, 'not closed');
      assert.ok(seqsContiguous(slow.updates));
      const gaps = slow.updates.filter((u) => u.hasGap());
      let dropped = 0;
      for (const g of gaps) {
        assert.equal(g.getGap()!.getReason(), GapReason.GAP_REASON_SLOW_CONSUMER);
        assert.ok(g.getGap()!.getFromCursor_asU8().length > 0);
        dropped += g.getGap()!.getCount();
      }
      const lastGap = slow.updates.lastIndexOf(gaps.at(-1)!);
      const afterGap = slow.updates.slice(lastGap + 1).filter((u) => u.hasTransaction()).map((u) => hex(u.getTransaction()!.getSignature_asU8()));
      const tailGot = afterGap.filter((sig) => tailSigs.includes(sig));
      assert.ok(tailGot.length >= 2 && tailGot.join() === tailSigs.slice(3 - tailGot.length).join(), 'the tail after the gap, in order, dropped only from its front');
      // Every transaction is either delivered or counted in a gap.
      assert.equal(slow.txs().length + dropped, 3000 + 3);
    });

    it('lag policy close: DATA_LOSS naming the cursor to resume from; resuming there loses nothing', async () => {
      await f.close();
      f = await fanout({ heartbeatMs: 60_000, queueMaxMessages: 30 });
      const ref = client();
      ref.add('a', [key58]);
      ref.start();
      const slow = client();
      slow.add('a', [key58]);
      slow.start();
      await Promise.all([ref, slow].map((c) => c.waitUpdates((u) => u.some((x) => x.hasFilterAck()), 'ack')));
      await waitFor(() => f.fanout.v2Stats()!.streams === 2, 5000, 'open');
      slow.stream.pause();
      const big = Array.from({ length: 3000 }, () => makeTx({ keys: [key, ...Array.from({ length: 30 }, (_, i) => testKey(i, 78))], slot: 6n }));
      // In steps the reference (bound by the same 30-message queue) keeps up with; the paused one cannot.
      for (let i = 0; i < big.length; i += 25) {
        await f.publishTx(...big.slice(i, i + 25));
        await ref.waitUpdates(() => ref.txs().length === i + 25, 'ref keeps up');
      }
      slow.stream.resume();
      const st = await slow.waitStatus();
      assert.equal(st.code, Status.DATA_LOSS);
      const resume = st.metadata.get('x-resume-cursor')[0] as string;
      assert.match(st.details, new RegExp(`resume from cursor ${resume}`));
      const got = slow.sigs();
      const again = client();
      again.add('a', [key58]);
      again.start({ cursor: Buffer.from(resume, 'base64url') });
      await again.waitUpdates((u) => u.some((x) => x.hasReplayComplete()), 'replayed');
      // What the slow stream received before it was closed, then the replay, is exactly the reference.
      assert.deepEqual([...got, ...again.sigs()], ref.sigs());
    });
  });
}
