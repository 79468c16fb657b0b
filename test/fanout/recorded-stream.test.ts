import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import bs58 from 'bs58';
import type { Bus } from '../../bus/bus';
import { EmbeddedBus } from '../../bus/embedded';
import { KafkaBus } from '../../bus/kafka';
import { emptyRegistry } from '../../bus/rental-registry';
import type { RecordedRecord, RecordingMeta } from '../../bus/recording';
import { fileChunks, readRecording } from '../../bus/recording-io';
import { loadRecords, prepareTopics } from '../../bus/topic-load';
import { TOPIC } from '../../bus/topics';
import { decodeSlotRecord } from '../../bus/topics/stream-slots';
import { decodeTxRecord } from '../../bus/topics/stream-transactions';
import { startFanout, type FanoutHandle } from '../../fanout/server';
import { SubscribeResponse, SubscribeResponseTransaction } from '../../proto/gen/arpc_pb';
import { serializeSubscribeRequest, subscribePath, type SubscribeRequestInit } from '../../proto/service';
import { kafkaBrokers } from '../support/kafka';
import { fixture } from '../support/paths';
import { loadRecording } from '../support/recorded-broker';
import { waitFor } from '../support/wait';
import { quietLog, testConfig, uniqueTopics } from './support';

// The demo's recorded topics (test/fixtures/topics/demo-stream.mrec, how it was made in that folder's README)
// replayed into a real broker, a fanout on it, and v1 gRPC subscribers that keep every response's raw bytes.
//
// The oracle is independent of the fanout: the expected responses are built from the recording alone with the
// generated google-protobuf classes of the published v1 proto — for each transaction record in recorded order
// that a subscriber's filter selects, SubscribeResponse{filters, transaction = the record's message}, and for
// each slot record SubscribeResponse{new_slot}. A received response must equal its expected one byte for byte
// once its created_at (field 1, the fanout's clock) is taken out; heartbeats (ping_id 0, sent by the clock) are
// counted apart. Transactions and slots are compared each in their recorded order: they are two logs, and no
// order between two topics survives a broker (two partitions are fetched independently).

const RECORDING = fixture('topics', 'demo-stream.mrec');

/** Top-level fields of a protobuf message as [field number, the field's whole bytes (tag included)]. */
function fields(msg: Buffer): Array<[number, Buffer]> {
  const out: Array<[number, Buffer]> = [];
  let p = 0;
  const varint = (): bigint => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (p >= msg.length) throw new Error('varint past the end');
      const b = msg[p++]!;
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
    }
  };
  while (p < msg.length) {
    const start = p;
    const tag = Number(varint());
    const wire = tag & 7;
    if (wire === 0) varint();
    else if (wire === 2) {
      const len = Number(varint()); // read first: `p += varint()` would add to p's value from before the length
      p += len;
    }
    else throw new Error(`wire type ${wire} in a SubscribeResponse`);
    if (p > msg.length) throw new Error('field past the end');
    out.push([tag >>> 3, msg.subarray(start, p)]);
  }
  return out;
}

interface Received {
  /** Responses with a transaction / a new_slot, created_at removed. */
  txs: Buffer[];
  slots: Buffer[];
  pings: number[];
  heartbeats: number;
  /** created_at present on every transaction and slot response. */
  missingCreatedAt: number;
  /** Responses that are not protobuf this parser reads (must stay empty). */
  unparsed: string[];
}

/** A v1 subscriber through grpc-js that keeps each response's bytes as they came off the wire. */
class RawSubscriber {
  readonly got: Received = { txs: [], slots: [], pings: [], heartbeats: 0, missingCreatedAt: 0, unparsed: [] };
  private readonly client: grpc.Client;
  private readonly call: grpc.ClientDuplexStream<SubscribeRequestInit, Buffer>;

  constructor(address: string) {
    const Ctor = grpc.makeGenericClientConstructor(
      {
        Subscribe: {
          path: subscribePath('arpc.ARPCService'),
          requestStream: true,
          responseStream: true,
          requestSerialize: serializeSubscribeRequest,
          requestDeserialize: () => ({}),
          responseSerialize: (b: Buffer) => b,
          responseDeserialize: (b: Buffer) => Buffer.from(b),
        },
      },
      'RawSubscribe',
    );
    this.client = new Ctor(address, grpc.credentials.createInsecure());
    this.call = (this.client as unknown as { Subscribe(): grpc.ClientDuplexStream<SubscribeRequestInit, Buffer> }).Subscribe();
    this.call.on('error', () => undefined); // the stream ends with UNAVAILABLE when the fanout closes
    this.call.on('data', (b: Buffer) => {
      try {
        this.take(b);
      } catch (e) {
        this.got.unparsed.push(String(e));
      }
    });
  }

