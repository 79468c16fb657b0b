import assert from 'node:assert/strict';
import bs58 from 'bs58';
import { parseConfig } from '../../infra/config';
import { createLogger } from '../../infra/base/log';
import { launch, type Running } from '../../infra/launcher';
import { StreamClient, type PlainTransaction } from '../support/stream-client';
import { kafkaBrokers } from '../support/kafka';
import { TURBINE, goldenTxs, loadGolden, type GoldenTx } from '../ingest/support/golden';
import { runCli } from './support';

// End to end on a real Kafka broker: the real turbine capture, replayed as UDP by the CLI into ingest (leader
// check on, cluster shred version), reaches gRPC subscribers through Kafka and the fanout.

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
  const clients: StreamClient[] = [];

  after(async () => {
    for (const c of clients) await c.close();
    await running?.stop();
  });

  it('delivers exactly the golden transactions that touch the filtered account, and the slot', async () => {
    assert.equal(all.length, 63);
    assert.equal(touching.length, 1);
    const brokers = await kafkaBrokers();
    const cfg = parseConfig({
      bus: { kind: 'kafka', brokers },
      metrics: { enabled: false },
      ingest: { listen: '127.0.0.1:0', shredVersion: TURBINE.shredVersion, leader: { mode: 'fixed', key: TURBINE.leader } },
      fanout: { listen: '127.0.0.1:0' },
    });
    running = await launch(cfg, createLogger({ level: 'warn' }));
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

    const replay = runCli(['replay', TURBINE.capture, '--to', ingest]);
    assert.equal(await replay.exited, 0, replay.stderr());

    await everything.waitFor(() => everything.transactions.length >= all.length, 60_000);
    await everything.waitFor((r) => r.newSlot !== undefined, 10_000);
    await one.waitFor((r) => r.transaction !== undefined, 10_000);
    // Give stragglers (there should be none) a moment to show up before counting exactly.
    await new Promise((r) => setTimeout(r, 1000));

    assert.equal(one.transactions.length, 1);
    sameAsGolden(one.transactions[0]!, touching[0]!);
    assert.deepEqual(one.responses.filter((r) => r.transaction !== undefined).map((r) => r.filters), [['vote']]);

    const got = everything.transactions;
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
