import assert from 'node:assert/strict';
import { SlotStatus, type SubscribeUpdate } from '../../proto/gen/stream_v2_pb';
import { decodeCursor, encodeCursor, stampOf, TopicTag } from '../../fanout/v2/cursor';
import type { Running } from '../../infra/launcher';
import { V2Client } from '../fanout/v2/client';
import { kafkaBrokers } from '../support/kafka';
import { quietLog } from '../support/log-capture';
import { waitFor } from '../support/wait';
import { launchOneMachine } from '../support/one-machine';
import bs58 from 'bs58';
import { jsonRpc } from '../../infra/base/json-rpc';
import { blockFormatsFor } from '../support/block-formats';

// The local chain end to end, with demo traffic: its leader shreds every slot to ingest (leader-signature check on), ingest derives
// first shred / completed / decoded from the shreds and takes processed / confirmed / finalized from the chain's
// slotSubscribe (and getSlot at confirmed), all on stream.slot-status; a v2 client with slots on gets each status
// once per slot, in the ladder's order. A client resuming from a cursor taken mid-stream — and from the same cursor
// without its status-topic part, as a cursor made before the topic existed — continues with exactly what the first
// client got after that cursor.

const ORDER = [
  SlotStatus.SLOT_FIRST_SHRED_RECEIVED,
  SlotStatus.SLOT_COMPLETED,
  SlotStatus.SLOT_DECODED,
  SlotStatus.SLOT_PROCESSED,
  SlotStatus.SLOT_CONFIRMED,
  SlotStatus.SLOT_FINALIZED,
];
const FULL = ORDER.join(',');

type Pair = [number, number];

function slotUpdates(us: readonly SubscribeUpdate[]): Pair[] {
  return us.filter((u) => u.hasSlot()).map((u) => [u.getSlot()!.getSlot(), u.getSlot()!.getStatus()]);
}

function bySlot(pairs: readonly Pair[]): Map<number, number[]> {
  const m = new Map<number, number[]>();
  for (const [s, st] of pairs) m.set(s, [...(m.get(s) ?? []), st]);
  return m;
}

/** Slots whose statuses arrived as the whole ladder, in order. */
function fullSlots(us: readonly SubscribeUpdate[]): number[] {
  return [...bySlot(slotUpdates(us))].filter(([, sts]) => sts.join(',') === FULL).map(([s]) => s);
}

function assertOnceInOrder(us: readonly SubscribeUpdate[]): void {
  for (const [slot, sts] of bySlot(slotUpdates(us))) {
    const ranks = sts.map((st) => ORDER.indexOf(st as (typeof ORDER)[number]));
    assert.ok(!sts.includes(SlotStatus.SLOT_DEAD), `slot ${slot} is dead: ${sts.join(',')}`);
    assert.ok(ranks.every((r) => r >= 0), `slot ${slot}: unknown status in ${sts.join(',')}`);
    for (let i = 1; i < ranks.length; i++) assert.ok(ranks[i]! > ranks[i - 1]!, `slot ${slot}: statuses out of order or repeated: ${sts.join(',')}`);
  }
}

/**
 * Alpenglow: every SLOT_DECODED names the block the chain made — the id the chain's shredder computed, the parent's
 * id, and the footer (the chain's user agent; its bank hash is the block's blockhash, see shred-sender.ts). Tower-era
 * blocks have no identity.
 */
async function assertBlockIdentities(running: Running, format: string, us: readonly SubscribeUpdate[]): Promise<void> {
  const decoded = us.filter((u) => u.hasSlot() && u.getSlot()!.getStatus() === SlotStatus.SLOT_DECODED).map((u) => u.getSlot()!);
  assert.ok(decoded.length >= 4);
  const chain = running.localChain!;
  assert.equal(chain.blockFormat, format);
  const call = jsonRpc(running.endpoints.chain!.http);
  for (const d of decoded) {
    if (format === 'tower') {
      assert.equal(d.hasBlock(), false, `slot ${d.getSlot()}: a tower-era block has no identity`);
      continue;
    }
    const b = d.getBlock();
    assert.ok(b !== undefined, `slot ${d.getSlot()}: DECODED without its block identity`);
    const want = chain.blockId(d.getSlot());
    assert.ok(want !== undefined, `slot ${d.getSlot()}: the chain shredded it`);
    assert.equal(Buffer.from(b.getBlockId_asU8()).toString('hex'), want.toString('hex'), `slot ${d.getSlot()}: the block id announced is the chain's`);
    assert.equal(b.getParentSlot(), d.getSlot() - 1);
    const parentId = chain.blockId(d.getSlot() - 1);
    if (parentId !== undefined) assert.equal(Buffer.from(b.getParentBlockId_asU8()).toString('hex'), parentId.toString('hex'), 'the parent block id is the chain\u2019s');
    assert.equal(Buffer.from(b.getFooter()!.getUserAgent_asU8()).toString(), 'meridian-localchain');
    const block = await call<{ blockhash: string }>('getBlock', [d.getSlot(), { transactionDetails: 'none', rewards: false, commitment: 'confirmed' }]);
    assert.equal(bs58.encode(b.getFooter()!.getBankHash_asU8()), block.blockhash, `slot ${d.getSlot()}: the footer's bank hash is the block's blockhash`);
    assert.equal(b.hasUpdateParent(), false, 'no UpdateParent unless localchain.updateParentEvery asks');
  }
}

