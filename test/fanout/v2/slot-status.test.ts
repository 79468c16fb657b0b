import assert from 'node:assert/strict';
import type { ProduceRecord } from '../../../bus/bus';
import { EmbeddedBus } from '../../../bus/embedded';
import { emptyRegistry } from '../../../bus/rental-registry';
import { encodeSlotStatusRecord, SlotStatusCode, SlotStatusSource } from '../../../bus/topics/stream-slot-status';
import { slotKey } from '../../../bus/topics/stream-slots';
import type { FanoutConfig } from '../../../fanout/config';
import { startFanout, type FanoutHandle } from '../../../fanout/server';
import { SlotStatus } from '../../../proto/gen/stream_v2_pb';
import { waitFor } from '../../support/wait';
import { quietLog, slotRecord, testConfig, uniqueTopics } from '../support';
import { seqsContiguous, V2Client } from './client';

// v2 slot statuses from stream.slot-status, with records written straight to the topic: each status once per slot and
// in the ladder's order whatever the bus carries (repeats, a status after a later one, DEAD after CONFIRMED, anything
// after DEAD), `dead_reason` carried, the first-shred copy on stream.slots not sent twice, and slot and time starts
// replaying statuses like transactions.

const S = SlotStatusCode;

function status(slot: number, st: SlotStatusCode, reason = ''): ProduceRecord {
  return { key: slotKey(BigInt(slot)), value: encodeSlotStatusRecord({ slot: BigInt(slot), status: st, source: st >= 3 && st <= 5 ? SlotStatusSource.chain : SlotStatusSource.shreds, observedAtMs: Date.now(), reason }) };
}

type Got = Array<[number, number, string]>;

function slotsOf(c: V2Client): Got {
  return c.updates.filter((u) => u.hasSlot()).map((u) => [u.getSlot()!.getSlot(), u.getSlot()!.getStatus(), u.getSlot()!.getDeadReason()]);
}

