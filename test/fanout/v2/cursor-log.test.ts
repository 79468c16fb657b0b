import assert from 'node:assert/strict';
import { status as Status } from '@grpc/grpc-js';
import { Kafka, logLevel } from 'kafkajs';
import type { Bus } from '../../../bus/bus';
import { EmbeddedBus } from '../../../bus/embedded';
import { KafkaBus } from '../../../bus/kafka';
import { encodeEntryRecord } from '../../../bus/topics/stream-entries';
import { decodeCursor, encodeCursor, logHash, TopicTag, type CursorStamp } from '../../../fanout/v2/cursor';
import type { FanoutConfig } from '../../../fanout/config';
import { kafkaBrokers } from '../../support/kafka';
import { waitFor } from '../../support/wait';
import { makeTx, quietLog, startTestFanout, testKey, testKey58, uniqueTopics, type TestFanout, type TestTx } from '../support';
import { V2Client } from './client';

// Issue 33: a v2 cursor belongs to the log it was read from, and retention is judged per topic.
//   - A cursor of another log (the embedded bus restarted; a Kafka topic deleted and recreated) is refused with
//     FAILED_PRECONDITION `cursor_other_log` naming this log's oldest point, which is then accepted — never data.
//   - A stream that does not read stream.entries resumes from a cursor whose transactions are retained, however far
//     stream.entries (the fastest topic) has rolled; a stream that reads entries gets OUT_OF_RANGE naming a point no
//     lower than its cursor anywhere, which is accepted when sent back. Slot starts likewise.

const key = testKey(33, 1);
const key58 = testKey58(33, 1);
const matching = (n: number, slot = 1000n): TestTx[] => Array.from({ length: n }, () => makeTx({ keys: [key, testKey(2, 2)], slot }));
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** Tick entries (no transactions) of `slot`, as ingest writes them to stream.entries. */
function ticks(n: number, slot = 1000n): Array<{ key: null; value: Buffer }> {
  return Array.from({ length: n }, (_, i) => ({
    key: null,
    value: encodeEntryRecord({ slot, index: null, batchFirstShred: 0, indexInBatch: i, numHashes: 1n, hash: Buffer.alloc(32, i), observedAtMs: Date.now(), signatures: Buffer.alloc(0), txs: [] }),
  }));
}

/** The oldest point an error names: cursor, and slot when it names one. */
function oldestIn(details: string): { cursor: Buffer; slot: number | undefined } {
  const m = /(?:oldest available|oldest point): cursor ([A-Za-z0-9_-]+)(?:, slot (\d+))?/.exec(details);
  assert.ok(m !== null, `names an oldest point: ${details}`);
  return { cursor: Buffer.from(m[1]!, 'base64url'), slot: m[2] === undefined ? undefined : Number(m[2]) };
}

