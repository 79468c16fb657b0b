import assert from 'node:assert/strict';
import bs58 from 'bs58';
import { jsonRpc } from '../../infra/base/json-rpc';
import type { Running } from '../../infra/launcher';
import { SlotStatus, type SubscribeUpdate } from '../../proto/gen/stream_v2_pb';
import { V2Client } from '../fanout/v2/client';
import { quietLog } from '../support/log-capture';
import { launchOneMachine } from '../support/one-machine';

// Fast leader handover on the local chain, the whole loop: with localchain.updateParentEvery = 1 the first slot of
// every leader window is a handover block (chain.ts: its header names an abandoned parent version, an UpdateParent
// at half the slot names the real one, what came before it is discarded by the chain and included again, and one
// transfer the node signed is discarded for good). Demo traffic runs through it. A v2 client that drops one copy per
// signature the slot's retraction names holds exactly the transactions getBlock returns for that slot; so does a
// client resumed from a cursor taken before the slot. Without the retraction it would hold the discarded copies too.

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** The slot's transactions a client keeps once it applies the retraction; null until its SLOT_DECODED is in. */
function kept(us: readonly SubscribeUpdate[], slot: number): { kept: string[]; received: number; discarded: string[] } | null {
  const decoded = us.find((u) => u.hasSlot() && u.getSlot()!.getSlot() === slot && u.getSlot()!.getStatus() === SlotStatus.SLOT_DECODED);
  if (decoded === undefined) return null;
  const got = us.filter((u) => u.hasTransaction() && u.getTransaction()!.getSlot() === slot).map((u) => hex(u.getTransaction()!.getSignature_asU8()));
  const received = got.length;
  const discarded = (decoded.getSlot()!.getBlock()?.getUpdateParent()?.getDiscardedSignaturesList_asU8() ?? []).map(hex);
  for (const d of discarded) {
    const i = got.indexOf(d);
    if (i < 0) return null; // a discarded copy not in yet (a replay reads statuses and transactions side by side)
    got.splice(i, 1);
  }
  return { kept: got.sort(), received, discarded };
}

describe('local chain with UpdateParent windows: a v2 client that applies the retraction holds what getBlock returns', function () {
  this.timeout(180_000);
  let running: Running | undefined;
  const clients: V2Client[] = [];
  after(async () => {
    for (const c of clients) c.cancel();
    await running?.stop();
  });

  it('live and resumed from a cursor before the handover slot', async () => {
    const { log } = quietLog();
    running = await launchOneMachine({ bus: 'embedded', log, config: { localchain: { updateParentEvery: 1, slotMs: 400 }, demo: { enabled: true, txPerSec: 40 } } });
    const chain = running.localChain!;
    const call = jsonRpc(running.endpoints.chain!.http);
    const a = new V2Client(running.endpoints.stream!);
    clients.push(a);
    a.add('all', []);
    a.start({ slots: true });
    await a.waitUpdates((us) => us.some((u) => u.hasSlot() && u.getSlot()!.getStatus() === SlotStatus.SLOT_FIRST_SHRED_RECEIVED), 'a first slot', 30_000);
    const firstSeen = a.updates.find((u) => u.hasSlot())!.getSlot()!.getSlot();
    // A handover slot the client saw from before its first shred, with transactions of the demo before and after.
    const target = (): number | undefined => [...chain.updateParents().keys()].find((s) => s > firstSeen + 1 && kept(a.updates, s) !== null);
    await a.waitUpdates(() => target() !== undefined, 'a handover slot decoded', 60_000);
    const slot = target()!;
    const want = async (): Promise<string[]> => {
      const b = await call<{ signatures: string[] }>('getBlock', [slot, { transactionDetails: 'signatures', rewards: false, commitment: 'confirmed' }]);
      return b.signatures.map((s) => hex(bs58.decode(s))).sort();
    };
    const chainKeeps = await want();
    assert.ok(chainKeeps.length > 0, 'the demo put transactions into the handover slot');
    const decoded = a.updates.find((u) => u.hasSlot() && u.getSlot()!.getSlot() === slot && u.getSlot()!.getStatus() === SlotStatus.SLOT_DECODED)!.getSlot()!;
    assert.ok(decoded.getBlock()?.hasUpdateParent(), 'the slot\u2019s identity carries the retraction');
    assert.equal(decoded.getBlock()!.getUpdateParent()!.getFecSetIndex(), chain.updateParents().get(slot), 'at the FEC set the chain put its UpdateParent');
    assert.equal(hex(decoded.getBlock()!.getBlockId_asU8()), chain.blockId(slot)!.toString('hex'), 'the block id is the chain\u2019s');
    // Live: the slot's transactions trail its status by a little; wait for the chain's set, then compare exactly.
    await a.waitUpdates((us) => kept(us, slot)?.kept.length === chainKeeps.length, 'the live client holds the slot\u2019s kept transactions', 20_000).catch(() => undefined);
    const live = kept(a.updates, slot)!;
    assert.deepEqual(live.kept, chainKeeps, 'live: received minus retracted = getBlock');
    assert.ok(live.discarded.length >= 1 && live.received > chainKeeps.length, `the retraction removed copies (${live.received} received, ${live.discarded.length} discarded)`);
    assert.ok(live.discarded.some((d) => !chainKeeps.includes(d)), 'one transaction was discarded for good (the chain\u2019s own transfer)');

    // Resumed from the cursor of the last update before anything of the slot.
    const firstOfSlot = a.updates.findIndex((u) => (u.hasSlot() && u.getSlot()!.getSlot() === slot) || (u.hasTransaction() && u.getTransaction()!.getSlot() === slot));
    const cursor = a.updates.slice(0, firstOfSlot).reverse().find((u) => u.getCursor_asU8().length > 0)!.getCursor_asU8();
    const b = new V2Client(running.endpoints.stream!);
    clients.push(b);
    b.add('all', []);
    b.start({ cursor, slots: true });
    await b.waitUpdates((us) => kept(us, slot)?.kept.length === chainKeeps.length, 'the resumed client holds the slot\u2019s kept transactions', 30_000);
    assert.deepEqual(kept(b.updates, slot)!.kept, chainKeeps, 'resumed: the same');
  });
});