  send(req: SubscribeRequestInit): void {
    this.call.write(req);
  }

  close(): void {
    this.call.cancel();
    this.client.close();
  }

  private take(b: Buffer): void {
    const fs = fields(b);
    const numbers = fs.map(([n]) => n);
    const rest = Buffer.concat(fs.filter(([n]) => n !== 1).map(([, bytes]) => bytes));
    if (numbers.includes(3)) {
      if (!numbers.includes(1)) this.got.missingCreatedAt++;
      this.got.txs.push(rest);
    } else if (numbers.includes(5)) {
      if (!numbers.includes(1)) this.got.missingCreatedAt++;
      this.got.slots.push(rest);
    } else {
      const id = SubscribeResponse.deserializeBinary(b).getPingId();
      if (id === 0) this.got.heartbeats++;
      else this.got.pings.push(id);
    }
  }
}

async function recording(): Promise<{ meta: RecordingMeta; records: RecordedRecord[] }> {
  let meta: RecordingMeta | undefined;
  const records: RecordedRecord[] = [];
  for await (const r of readRecording(fileChunks(RECORDING), (m) => (meta = m))) records.push(r);
  return { meta: meta!, records };
}

function bytesOf(m: SubscribeResponse): Buffer {
  const u = m.serializeBinary();
  return Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

interface Expected {
  all: Buffer[];
  sender: Buffer[];
  slots: Buffer[];
  senderKey: string;
}

/** The oracle: what each subscriber must receive, from the recording and the generated v1 classes alone. */
function expected(records: RecordedRecord[]): Expected {
  const txs = records.filter((r) => r.topic === TOPIC.streamTransactions).map((r) => {
    const d = decodeTxRecord(r.value!);
    if (!d.ok) throw new Error(`fixture record ${r.offset}: ${d.reason}`);
    return { keys: Array.from({ length: d.record.accountKeys.length / 32 }, (_, i) => bs58.encode(d.record.accountKeys.subarray(i * 32, i * 32 + 32))), message: d.record.message };
  });
  // The account in the most transactions but not all of them, so the filtered subscriber gets a real subset.
  const counts = new Map<string, number>();
  for (const t of txs) for (const k of new Set(t.keys)) counts.set(k, (counts.get(k) ?? 0) + 1);
  const senderKey = [...counts].filter(([, n]) => n < txs.length).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]![0];
  const txResponse = (filter: string, message: Buffer): Buffer => {
    const m = new SubscribeResponse();
    m.setFiltersList([filter]);
    m.setTransaction(SubscribeResponseTransaction.deserializeBinary(message));
    return bytesOf(m);
  };
  const slots = records.filter((r) => r.topic === TOPIC.streamSlots).map((r) => {
    const s = decodeSlotRecord(r.value!);
    if (s === null) throw new Error(`fixture slot record ${r.offset} does not decode`);
    const m = new SubscribeResponse();
    m.setNewSlot(Number(s.slot));
    return bytesOf(m);
  });
  return {
    all: txs.map((t) => txResponse('all', t.message)),
    sender: txs.filter((t) => t.keys.includes(senderKey)).map((t) => txResponse('sender', t.message)),
    slots,
    senderKey,
  };
}