describe('stream v2: a cursor belongs to its log, retention is judged per topic', function () {
  this.timeout(120_000);
  const clients: V2Client[] = [];
  const fanouts: TestFanout[] = [];
  const buses: Bus[] = [];
  const client = (f: TestFanout): V2Client => {
    const c = new V2Client(f.address);
    clients.push(c);
    return c;
  };
  const fanout = async (bus: Bus, topics: FanoutConfig['topics']): Promise<TestFanout> => {
    const f = await startTestFanout({ topics, heartbeatMs: 200 }, undefined, bus);
    fanouts.push(f);
    return f;
  };
  const embedded = (opts: ConstructorParameters<typeof EmbeddedBus>[0] = {}): EmbeddedBus => {
    const b = new EmbeddedBus({ log: quietLog(), ...opts });
    buses.push(b);
    return b;
  };

  afterEach(async () => {
    for (const c of clients.splice(0)) c.cancel();
    for (const f of fanouts.splice(0)) await f.close().catch(() => undefined);
    for (const b of buses.splice(0)) await b.close().catch(() => undefined);
  });

  /** A live stream on key, started and seen by the hub. */
  async function live(f: TestFanout, opts: Parameters<V2Client['start']>[0] = {}): Promise<V2Client> {
    const c = client(f);
    c.add('a', [key58]);
    c.start(opts);
    await c.waitUpdates((u) => u.some((x) => x.hasFilterAck()), 'ack');
    await waitFor(() => f.fanout.v2Stats()!.streams >= 1, 5000, 'the stream open');
    return c;
  }

  /** Starts a stream from `start` and waits for its end or its replay's completion. */
  async function resume(f: TestFanout, start: Parameters<V2Client['start']>[0]): Promise<V2Client> {
    const c = client(f);
    c.add('a', [key58]);
    c.start(start);
    await c.waitUpdates((u) => c.status !== undefined || u.some((x) => x.hasReplayComplete()), 'a status or the replay complete');
    return c;
  }

  function assertOtherLog(c: V2Client, what: RegExp): void {
    assert.equal(c.txs().length, 0, `no data from a cursor of another log (got ${c.txs().length} transactions)`);
    assert.ok(c.status !== undefined, 'the stream ended');
    assert.equal(c.status.code, Status.FAILED_PRECONDITION, c.status.details);
    assert.equal(c.status.metadata.get('x-error-reason')[0], 'cursor_other_log');
    assert.match(c.status.details, what);
  }

  it('cursor bytes: version 2 names each topic\'s log and markers; version 1 still decodes (logs: null)', () => {
    const pos = new Map([
      [TopicTag.transactions, [5, 0, 1 << 40]],
      [TopicTag.entries, [7]],
    ]);
    const marks: Record<number, number[]> = { [TopicTag.transactions]: [1_700_000_000_123, 0, 1_700_000_000_000], [TopicTag.entries]: [0] };
    const stamp: CursorStamp = { log: (t) => logHash(`kafka:c/${t}`), mark: (t, p) => marks[t]![p]! };
    const d = decodeCursor(encodeCursor(pos, stamp));
    assert.ok(d.ok);
    assert.deepEqual([...d.position], [...pos]);
    assert.deepEqual(
      [...d.logs!].map(([t, l]) => [t, l.log, l.marks]),
      [
        [TopicTag.transactions, logHash('kafka:c/1'), marks[TopicTag.transactions]],
        [TopicTag.entries, logHash('kafka:c/4'), [0]],
      ],
    );
    const v1 = decodeCursor(encodeCursor(pos, null));
    assert.ok(v1.ok);
    assert.equal(v1.logs, null);
    assert.deepEqual([...v1.position], [...pos]);
    // Truncated anywhere in the log part: refused with a reason, never misread.
    const full = encodeCursor(pos, stamp);
    for (let n = 1; n < full.length; n++) {
      const t = decodeCursor(full.subarray(0, n));
      if (t.ok) assert.ok(t.position.size < 2 || n === full.length, `prefix ${n} decoded as whole`);
    }
  });

  it('embedded bus restarted: a cursor of the previous run is refused (FAILED_PRECONDITION), never served; the named oldest point is accepted', async () => {
    const topics = uniqueTopics('cursor-log');
    const f1 = await fanout(embedded(), topics);
    const a = await live(f1);
    await f1.publishTx(...matching(5));
    await a.waitUpdates(() => a.txs().length === 5, 'five');
    const old = a.txs()[2]!.getCursor_asU8(); // after the third
    a.cancel();
    await f1.close();

    // The service again: a new bus (a new log under the same topic names), longer than the cursor's offsets.
    const f2 = await fanout(embedded(), topics);
    const ref = await live(f2);
    const run2 = matching(10);
    await f2.publishTx(...run2);
    await ref.waitUpdates(() => ref.txs().length === 10, 'the new run has 10');

    const b = await resume(f2, { cursor: old });
    assertOtherLog(b, /offsets in \S+ are of log [0-9a-f]{8}, and \S+ is now log [0-9a-f]{8} \(embedded:[0-9a-f]+\): the bus was restarted/);
    const named = oldestIn(b.status!.details);
    const c = await resume(f2, { cursor: named.cursor });
    assert.equal(c.status, undefined, c.status?.details);
    assert.deepEqual(c.sigs(), run2.map((t) => hex(t.signature)), 'the named point replays this log from its start');

    // A cursor of this run resumes as before.
    const mid = ref.txs()[4]!.getCursor_asU8();
    const d = await resume(f2, { cursor: mid });
    assert.equal(d.status, undefined);
    assert.deepEqual(d.sigs(), run2.slice(5).map((t) => hex(t.signature)));

    // A version 1 cursor (made before cursors named logs), same offsets: nothing proves its log, refused alike.
    const dec = decodeCursor(mid);
    assert.ok(dec.ok);
    const v1 = await resume(f2, { cursor: encodeCursor(dec.position, null) });
    assertOtherLog(v1, /before cursors named their log \(version 1\)/);
  });

  /**
   * stream.entries rolls over (embedded: its own small bound; Kafka: its log start moved, as retention deletes
   * segments) while every transaction is retained.
   */
  async function entriesRollover(kind: 'embedded' | 'kafka'): Promise<void> {
    const topics = uniqueTopics('cursor-retention');
    let bus: Bus;
    if (kind === 'embedded') bus = embedded({ topicLimits: { [topics.entries]: { maxMessagesPerPartition: 20 } } });
    else {
      bus = new KafkaBus({ brokers: await kafkaBrokers(), clientId: 'cursor-retention', log: quietLog() });
      buses.push(bus);
    }
    const f = await fanout(bus, topics);
    const a = await live(f, { entries: true });
    const txs = matching(5);
    await f.publishTx(...txs);
    await a.waitUpdates(() => a.txs().length === 5, 'five');
    const c2 = a.txs()[1]!.getCursor_asU8(); // after the second transaction
    const c2tx = (decodeCursor(c2) as { ok: true; position: Map<TopicTag, number[]> }).position.get(TopicTag.transactions)![0]!;
    // Ticks roll stream.entries past the cursor's entries offset (0): 60 records, the last 20 retained.
    for (let i = 0; i < 6; i++) await bus.produce(topics.entries, ticks(10));
    if (kind === 'kafka') {
      const admin = new Kafka({ brokers: await kafkaBrokers(), logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      await admin.fetchTopicMetadata({ topics: [topics.entries] });
      await admin.deleteTopicRecords({ topic: topics.entries, partitions: [{ partition: 0, offset: '40' }] });
      await admin.disconnect();
    }
    assert.deepEqual((await bus.startOffsets(topics.entries)).get(0), '40');

    // The server checks against first offsets it refreshes every second: wait until it refuses the entries stream.
    let refused: V2Client | undefined;
    await waitFor(
      async () => {
        const e = await resume(f, { cursor: c2, entries: true });
        if (e.status?.code === Status.OUT_OF_RANGE) refused = e;
        else e.cancel();
        return refused !== undefined;
      },
      10_000,
      'OUT_OF_RANGE for the entries stream once the server has seen entries roll',
      100,
    );
    // The stream without entries: its transactions are all retained, so it resumes, with no gap.
    const b = await resume(f, { cursor: c2 });
    assert.equal(b.status, undefined, b.status?.details);
    await b.waitUpdates(() => b.txs().length === 3, 'the three after the cursor');
    assert.deepEqual(b.sigs(), txs.slice(2).map((t) => hex(t.signature)));
    assert.ok(!b.updates.some((u) => u.hasGap()), 'no gap: nothing it reads was dropped');

    // The named oldest point: no lower than the refused cursor anywhere, at the entries topic's retained start, and
    // accepted when sent back by the same entries stream.
    const named = oldestIn(refused!.status!.details);
    const nd = decodeCursor(named.cursor);
    assert.ok(nd.ok);
    assert.equal(nd.position.get(TopicTag.transactions)![0], c2tx, 'the transactions offset is the refused cursor\'s');
    assert.equal(nd.position.get(TopicTag.entries)![0], 40, 'entries from the first retained');
    const back = await resume(f, { cursor: named.cursor, entries: true });
    assert.equal(back.status, undefined, back.status?.details);
    assert.deepEqual(back.sigs(), txs.slice(2).map((t) => hex(t.signature)));
    assert.equal(back.updates.filter((u) => u.hasEntry()).length, 20, 'the 20 retained entries');
  }

  it('a stream without entries resumes from a cursor whose transactions are retained after stream.entries rolled over; an entries stream gets OUT_OF_RANGE naming a point it then accepts', () => entriesRollover('embedded'));

  it('slot starts agree: a stream without entries starts from a slot whose transactions are retained; an entries stream is told the oldest slot it can start from, which it then can', async () => {
    const topics = uniqueTopics('slot-retention');
    const bus = embedded({ topicLimits: { [topics.entries]: { maxMessagesPerPartition: 20 } } });
    const f = await fanout(bus, topics);
    const ref = await live(f, { slots: true });
    await f.publishSlot(100n);
    const s100 = matching(3, 100n);
    await f.publishTx(...s100);
    for (let i = 0; i < 6; i++) await bus.produce(topics.entries, ticks(10, 100n));
    const rolled = Date.now();
    // A slot start begins 2 s (the hub's margin for racing produces) before the slot's record: slot 101 comes
    // that much after the last entry, so entries from its start are retained.
    await waitFor(() => Date.now() > rolled + 2100, 5000, 'the clock 2.1 s past the entries');
    await f.publishSlot(101n);
    await bus.produce(topics.entries, ticks(2, 101n));
    const s101 = matching(2, 101n);
    await f.publishTx(...s101);
    await ref.waitUpdates(() => ref.txs().length === 5, 'ref has 5');

    const noEntries = await resume(f, { slot: 100 });
    assert.equal(noEntries.status, undefined, noEntries.status?.details);
    assert.deepEqual(noEntries.sigs(), [...s100, ...s101].map((t) => hex(t.signature)));

    let refused: V2Client | undefined;
    await waitFor(
      async () => {
        const e = await resume(f, { slot: 100, entries: true });
        if (e.status?.code === Status.OUT_OF_RANGE) refused = e;
        else e.cancel();
        return refused !== undefined;
      },
      10_000,
      'OUT_OF_RANGE for the entries stream from slot 100',
      100,
    );
    const named = oldestIn(refused!.status!.details);
    assert.equal(named.slot, 101, refused!.status!.details);
    const back = await resume(f, { slot: named.slot!, entries: true });
    assert.equal(back.status, undefined, back.status?.details);
    assert.deepEqual(back.sigs(), s101.map((t) => hex(t.signature)));
  });

  describe('on a real Kafka broker', function () {
    this.timeout(240_000);

    it('per-topic retention: a stream without entries resumes after stream.entries\' log start moved past its cursor; an entries stream gets OUT_OF_RANGE naming a point it then accepts', () => entriesRollover('kafka'));

    it('a cursor of a topic deleted and recreated is refused (FAILED_PRECONDITION) — by its end offset, then by the marker — never served', async () => {
      const brokers = await kafkaBrokers();
      const topics = uniqueTopics('cursor-log-kafka');
      const names = [topics.transactions, topics.slots, topics.entries];
      const bus1 = new KafkaBus({ brokers, clientId: 'cursor-log-1', log: quietLog() });
      buses.push(bus1);
      const f1 = await fanout(bus1, topics);
      const a = await live(f1);
      await f1.publishTx(...matching(5));
      await a.waitUpdates(() => a.txs().length === 5, 'five');
      const old = a.txs()[2]!.getCursor_asU8();
      const sameLog = a.txs()[1]!.getCursor_asU8();
      // The same log still resumes (from another fanout instance too, below it is gone).
      const same = await resume(f1, { cursor: sameLog });
      assert.equal(same.status, undefined, same.status?.details);
      assert.equal(same.txs().length, 3);
      a.cancel();
      await f1.close();

      const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      try {
        await admin.deleteTopics({ topics: names, timeout: 30_000 });
        await waitFor(async () => !(await admin.listTopics()).some((t) => names.includes(t)), 60_000, 'the topics deleted', 200);
        const bus2 = new KafkaBus({ brokers, clientId: 'cursor-log-2', log: quietLog() });
        buses.push(bus2);
        await waitFor(
          async () => {
            try {
              await bus2.createTopics(names.map((name) => ({ name, partitions: 1, compacted: false })));
              const now = await admin.listTopics();
              return names.every((t) => now.includes(t));
            } catch {
              return false; // still marked for deletion
            }
          },
          60_000,
          'the topics created again',
          500,
        );
        const f2 = await fanout(bus2, topics);
        const ref = await live(f2);
        // Shorter than the cursor: the end offset tells.
        await f2.publishTx(...matching(1));
        await ref.waitUpdates(() => ref.txs().length === 1, 'one');
        const short = await resume(f2, { cursor: old });
        assertOtherLog(short, /ends at offset 1, below the cursor's next offset 3: its offsets started over/);
        // Longer than the cursor (the end offset cannot tell): the marker does.
        const more = matching(9);
        await f2.publishTx(...more);
        await ref.waitUpdates(() => ref.txs().length === 10, 'ten');
        const b = await resume(f2, { cursor: old });
        assertOtherLog(b, /the first record appended after the cursor's marker \(offset 2, .*\) is at offset 0; the topic was recreated/);
        const named = oldestIn(b.status!.details);
        const c = await resume(f2, { cursor: named.cursor });
        assert.equal(c.status, undefined, c.status?.details);
        assert.deepEqual(c.sigs(), ref.sigs(), 'the named point replays the new log from its start');
      } finally {
        await admin.deleteTopics({ topics: names }).catch(() => undefined);
        await admin.disconnect();
      }
    });
  });
});
