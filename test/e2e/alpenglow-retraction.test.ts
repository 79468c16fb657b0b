import assert from 'node:assert/strict';
import { EmbeddedBus } from '../../bus/embedded';
import { encodeSlotStatusRecord, SlotStatusCode, SlotStatusSource } from '../../bus/topics/stream-slot-status';
import { slotKey } from '../../bus/topics/stream-slots';
import { waitFor } from '../support/wait';
import { emptyRegistry } from '../../bus/rental-registry';
import type { FanoutConfig } from '../../fanout/config';
import { startFanout, type FanoutHandle } from '../../fanout/server';
import { Pipeline } from '../../ingest/pipeline';
import { publishSink } from '../../ingest/publish-sink';
import { Publisher } from '../../ingest/publisher';
import { BlockRefSource, SlotStatus, type BlockRef, type SubscribeUpdate } from '../../proto/gen/stream_v2_pb';
import { quietLog, testConfig, uniqueTopics } from '../fanout/support';
import { V2Client } from '../fanout/v2/client';
import { alpentick, fixtureTxs, footer, header, shredBlock, txBatch, updateParent } from '../ingest/support/alpenglow';
import { StreamClient } from '../support/stream-client';
import { decodeTransaction } from '../../proto/txn/decode';
import bs58 from 'bs58';

// The UpdateParent loop from shreds to a v2 client: an Alpenglow block whose leader handed over (SIMD-0337) goes
// through the ingest pipeline and publisher onto an embedded bus, and a v2 stream delivers its transactions as they
// arrive, then SLOT_DECODED with the block's identity and the UpdateParent retraction. A client that drops one copy
// per discarded signature holds exactly the transactions the chain keeps (those after the UpdateParent, which is
// what getBlock returns for the slot), including one the leader included again after the UpdateParent: it was
// delivered twice and one copy survives. A stream resumed from a cursor before the block ends with the same set.

const SLOT = 459_653_000n;
const T = fixtureTxs();
const sig = (t: Buffer): string => t.subarray(1, 65).toString('hex');

function kept(c: V2Client, slot: bigint): string[] | null {
  const decoded = c.updates.find((u) => u.hasSlot() && BigInt(u.getSlot()!.getSlot()) === slot && u.getSlot()!.getStatus() === SlotStatus.SLOT_DECODED);
  if (decoded === undefined) return null;
  const got = c.updates.filter((u: SubscribeUpdate) => u.hasTransaction() && BigInt(u.getTransaction()!.getSlot()) === slot).map((u) => Buffer.from(u.getTransaction()!.getSignature_asU8()).toString('hex'));
  const up = decoded.getSlot()!.getBlock()!.getUpdateParent();
  for (const d of up?.getDiscardedSignaturesList_asU8() ?? []) {
    const i = got.indexOf(Buffer.from(d).toString('hex'));
    assert.ok(i >= 0, 'a discarded transaction was delivered first');
    got.splice(i, 1);
  }
  return got.sort();
}

/**
 * Every transaction and entry of the slot names its bank as known when sent: the header's parent before the
 * UpdateParent, the UpdateParent's after it (stream v2 BlockRef), and its batch's place against the retraction's FEC set.
 */
function assertBlockRefs(c: V2Client, slot: bigint, upFec: number): void {
  const refs: Array<[string, BlockRef | undefined]> = [];
  for (const u of c.updates) {
    if (u.hasTransaction() && BigInt(u.getTransaction()!.getSlot()) === slot) refs.push(['tx', u.getTransaction()!.getBlock()]);
    if (u.hasEntry() && BigInt(u.getEntry()!.getSlot()) === slot && u.getEntry()!.getTransactionCount() > 0) refs.push(['entry', u.getEntry()!.getBlock()]);
  }
  assert.ok(refs.filter(([k]) => k === 'tx').length === 6 && refs.some(([k]) => k === 'entry'), 'transactions and entries of the slot');
  for (const [kind, b] of refs) {
    assert.ok(b !== undefined, `a ${kind} without its block`);
    assert.equal(BigInt(b.getSlot()), slot);
    const after = b.getBatchFirstShred() >= upFec;
    assert.equal(b.getSource(), after ? BlockRefSource.BLOCK_REF_SOURCE_UPDATE_PARENT : BlockRefSource.BLOCK_REF_SOURCE_HEADER, `${kind} at shred ${b.getBatchFirstShred()}`);
    assert.equal(BigInt(b.getParentSlot()), after ? slot - 3n : slot - 1n);
    assert.equal(Buffer.from(b.getParentBlockId_asU8()).toString('hex'), Buffer.alloc(32, after ? 0xb2 : 0xa1).toString('hex'));
  }
}

