import assert from 'node:assert/strict';
import bs58 from 'bs58';
import { KafkaBus } from '../../bus/kafka';
import { TOPIC } from '../../bus/topics';
import { createLogger } from '../../infra/base/log';
import type { Running } from '../../infra/launcher';
import { metrics } from '../../infra/base/metrics';
import { StreamClient, type PlainTransaction } from '../support/stream-client';
import { kafkaBrokers } from '../support/kafka';
import { waitFor } from '../support/wait';
import { b58, makeTx, txRecord } from '../fanout/support';
import { TURBINE, goldenTxs, loadGolden, type GoldenTx } from '../ingest/support/golden';
import { runCli } from './support';
import { launchOneMachine } from '../support/one-machine';

// End to end on a real Kafka broker: the real turbine capture, replayed as UDP by the CLI into ingest (leader
// check on, cluster shred version), reaches gRPC subscribers through Kafka and the fanout.

/** An unlabelled series of this process's registry (the launched ingest's), 0 before it exists. */
function metric(name: string): number {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics.render());
  return m === null ? 0 : Number(m[1]);
}

function sameAsGolden(t: PlainTransaction, g: GoldenTx): void {
  assert.deepEqual(t.signatures, g.signatures);
  assert.deepEqual(t.accountKeys, g.account_keys);
  assert.equal(t.recentBlockhash, g.recent_blockhash);
  assert.deepEqual([t.numRequiredSignatures, t.numReadonlySignedAccounts, t.numReadonlyUnsignedAccounts], g.header);
  assert.equal(t.instructions.length, g.num_instructions);
  assert.deepEqual(t.instructions.map((ix) => t.accountKeys[ix.programIdIndex]), g.program_ids);
  assert.equal(t.versioned, g.version !== 'legacy');
  assert.equal(t.addressTableLookups.length, g.alt_lookups.length);
}

describe('end to end on Kafka: turbine capture → ingest → Kafka → fanout → subscriber', function () {
  this.timeout(240_000);
  const golden = loadGolden(TURBINE.expected);
  const all = goldenTxs(golden);
  // A vote account from the golden decode, and the Vote program that every golden transaction touches.
  const voteAccount = all[0]!.account_keys[1]!;
  const touching = all.filter((t) => t.account_keys.includes(voteAccount));
  let running: Running | undefined;
  let producer: KafkaBus | undefined;
  const clients: StreamClient[] = [];

  after(async () => {
    for (const c of clients) await c.close();
    await producer?.close();
    await running?.stop();
  });

  it('delivers exactly the golden transactions that touch the filtered account, and the slot', async () => {
    assert.equal(all.length, 63);
    assert.equal(touching.length, 1);
    const brokers = await kafkaBrokers();
    running = await launchOneMachine({
      bus: brokers,
      log: createLogger({ level: 'warn' }),
      localchain: false,
      config: { ingest: { shredVersion: TURBINE.shredVersion, leader: { mode: 'fixed', key: TURBINE.leader } } },
    });
    const stream = running.endpoints.stream!;
    const ingest = running.endpoints.ingest!.replace('udp://', '');

    const one = StreamClient.open(stream, { service: 'StreamService' });
    const everything = StreamClient.open(stream, { service: 'ARPCService' });
    clients.push(one, everything);
    one.send({ transactions: { vote: { accountInclude: [voteAccount] } }, pingId: 1 });
    everything.send({ transactions: { votes: { accountInclude: ['Vote111111111111111111111111111111111111111'] } }, newSeenSlots: true, pingId: 2 });
    // Requests are handled in order: the ping reply means the filter is in place.
    await one.waitFor((r) => r.pingId === 1, 10_000);
    await everything.waitFor((r) => r.pingId === 2, 10_000);

    const packetsBefore = metric('meridian_ingest_packets_total');
    const replay = runCli(['replay', TURBINE.capture, '--to', ingest]);
    assert.equal(await replay.exited, 0, replay.stderr());
    const sent = /replay: sent (\d+)\/(\d+) packets/.exec(replay.stderr());
    assert.ok(sent !== null && sent[1] === sent[2], replay.stderr());

    await everything.waitFor(() => everything.transactions.length >= all.length, 60_000);
    await everything.waitFor((r) => r.newSlot !== undefined, 10_000);
    await one.waitFor((r) => r.transaction !== undefined, 10_000);

    // The fence. Ingest has read every replayed packet (it handles each one synchronously, up to offering its
    // batch for publishing) and its publish queue is empty: whatever it makes of the capture is on Kafka already,
    // or is the one produce in flight, written to the broker ahead of anything a new producer sends. A marker
    // record produced now to the single stream.transactions partition lands after it; the fanout reads the
    // partition in order, and the marker matches both filters.
    await waitFor(() => metric('meridian_ingest_packets_total') >= packetsBefore + Number(sent[1]), 30_000, 'ingest to read every replayed packet');
    await waitFor(() => metric('meridian_ingest_publish_queue_batches') === 0, 30_000, 'ingest to hand every batch to Kafka');
    const marker = makeTx({ keys: [Buffer.from(bs58.decode(voteAccount)), Buffer.from(bs58.decode('Vote111111111111111111111111111111111111111'))] });
    producer = new KafkaBus({ brokers, clientId: 'turbine-stream-fence', log: createLogger({ level: 'warn' }) });
    await producer.produce(TOPIC.streamTransactions, [txRecord(marker)]);
    const isMarker = (t: PlainTransaction | undefined): boolean => t?.signature === b58(marker.signature);
    await one.waitFor((r) => isMarker(r.transaction), 60_000);
    await everything.waitFor((r) => isMarker(r.transaction), 60_000);

    const mine = one.responses.filter((r) => r.transaction !== undefined && !isMarker(r.transaction));
    assert.equal(mine.length, 1);
    sameAsGolden(mine[0]!.transaction!, touching[0]!);
    assert.deepEqual(mine.map((r) => r.filters), [['vote']]);

    const got = everything.transactions.filter((t) => !isMarker(t));
    assert.equal(got.length, all.length);
    const bySig = new Map(got.map((t) => [t.signature, t]));
    assert.equal(bySig.size, all.length);
    for (const g of all) sameAsGolden(bySig.get(g.signatures[0]!)!, g);
    const slots = everything.responses.filter((r) => r.newSlot !== undefined).map((r) => r.newSlot);
    assert.deepEqual(slots, [golden.entry_batches[0]!.slot]);
    assert.equal(got[0]!.slot, golden.entry_batches[0]!.slot);
    assert.ok(bs58.decode(got[0]!.signature).length === 64);
  });
});