for (const busKind of ['embedded', 'kafka'] as const) for (const format of blockFormatsFor(busKind)) {
  describe(`slot statuses end to end on the local chain, ${busKind} bus, ${format} blocks`, function () {
    this.timeout(240_000);
    let running: Running | undefined;
    const clients: V2Client[] = [];
    after(async () => {
      for (const c of clients) c.cancel();
      await running?.stop();
    });

    it('a v2 client with slots on gets first shred, completed, decoded, processed, confirmed and finalized, once each and in order; a resume from a cursor (with or without its status part) continues exactly', async () => {
      const { log } = quietLog();
      running = await launchOneMachine({
        bus: busKind === 'kafka' ? await kafkaBrokers() : 'embedded',
        log,
        blockFormat: format,
        // Demo transfers: slots of several entry batches (flushed mid-slot), not only the final tick batch.
        config: { localchain: { slotMs: 400 }, demo: { enabled: true, txPerSec: 50 } },
      });
      const stream = running.endpoints.stream!;

      const a = new V2Client(stream);
      clients.push(a);
      a.start({ slots: true });
      await a.waitUpdates((us) => fullSlots(us).length >= 4, 'four slots with every status', 90_000).catch((e: unknown) => {
        throw new Error(`${String(e)}; got ${JSON.stringify([...bySlot(slotUpdates(a.updates))].slice(-12))}`);
      });
      assertOnceInOrder(a.updates);
      await assertBlockIdentities(running, format, a.updates);
      const full = fullSlots(a.updates);
      // The ladder is the rule, not the luck of one slot: most slots seen from their first shred on get all of it.
      const started = [...bySlot(slotUpdates(a.updates))].filter(([, sts]) => sts[0] === SlotStatus.SLOT_FIRST_SHRED_RECEIVED).map(([s]) => s);
      const finalized = started.filter((s) => bySlot(slotUpdates(a.updates)).get(s)!.includes(SlotStatus.SLOT_FINALIZED));
      assert.ok(full.length >= Math.ceil(finalized.length / 2), `full ladders ${full.length} of ${finalized.length} finalized slots: ${JSON.stringify([...bySlot(slotUpdates(a.updates))])}`);

      // Resume from the cursor of a status update in the middle.
      const slotIdx = a.updates.map((u, i) => (u.hasSlot() ? i : -1)).filter((i) => i >= 0);
      const mid = slotIdx[Math.floor(slotIdx.length / 2)]!;
      const cursor = a.updates[mid]!.getCursor_asU8();
      const d = decodeCursor(cursor);
      assert.ok(d.ok && d.position.has(TopicTag.slotStatus), 'cursors name the status topic');
      const b = new V2Client(stream);
      clients.push(b);
      b.start({ cursor, slots: true });
      // Without the status part: a cursor as made before stream.slot-status existed.
      const old = new Map(d.position);
      old.delete(TopicTag.slotStatus);
      const c = new V2Client(stream);
      clients.push(c);
      c.start({ cursor: encodeCursor(old, d.ok && d.logs !== null ? stampOf(d.logs) : null), slots: true });

      const expected = slotUpdates(a.updates.slice(mid + 1));
      const within = (x: V2Client): boolean => slotUpdates(x.updates).length >= expected.length;
      await waitFor(() => within(b) && within(c), 60_000, 'resumed clients caught up with the reference');
      assert.equal(b.status, undefined);
      // b resumes at the exact status record (one partition holds every status): its first statuses are exactly the
      // reference's after the cursor.
      assert.deepEqual(slotUpdates(b.updates).slice(0, expected.length), expected);
      assertOnceInOrder(b.updates);
      // c is placed by time (the status topic from where the cursor's slots position was appended): nothing the
      // reference got after the cursor is missing, and its statuses are still once each, in order.
      const cGot = new Set(slotUpdates(c.updates).map(([s, st]) => `${s}/${st}`));
      const missing = expected.filter(([s, st]) => !cGot.has(`${s}/${st}`));
      assertOnceInOrder(c.updates);
      assert.deepEqual(missing, [], 'an old cursor without the status topic resumes without losing statuses');
    });
  });
}
