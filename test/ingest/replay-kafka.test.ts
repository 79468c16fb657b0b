import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import bs58 from 'bs58';
import type { BusMessage, Consumer } from '../../bus/bus';
import { KafkaBus } from '../../bus/kafka';
import { decodeSlotRecord } from '../../bus/topics/stream-slots';
import { decodeTxRecord } from '../../bus/topics/stream-transactions';
import type { IngestConfig } from '../../ingest/config';
import { startIngest, type RunningIngest } from '../../ingest/worker';
import { Registry } from '../../infra/base/metrics';
import { SubscribeResponseTransaction } from '../../proto/gen/arpc_pb';
import { kafkaBrokers } from '../support/kafka';
import { runCli } from './support/child';
import { drained } from './support/drained';
import { goldenTxs, loadGolden, TURBINE } from './support/golden';
import { quietLog } from '../support/log-capture';
import { waitFor } from '../support/wait';

// End to end on the real parts: ingest listening on a free UDP port, publishing to a real Kafka broker; the
// replay CLI (a child process) sends the real turbine capture; a Kafka reader must see exactly the golden
// transactions — each signature once, decoding to the golden fields — and exactly one slot event.


describe('ingest → Kafka: replaying the real turbine capture', function () {
  this.timeout(180_000);
  let bus: KafkaBus | undefined;
  let consumer: Consumer | undefined;
  let ingest: RunningIngest | undefined;

  after(async () => {
    await ingest?.close();
    await consumer?.close();
    await bus?.close();
  });

  it('publishes exactly the golden transactions and one slot event', async () => {
    const golden = loadGolden(TURBINE.expected);
    const want = new Map(goldenTxs(golden).map((t) => [t.signatures[0]!, t]));
    assert.equal(want.size, 63);

    const { log } = quietLog('warn');
    bus = new KafkaBus({ brokers: await kafkaBrokers(), clientId: 'meridian-test-ingest', log });
    const id = crypto.randomBytes(4).toString('hex');
    const topics = { transactions: `test.ingest.${id}.transactions`, slots: `test.ingest.${id}.slots` };
    await bus.createTopics([
      { name: topics.transactions, partitions: 1, compacted: false },
      { name: topics.slots, partitions: 1, compacted: false },
    ]);
    const got: BusMessage[] = [];
    consumer = await bus.consume({ topics: [topics.transactions, topics.slots], from: 'beginning', onBatch: (m) => void got.push(...m) });
    await consumer.ready;

    const cfg: IngestConfig = {
      enabled: true,
      host: '127.0.0.1',
      port: 0,
      recvBufferBytes: 8 * 1024 * 1024,
      recvBufferExplicit: false,
      shredVersion: TURBINE.shredVersion,
      leader: { mode: 'fixed', key: TURBINE.leader },
      slotWindow: 512,
      windowResetMs: 10_000,
      queuePackets: 65_536,
      publishQueueBatches: 4096,
    };
    ingest = await startIngest(cfg, bus, log, { topics, registry: new Registry() });
    assert.ok(ingest.address.port > 0);

    const replay = await runCli(['replay', TURBINE.capture, '--to', `127.0.0.1:${ingest.address.port}`, '--rate', '5000']);
    assert.equal(replay.code, 0, replay.stderr);
    assert.match(replay.stderr, /sent 307\/307 packets/);

    let isMark = (_m: BusMessage): boolean => false;
    const txMsgs = (): BusMessage[] => got.filter((m) => m.topic === topics.transactions && !isMark(m));
    await waitFor(() => txMsgs().length >= want.size && got.some((m) => m.topic === topics.slots), 60_000, 'the golden transactions on Kafka');
    isMark = await drained(ingest, bus, [topics.transactions, topics.slots], got, 307); // anything extra has arrived now

    const s = ingest.stats();
    assert.equal(s.receiver.received, 307);
    assert.equal(s.pipeline.batches, 5);
    assert.equal(s.publisher.failed + s.publisher.queueDrops, 0);

    const txs = txMsgs();
    assert.equal(txs.length, want.size);
    const seen = new Set<string>();
    for (const m of txs) {
      const sig = bs58.encode(m.key!);
      assert.ok(!seen.has(sig), `${sig} published twice`);
      seen.add(sig);
      const g = want.get(sig);
      assert.ok(g !== undefined, `unexpected transaction ${sig}`);
      const r = decodeTxRecord(m.value!);
      assert.ok(r.ok);
      assert.equal(r.record.slot, 385970984n);
      const tx = SubscribeResponseTransaction.deserializeBinary(r.record.message);
      const keys = tx.getAccountKeysList_asU8().map((k) => bs58.encode(k));
      assert.equal(tx.getSlot(), 385970984);
      assert.deepEqual(tx.getSignaturesList_asU8().map((x) => bs58.encode(x)), g.signatures);
      assert.deepEqual([tx.getNumRequiredSignatures(), tx.getNumReadonlySignedAccounts(), tx.getNumReadonlyUnsignedAccounts()], g.header);
      assert.deepEqual(keys, g.account_keys);
      assert.equal(bs58.encode(tx.getRecentBlockhash_asU8()), g.recent_blockhash);
      assert.deepEqual(tx.getInstructionsList().map((ix) => keys[ix.getProgramIdIndex()]), g.program_ids);
      assert.equal(tx.getAddressTableLookupsList().length, g.alt_lookups.length);
      assert.equal(tx.getVersioned()?.getValue(), g.version === 0);
    }
    const slotMsgs = got.filter((m) => m.topic === topics.slots && !isMark(m));
    assert.equal(slotMsgs.length, 1);
    assert.equal(decodeSlotRecord(slotMsgs[0]!.value!)?.slot, 385970984n);
  });
});
