import assert from 'node:assert/strict';
import bs58 from 'bs58';
import { createLogger } from '../../infra/base/log';
import { randomKeypair } from '../../infra/base/keypair';
import type { Running } from '../../infra/launcher';
import { decodeTransaction } from '../../proto/txn/decode';
import { StreamClient } from '../support/stream-client';
import { kafkaBrokers } from '../support/kafka';
import { v1Vectors } from '../support/v1-vectors';
import { sendSlotBatch } from './support';
import { launchOneMachine } from '../support/one-machine';

// End to end on a real Kafka broker: an entry batch the published crates serialized (legacy, v0, v1, legacy, v0:
// the third is v1) is shredded, signed by the configured leader and sent as UDP to ingest; a gRPC subscriber
// receives every transaction of the batch through Kafka and the fanout, the v1 one mapped onto the v1 proto
// (versioned = true, recent_blockhash = the lifetime specifier, signatures in order, no lookups), and a filter on
// a key only the v1 transaction has matches it alone.

const b58 = (b: Uint8Array): string => bs58.encode(b);

describe('end to end on Kafka: a mixed entry batch with a v1 transaction → ingest → Kafka → fanout → subscriber', function () {
  this.timeout(240_000);
  let running: Running | undefined;
  const clients: StreamClient[] = [];

  after(async () => {
    for (const c of clients) await c.close();
    await running?.stop();
  });

  it('delivers every transaction of the batch, v1 included, and filters match v1 keys', async () => {
    const vec = v1Vectors().entry_batches.find((b) => b.name === 'mixed_third_is_v1')!;
    const want = vec.batch.expected[0]!.txs;
    assert.deepEqual(want.map((t) => t.version), ['legacy', 0, 1, 'legacy', 0]);
    const v1 = decodeTransaction(Buffer.from(want[2]!.hex, 'hex'), 0n);
    assert.ok(v1.ok);
    const payer = b58(v1.tx.accountKeys[0]!); // signs only the v1 transaction

    const leader = randomKeypair();
    const shredVersion = 4242;
    running = await launchOneMachine({
      bus: await kafkaBrokers(),
      log: createLogger({ level: 'warn' }),
      localchain: false,
      config: { ingest: { shredVersion, leader: { mode: 'fixed', key: b58(leader.publicKey) } } },
    });
    const all = StreamClient.open(running.endpoints.stream!, { service: 'ARPCService' });
    const one = StreamClient.open(running.endpoints.stream!, { service: 'ARPCService' });
    clients.push(all, one);
    all.send({ transactions: { all: {} }, pingId: 1 });
    one.send({ transactions: { v1payer: { accountInclude: [payer] } }, pingId: 2 });
    await all.waitFor((r) => r.pingId === 1, 10_000);
    await one.waitFor((r) => r.pingId === 2, 10_000);

    await sendSlotBatch(running.endpoints.ingest!, 9_000_001, shredVersion, Buffer.from(vec.batch.hex, 'hex'), leader.seed);
    await all.waitFor(() => all.transactions.length >= want.length, 60_000);
    await one.waitFor(() => one.transactions.length >= 1, 60_000);

    assert.deepEqual(all.transactions.map((t) => t.signatures), want.map((t) => t.signatures.map((s) => b58(Buffer.from(s, 'hex')))));
    assert.deepEqual(all.transactions.map((t) => t.versioned), [false, true, true, false, true]);
    const got = all.transactions[2]!;
    assert.equal(got.slot, 9_000_001);
    assert.equal(got.recentBlockhash, b58(v1.tx.recentBlockhash));
    assert.deepEqual(got.accountKeys, v1.tx.accountKeys.map(b58));
    assert.deepEqual([got.numRequiredSignatures, got.numReadonlySignedAccounts, got.numReadonlyUnsignedAccounts], [v1.tx.numRequiredSignatures, v1.tx.numReadonlySignedAccounts, v1.tx.numReadonlyUnsignedAccounts]);
    assert.deepEqual(
      got.instructions.map((ix) => [ix.programIdIndex, ix.accounts, ix.data]),
      v1.tx.instructions.map((ix) => [ix.programIdIndex, [...ix.accounts], b58(ix.data)]),
    );
    assert.deepEqual(got.addressTableLookups, []);

    assert.deepEqual(one.transactions.map((t) => t.signature), [got.signature]);
    assert.deepEqual(one.responses.filter((r) => r.transaction !== undefined).map((r) => r.filters), [['v1payer']]);
  });
});