describe('stream v2 slot statuses (stream.slot-status), embedded bus', function () {
  this.timeout(60_000);
  let bus: EmbeddedBus;
  let cfg: FanoutConfig;
  let fanout: FanoutHandle;
  const clients: V2Client[] = [];
  const client = (): V2Client => {
    const c = new V2Client(fanout.address);
    clients.push(c);
    return c;
  };

  before(async () => {
    bus = new EmbeddedBus({ log: quietLog() });
    const topics = { ...uniqueTopics('slot-status'), slotStatus: '' };
    topics.slotStatus = `${topics.slots}-status`;
    cfg = testConfig({ topics, heartbeatMs: 200 });
    await bus.createTopics([topics.transactions, topics.slots, topics.slotStatus, topics.entries].map((name) => ({ name, partitions: 1, compacted: false })));
    fanout = await startFanout(cfg, bus, emptyRegistry(), quietLog());
  });

  after(async () => {
    for (const c of clients) c.cancel();
    await fanout.close();
    await bus.close();
  });

  it('sends each status once per slot, in order; DEAD ends a slot and is not sent after CONFIRMED; the stream.slots copy is not sent twice', async () => {
    const c = client();
    c.start({ slots: true });
    await waitFor(() => fanout.v2Stats()!.streams === 1, 5000, 'open');
    await bus.produce(cfg.topics.slots, [slotRecord(10n), slotRecord(11n)]);
    await bus.produce(cfg.topics.slotStatus, [
      status(10, S.firstShredReceived),
      status(10, S.firstShredReceived), // redundant ingest
      status(10, S.completed),
      status(10, S.processed), // the node's status before ingest decoded the slot…
      status(10, S.decoded), // …so DECODED comes too late for this stream
      status(10, S.confirmed),
      status(10, S.dead, 'equivocation: two Merkle roots for FEC set 0'), // settled by the cluster: not sent
      status(10, S.finalized),
      status(11, S.firstShredReceived),
      status(11, S.dead, 'two last shreds in slot: indexes 63 and 95'),
      status(11, S.completed), // nothing after DEAD
      status(11, S.finalized),
      status(12, S.firstShredReceived),
    ]);
    // A fence: a later record of the same partition, so everything before it has been handled.
    await bus.produce(cfg.topics.slotStatus, [status(13, S.firstShredReceived)]);
    await c.waitUpdates(() => slotsOf(c).some(([s]) => s === 13), 'slot 13');
    assert.deepEqual(slotsOf(c), [
      [10, SlotStatus.SLOT_FIRST_SHRED_RECEIVED, ''],
      [10, SlotStatus.SLOT_COMPLETED, ''],
      [10, SlotStatus.SLOT_PROCESSED, ''],
      [10, SlotStatus.SLOT_CONFIRMED, ''],
      [10, SlotStatus.SLOT_FINALIZED, ''],
      [11, SlotStatus.SLOT_FIRST_SHRED_RECEIVED, ''],
      [11, SlotStatus.SLOT_DEAD, 'two last shreds in slot: indexes 63 and 95'],
      [12, SlotStatus.SLOT_FIRST_SHRED_RECEIVED, ''],
      [13, SlotStatus.SLOT_FIRST_SHRED_RECEIVED, ''],
    ]);
    assert.ok(seqsContiguous(c.updates));
  });

  it('a slot start and a time start replay the statuses from there, through the same rule', async () => {
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, 20));
    await bus.produce(cfg.topics.slots, [slotRecord(20n), slotRecord(21n)]);
    await bus.produce(cfg.topics.slotStatus, [
      status(20, S.firstShredReceived),
      status(19, S.finalized), // an older slot's status, after slot 20 began
      status(21, S.firstShredReceived),
      status(20, S.completed),
      status(21, S.completed),
      status(21, S.decoded),
      status(20, S.decoded),
    ]);
    const bySlot = client();
    bySlot.start({ slot: 21, slots: true });
    await bySlot.waitUpdates((u) => u.some((x) => x.hasReplayComplete()), 'slot replay done');
    assert.deepEqual(slotsOf(bySlot), [
      [21, SlotStatus.SLOT_FIRST_SHRED_RECEIVED, ''],
      [21, SlotStatus.SLOT_COMPLETED, ''],
      [21, SlotStatus.SLOT_DECODED, ''],
    ]);
    const byTime = client();
    byTime.start({ timeMs: t0, slots: true });
    await byTime.waitUpdates((u) => u.some((x) => x.hasReplayComplete()), 'time replay done');
    assert.deepEqual(
      slotsOf(byTime).map(([s, st]) => [s, st]),
      [
        [20, SlotStatus.SLOT_FIRST_SHRED_RECEIVED],
        [19, SlotStatus.SLOT_FINALIZED],
        [21, SlotStatus.SLOT_FIRST_SHRED_RECEIVED],
        [20, SlotStatus.SLOT_COMPLETED],
        [21, SlotStatus.SLOT_COMPLETED],
        [21, SlotStatus.SLOT_DECODED],
        [20, SlotStatus.SLOT_DECODED],
      ],
    );
  });

  it('an Alpenglow block: SLOT_DECODED carries its identity, footer and UpdateParent retraction, live and to a stream resumed from a cursor before it', async () => {
    const block = {
      blockId: Buffer.alloc(32, 0x11),
      parentSlot: 27n,
      parentBlockId: Buffer.alloc(32, 0x22),
      updateParentFecSetIndex: 96,
      footer: { bankHash: Buffer.alloc(32, 0x33), producerTimeNanos: 1_792_540_800_000_000_001n, userAgent: Buffer.from('agave/4.2.2'), certs: 1 | 8 },
      discarded: Buffer.concat([Buffer.alloc(64, 0x44), Buffer.alloc(64, 0x55)]),
    };
    const live = client();
    live.start({ slots: true });
    await waitFor(() => fanout.v2Stats()!.streams === clients.length, 5000, 'open');
    await bus.produce(cfg.topics.slotStatus, [status(32, S.firstShredReceived), status(32, S.completed)]);
    await bus.produce(cfg.topics.slotStatus, [{ key: slotKey(32n), value: encodeSlotStatusRecord({ slot: 32n, status: S.decoded, source: SlotStatusSource.shreds, observedAtMs: Date.now(), reason: '', block }) }]);
    const decodedOf = (c: V2Client) => c.updates.find((u) => u.hasSlot() && u.getSlot()!.getSlot() === 32 && u.getSlot()!.getStatus() === SlotStatus.SLOT_DECODED);
    await live.waitUpdates(() => decodedOf(live) !== undefined, 'decoded 32');
    const seen = (c: V2Client) => {
      const b = decodedOf(c)!.getSlot()!.getBlock()!;
      const up = b.getUpdateParent()!;
      const f = b.getFooter()!;
      return {
        id: Buffer.from(b.getBlockId_asU8()).toString('hex'),
        parent: [b.getParentSlot(), Buffer.from(b.getParentBlockId_asU8()).toString('hex')],
        up: [up.getFecSetIndex(), up.getDiscardedSignaturesList_asU8().map((x) => Buffer.from(x).toString('hex')), up.getIncomplete()],
        footer: [Buffer.from(f.getBankHash_asU8()).toString('hex'), f.getProducerTimeNanos(), Buffer.from(f.getUserAgent_asU8()).toString(), f.getHasFinalizationCertificate(), f.getHasNotarAggregate(), f.getHasSkipRewardCertificate(), f.getHasNotarRewardCertificate()],
      };
    };
    const want = {
      id: '11'.repeat(32),
      parent: [27, '22'.repeat(32)],
      up: [96, ['44'.repeat(64), '55'.repeat(64)], false],
      footer: ['33'.repeat(32), 1_792_540_800_000_000_001, 'agave/4.2.2', true, false, false, true],
    };
    assert.deepEqual(seen(live), want);
    // A tower-era status has no block.
    const completed = live.updates.find((u) => u.hasSlot() && u.getSlot()!.getSlot() === 32 && u.getSlot()!.getStatus() === SlotStatus.SLOT_COMPLETED)!;
    assert.equal(completed.getSlot()!.hasBlock(), false);
    // Resumed from the cursor of the first-shred update: the same identity and retraction.
    const first = live.updates.find((u) => u.hasSlot() && u.getSlot()!.getSlot() === 32)!;
    const resumed = client();
    resumed.start({ cursor: first.getCursor_asU8(), slots: true });
    await resumed.waitUpdates(() => decodedOf(resumed) !== undefined, 'resumed decoded 32');
    assert.deepEqual(seen(resumed), want);
  });
});