describe('Alpenglow UpdateParent: ingest → bus → stream v2, and a client that applies the retraction', function () {
  this.timeout(60_000);
  let bus: EmbeddedBus;
  let cfg: FanoutConfig;
  let fanout: FanoutHandle;
  const clients: V2Client[] = [];

  before(async () => {
    bus = new EmbeddedBus({ log: quietLog() });
    const topics = { ...uniqueTopics('alpenglow'), slotStatus: '' };
    topics.slotStatus = `${topics.slots}-status`;
    cfg = testConfig({ topics, heartbeatMs: 200 });
    await bus.createTopics([topics.transactions, topics.slots, topics.slotStatus, topics.entries].map((name) => ({ name, partitions: 1, compacted: false })));
    fanout = await startFanout(cfg, bus, emptyRegistry(), quietLog());
  });

  const v1Clients: StreamClient[] = [];
  after(async () => {
    for (const c of v1Clients) await c.close();
    for (const c of clients) c.cancel();
    await fanout.close();
    await bus.close();
  });

  it('holds exactly the chain\u2019s transactions for the slot, live and resumed from a cursor; a re-included transaction survives once', async () => {
    const live = new V2Client(fanout.address);
    clients.push(live);
    live.add('all', []);
    live.start({ slots: true, entries: true });
    await waitFor(() => fanout.v2Stats()!.streams === 1, 5000, 'open');
    // A heartbeat with a cursor comes only once the stream has started (session.ts heartbeat()): it is live then.
    await live.waitUpdates((u) => u.some((x) => x.hasHeartbeat() && x.getCursor_asU8().length > 0), 'started');
    // A fence before the block: its cursor is a resume point before any of the block's records.
    await bus.produce(cfg.topics.slotStatus, [{ key: slotKey(SLOT - 10n), value: encodeSlotStatusRecord({ slot: SLOT - 10n, status: SlotStatusCode.firstShredReceived, source: SlotStatusSource.shreds, observedAtMs: Date.now(), reason: '' }) }]);
    await live.waitUpdates((u) => u.some((x) => x.hasSlot()), 'fence');
    const fence = live.updates.find((u) => u.hasSlot())!.getCursor_asU8();
    const publisher = new Publisher(bus, { maxItems: 10_000 });
    const sink = publishSink(publisher, { topics: { transactions: cfg.topics.transactions, slots: cfg.topics.slots, slotStatus: cfg.topics.slotStatus, entries: cfg.topics.entries } });
    const pipeline = new Pipeline({ sink, blockFormat: 'alpenglow' });
    // Before the UpdateParent: T0 T1 T2 (discarded by the chain). After it: T2 again, T3 T4 (kept).
    const before = [T[0]!, T[1]!, T[2]!];
    const after = [T[2]!, T[3]!, T[4]!];
    const b = shredBlock(SLOT, 1, [header(SLOT - 1n), txBatch(before, 1), updateParent(SLOT - 3n), txBatch(after, 2), footer(), alpentick()]);
    let t = 1000;
    for (const s of b.shreds) pipeline.push(s, t++);
    await publisher.idle();
    // The UpdateParent's second bank is in the same block (the same shreds): no FEC set has two roots, so it is no
    // equivocation — Agave too reports a duplicate only for two Merkle roots of one (slot, fec_set_index)
    // (ledger/src/blockstore.rs check_merkle_root_consistency, anza-xyz/agave 006f736e: merkle_root_metas by erasure set).
    assert.equal(pipeline.stats().equivocations, 0);
    const want = after.map(sig).sort();
    await live.waitUpdates(() => kept(live, SLOT) !== null, 'SLOT_DECODED');
    assert.equal(live.txs().filter((u) => BigInt(u.getTransaction()!.getSlot()) === SLOT).length, 6, 'ingest delivered all six as they arrived');
    assert.deepEqual(kept(live, SLOT), want);
    await live.waitUpdates((us) => us.filter((u) => u.hasEntry() && BigInt(u.getEntry()!.getSlot()) === SLOT && u.getEntry()!.getTransactionCount() > 0).length === 2, 'the two transaction entries');
    assertBlockRefs(live, SLOT, b.starts[2]!);
    // Resumed from the fence's cursor (before any of the block's records).
    const resumed = new V2Client(fanout.address);
    clients.push(resumed);
    resumed.add('all', []);
    resumed.start({ cursor: fence, slots: true, entries: true });
    // A replay reads stream.slot-status and stream.transactions side by side: the DECODED status may come before
    // some of the slot's transactions, so the retraction is applied once all six are in (a client keeps the
    // discarded signatures until the slot's transactions are complete or the slot is finalized).
    await resumed.waitUpdates(() => resumed.txs().filter((u) => BigInt(u.getTransaction()!.getSlot()) === SLOT).length === 6 && kept(resumed, SLOT) !== null, 'resumed SLOT_DECODED and the six transactions');
    assert.deepEqual(kept(resumed, SLOT), want);
    await resumed.waitUpdates((us) => us.filter((u) => u.hasEntry() && BigInt(u.getEntry()!.getSlot()) === SLOT && u.getEntry()!.getTransactionCount() > 0).length === 2, 'resumed: the two transaction entries');
    assertBlockRefs(resumed, SLOT, b.starts[2]!);
  });

  it('v1 de-duplicates by signature and block: a transaction included again after the UpdateParent is delivered again, a redundant feed\u2019s copies are not', async () => {
    const slot = SLOT + 8n; // first slot of a leader window, a block of its own (the fanout's dedupe window is shared)
    const keyOf = (t: Buffer, i: number): string => {
      const d = decodeTransaction(t, slot);
      assert.ok(d.ok);
      return bs58.encode(d.tx.accountKeys[i]!);
    };
    const v1 = StreamClient.open(fanout.address);
    v1Clients.push(v1);
    // T5 only as the fence after everything: its last static key (a program) is not one of T2's.
    v1.send({ transactions: { re: { accountRequired: [keyOf(T[2]!, 0)] }, fence: { accountRequired: [keyOf(T[5]!, 0)] } }, pingId: 9 });
    await v1.waitFor((r) => r.pingId === 9, 10_000);
    const publisher = new Publisher(bus, { maxItems: 10_000 });
    const topics = { transactions: cfg.topics.transactions, slots: cfg.topics.slots, slotStatus: cfg.topics.slotStatus, entries: cfg.topics.entries };
    // Two ingest workers on redundant feeds of the same block: the block's every record is published twice.
    const workers = [new Pipeline({ sink: publishSink(publisher, { topics }), blockFormat: 'alpenglow' }), new Pipeline({ sink: publishSink(publisher, { topics }), blockFormat: 'alpenglow' })];
    const b = shredBlock(slot, 1, [header(slot - 1n), txBatch([T[0]!, T[2]!], 3), updateParent(slot - 2n), txBatch([T[2]!, T[3]!], 4), footer(), alpentick()]);
    let t = 5000;
    for (const w of workers) for (const s of b.shreds) w.push(s, t++);
    const fence = shredBlock(slot + 1n, 1, [header(slot), txBatch([T[5]!], 5), footer(), alpentick()]);
    for (const s of fence.shreds) workers[0]!.push(s, t++);
    await publisher.idle();
    const fenceSig = bs58.encode(T[5]!.subarray(1, 65));
    await v1.waitFor((r) => r.transaction?.signature === fenceSig, 20_000);
    const t2 = bs58.encode(T[2]!.subarray(1, 65));
    const got = v1.transactions.filter((x) => x.signature === t2);
    assert.equal(got.length, 2, 'T2 once for the abandoned bank, once for the bank after the UpdateParent, each once despite two feeds');
    assert.deepEqual(got.map((x) => x.slot), [Number(slot), Number(slot)]);
    assert.equal(v1.transactions.filter((x) => x.signature === fenceSig).length, 1);
  });
});