describe('a recording of the demo topics replayed into a fanout gives v1 subscribers the stream it implies, byte for byte', function () {
  this.timeout(180_000);

  it('the fixture is what its README says: both demo topics, distinct transactions, slots in order, messages the v1 classes re-encode to the same bytes', async () => {
    const { meta, records } = await recording();
    assert.deepEqual(meta.topics.map((t) => t.name), [TOPIC.streamTransactions, TOPIC.streamSlots]);
    assert.equal(meta.source.bus, 'embedded');
    const txs = records.filter((r) => r.topic === TOPIC.streamTransactions);
    const slots = records.filter((r) => r.topic === TOPIC.streamSlots);
    assert.ok(txs.length >= 40 && slots.length >= 5, `${txs.length} transactions, ${slots.length} slots`);
    assert.equal(new Set(txs.map((r) => r.key!.toString('hex'))).size, txs.length, 'a duplicate signature would be dropped by the fanout');
    const slotNumbers = slots.map((r) => decodeSlotRecord(r.value!)!.slot);
    assert.deepEqual(slotNumbers, [...slotNumbers].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    // The oracle re-encodes each transaction message through google-protobuf: that must be the identity on them,
    // or the comparison below would measure the oracle, not the fanout.
    for (const r of txs) {
      const msg = decodeTxRecord(r.value!);
      assert.ok(msg.ok);
      assert.deepEqual(Buffer.from(SubscribeResponseTransaction.deserializeBinary(msg.record.message).serializeBinary()), msg.record.message);
    }
  });

  for (const kind of ['kafka', 'embedded'] as const) {
    describe(`on the ${kind} bus`, () => {
      let bus: Bus | undefined;
      let fanout: FanoutHandle | undefined;
      const subs: RawSubscriber[] = [];
      after(async () => {
        for (const s of subs) s.close();
        await fanout?.close();
        await bus?.close();
      });

      it('transactions (match-all and account-filtered) and slots equal the oracle, in recorded order, nothing more', async () => {
        const { meta, records } = await recording();
        const want = expected(records);
        const topics = uniqueTopics('recorded');
        const rename = new Map([[TOPIC.streamTransactions, topics.transactions], [TOPIC.streamSlots, topics.slots]]);
        const brokers = kind === 'kafka' ? await kafkaBrokers() : [];
        bus = kind === 'kafka' ? new KafkaBus({ brokers, clientId: 'recorded-stream-test', log: quietLog() }) : new EmbeddedBus({ log: quietLog() });
        assert.equal(await prepareTopics(bus, meta, rename), null);
        await bus.createTopics([{ name: topics.entries, partitions: 1, compacted: false }]); // not recorded: v2 reads it
        fanout = await startFanout(testConfig({ topics, heartbeatMs: 1000 }), bus, emptyRegistry(), quietLog());

        const all = new RawSubscriber(fanout.address);
        const sender = new RawSubscriber(fanout.address);
        subs.push(all, sender);
        all.send({ transactions: { all: {} }, newSeenSlots: true, pingId: 1 });
        sender.send({ transactions: { sender: { accountInclude: [want.senderKey] } }, pingId: 1 });
        await waitFor(() => all.got.pings.includes(1) && sender.got.pings.includes(1), 30_000, 'both filters in place');

        // Into the broker: on Kafka through the test-support module users' CI calls, on the embedded bus directly.
        if (kind === 'kafka') {
          const loaded = await loadRecording(brokers, RECORDING, { rename: Object.fromEntries(rename) });
          assert.equal(loaded.records, records.length);
        } else {
          const loaded = await loadRecords(readRecording(fileChunks(RECORDING)), bus, { pace: 'fast', rename });
          assert.equal(loaded.records, records.length);
        }

        await waitFor(() => all.got.txs.length >= want.all.length && all.got.slots.length >= want.slots.length && sender.got.txs.length >= want.sender.length, 60_000, 'the whole recording at both subscribers').catch((e: Error) => {
          throw new Error(`${e.message}: all ${all.got.txs.length}/${want.all.length} tx, ${all.got.slots.length}/${want.slots.length} slots; filtered ${sender.got.txs.length}/${want.sender.length}; stats ${JSON.stringify(fanout!.stats())}`);
        });
        // Fence: a ping answered after everything already queued, so anything extra would be in by now.
        all.send({ pingId: 2 });
        sender.send({ pingId: 2 });
        await waitFor(() => all.got.pings.includes(2) && sender.got.pings.includes(2), 30_000, 'the fence pings');

        assert.ok(want.sender.length > 0 && want.sender.length < want.all.length, `${want.sender.length} of ${want.all.length}`);
        assert.equal(all.got.txs.length, want.all.length);
        assert.equal(all.got.slots.length, want.slots.length);
        assert.equal(sender.got.txs.length, want.sender.length);
        assert.equal(sender.got.slots.length, 0);
        assert.equal(all.got.missingCreatedAt + sender.got.missingCreatedAt, 0);
        assert.deepEqual([...all.got.unparsed, ...sender.got.unparsed], []);
        for (let i = 0; i < want.all.length; i++) assert.deepEqual(all.got.txs[i], want.all[i], `transaction response ${i}`);
        for (let i = 0; i < want.slots.length; i++) assert.deepEqual(all.got.slots[i], want.slots[i], `slot response ${i}`);
        for (let i = 0; i < want.sender.length; i++) assert.deepEqual(sender.got.txs[i], want.sender[i], `filtered response ${i}`);
      });
    });
  }
});
