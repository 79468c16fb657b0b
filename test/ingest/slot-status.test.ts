import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { decodeSlotStatusRecord, encodeSlotStatusRecord, SlotStatusCode, SlotStatusSource } from '../../bus/topics/stream-slot-status';
import { ChainStatusHold } from '../../ingest/chain-hold';
import { ChainSlotStatuses, type ChainStatusEvent } from '../../ingest/chain-slots';
import { encodeEntryBatch } from '../../ingest/entry/entries';
import { Pipeline } from '../../ingest/pipeline';
import { DATA_SHREDS_PER_SET, FLAG_LAST_IN_SLOT, DATA_FLAGS_OFF } from '../../ingest/shred/layout';
import { shredBatch } from '../../ingest/shred/shredder';
import type { SlotStatusEvent } from '../../ingest/slot-status';

// Slot statuses derived by ingest from crafted shreds (the project's shredder, as the local chain's leader makes
// them): a whole slot reaches first shred → completed → decoded, each once, however often shreds repeat; a slot
// missing more than a set's parity can rebuild never completes; two roots for one FEC set, or two sets flagged
// LAST_IN_SLOT, make the slot dead and nothing follows. And the chain node's notifications → processed /
// confirmed / finalized, once each and in order.

const LEADER_SEED = crypto.randomBytes(32);
const S = SlotStatusCode;

/** One entry batch of `entries` tick entries, shredded from FEC set index `fec`. */
function batch(slot: number, fec: number, lastInSlot: boolean, entries = 3, salt = 0): { shreds: Buffer[]; next: number } {
  const es = Array.from({ length: entries }, (_, i) => ({ numHashes: BigInt(1000 + i + salt), hash: crypto.randomBytes(32), txs: [] as Buffer[] }));
  const b = shredBatch(encodeEntryBatch(es), { slot, parentOffset: 1, shredVersion: 0, fecSetIndexStart: fec, chainedRoot: crypto.randomBytes(32), leaderSeed32: LEADER_SEED, lastInSlot });
  return { shreds: b.shreds, next: b.nextFecSetIndex };
}

/** A whole slot of `batches` batches (one set each), the last flagged LAST_IN_SLOT. */
function wholeSlot(slot: number, batches: number): Buffer[] {
  const out: Buffer[] = [];
  let fec = 0;
  for (let i = 0; i < batches; i++) {
    const b = batch(slot, fec, i === batches - 1);
    out.push(...b.shreds);
    fec = b.next;
  }
  return out;
}

function pipeline(maxStatusSlots?: number): { p: Pipeline; events: SlotStatusEvent[] } {
  const events: SlotStatusEvent[] = [];
  const p = new Pipeline({ sink: { batch: () => {}, slot: () => {}, slotStatus: (e) => void events.push(e) }, ...(maxStatusSlots === undefined ? {} : { maxStatusSlots }) });
  return { p, events };
}

function statusesOf(events: SlotStatusEvent[], slot: number): number[] {
  return events.filter((e) => e.slot === BigInt(slot)).map((e) => e.status);
}

describe('ingest slot statuses (crafted shreds)', () => {
  it('a whole slot: first shred, completed, decoded — once each, in order, with duplicates and shuffled arrival', () => {
    const { p, events } = pipeline();
    const shreds = wholeSlot(100, 3);
    assert.equal(shreds.length, 3 * 64);
    // Shuffled, and every shred twice: statuses must still come once each and in order.
    const order = [...shreds, ...shreds].map((s) => ({ s, k: crypto.randomInt(1 << 30) }));
    order.sort((a, b) => a.k - b.k);
    let t = 1000;
    for (const { s } of order) p.push(s, t++);
    assert.deepEqual(statusesOf(events, 100), [S.firstShredReceived, S.completed, S.decoded]);
    assert.deepEqual(p.slotStatusCounts(), { first_shred_received: 1, completed: 1, decoded: 1, dead: 0, evictedUnfinished: 0, decodeFailures: 0 });
  });

  it('a slot recovered from parity completes too (32 of 64 shreds of each set)', () => {
    const { p, events } = pipeline();
    const shreds = wholeSlot(101, 2);
    // Drop 32 data shreds of the first set: the 32 code shreds rebuild it.
    for (let i = DATA_SHREDS_PER_SET; i < shreds.length; i++) p.push(shreds[i]!, i);
    assert.deepEqual(statusesOf(events, 101), [S.firstShredReceived, S.completed, S.decoded]);
  });

  it('missing shreds: a set short of 32 shards never completes, so neither does the slot', () => {
    const { p, events } = pipeline();
    const shreds = wholeSlot(102, 3);
    // The middle set (shreds 64..127) loses 33 of its 64 shards: unrecoverable.
    for (let i = 0; i < shreds.length; i++) if (!(i >= 64 && i < 64 + 33)) p.push(shreds[i]!, i);
    assert.deepEqual(statusesOf(events, 102), [S.firstShredReceived]);
    // Without the LAST_IN_SLOT set the count is unknown: no completion either.
    const { p: p2, events: e2 } = pipeline();
    const s2 = wholeSlot(103, 2);
    for (let i = 0; i < 64; i++) p2.push(s2[i]!, i);
    assert.deepEqual(statusesOf(e2, 103), [S.firstShredReceived]);
  });

  it('equivocation: a second signed root for one FEC set makes the slot dead, and nothing follows', () => {
    const { p, events } = pipeline();
    const a = batch(104, 0, false, 3, 1);
    const b = batch(104, 0, false, 4, 2); // same slot and set index, other content: another root
    for (const s of a.shreds) p.push(s, 1);
    for (const s of b.shreds.slice(0, 5)) p.push(s, 2);
    const last = batch(104, 32, true);
    for (const s of last.shreds) p.push(s, 3);
    assert.deepEqual(statusesOf(events, 104), [S.firstShredReceived, S.dead]);
    const dead = events.find((e) => e.status === S.dead)!;
    assert.match(dead.reason, /equivocation: two Merkle roots for FEC set 0/);
    assert.equal(p.stats().equivocations > 0, true);
  });

  it('two different last shreds in one slot (a last-index conflict) make it dead', () => {
    const { p, events } = pipeline();
    const b0 = batch(105, 0, false);
    const b1 = batch(105, 32, true); // LAST_IN_SLOT at index 63
    const b2 = batch(105, 64, true); // and again at index 95
    for (const s of [...b0.shreds, ...b1.shreds]) p.push(s, 1);
    assert.deepEqual(statusesOf(events, 105), [S.firstShredReceived, S.completed, S.decoded]);
    for (const s of b2.shreds) p.push(s, 2);
    assert.deepEqual(statusesOf(events, 105), [S.firstShredReceived, S.completed, S.decoded, S.dead]);
    assert.match(events.at(-1)!.reason, /two last shreds in slot: indexes 63 and 95/);
    // The flag itself is what the shredder set (not a test artefact): the last data shred of b1 carries it.
    assert.equal(b1.shreds[31]![DATA_FLAGS_OFF]! & FLAG_LAST_IN_SLOT, FLAG_LAST_IN_SLOT);
  });

  it('memory is bounded: at most maxStatusSlots slots tracked, the lowest forgotten first and counted', () => {
    const { p, events } = pipeline(8);
    // Slots that never complete (first set only, no LAST_IN_SLOT).
    for (let slot = 200; slot < 240; slot++) for (const s of batch(slot, 0, false).shreds.slice(0, 40)) p.push(s, slot);
    assert.ok(p.sizes().statusSlots <= 8, `tracked ${p.sizes().statusSlots}`);
    assert.equal(p.slotStatusCounts().evictedUnfinished, 40 - 8);
    assert.equal(events.filter((e) => e.status === S.firstShredReceived).length, 40);
  });

  it('the record round-trips, reason cut at 255 bytes on a character boundary', () => {
    const r = { slot: 123n, status: S.dead, source: SlotStatusSource.shreds, observedAtMs: 1.5, reason: 'é'.repeat(200) } as const;
    const d = decodeSlotStatusRecord(encodeSlotStatusRecord(r))!;
    assert.equal(d.slot, 123n);
    assert.equal(d.status, S.dead);
    assert.equal(d.reason, 'é'.repeat(127));
    assert.equal(decodeSlotStatusRecord(Buffer.from([2])), null);
  });
});

describe('chain node slot notifications → processed / confirmed / finalized', () => {
  function run(f: (c: ChainSlotStatuses) => void): Array<[number, number]> {
    const out: ChainStatusEvent[] = [];
    f(new ChainSlotStatuses((e) => void out.push(e)));
    return out.map((e) => [Number(e.slot), e.status]);
  }

  it('a new bank makes its parent processed; the root finalizes it and its ancestors, confirmed first', () => {
    const got = run((c) => {
      c.slotNotification(11, 10, 5, 0);
      c.slotNotification(12, 11, 5, 0);
      c.slotNotification(14, 12, 12, 0); // 13 skipped on this fork
    });
    // Exact order: 5 is finalized at the first notification (its root), then 10..12 at the last one.
    assert.deepEqual(got, [
      [10, S.processed], [5, S.processed], [5, S.confirmed], [5, S.finalized],
      [11, S.processed],
      [12, S.processed], [10, S.confirmed], [10, S.finalized], [11, S.confirmed], [11, S.finalized], [12, S.confirmed], [12, S.finalized],
    ]);
  });

  it('the confirmed poll confirms a slot and its known ancestors once; a repeat or lower slot adds nothing', () => {
    const got = run((c) => {
      c.slotNotification(21, 20, 0, 0);
      c.slotNotification(22, 21, 0, 0);
      c.slotNotification(23, 22, 0, 0);
      c.confirmedSlot(22, 0);
      c.confirmedSlot(22, 0);
      c.confirmedSlot(21, 0);
    });
    const forSlot = (s: number): number[] => got.filter(([x]) => x === s).map(([, st]) => st);
    assert.deepEqual(forSlot(20), [S.processed, S.confirmed]);
    assert.deepEqual(forSlot(21), [S.processed, S.confirmed]);
    assert.deepEqual(forSlot(22), [S.processed, S.confirmed]);
    assert.deepEqual(forSlot(23), []);
  });
});

describe('chain statuses wait for the shreds (chain-hold.ts)', () => {
  it('a chain status waits until ingest decoded its slot, or its hold time passed; a slot already decoded passes at once', () => {
    let now = 0;
    const out: Array<[number, number]> = [];
    const hold = new ChainStatusHold({ holdMs: 1000, maxHeld: 3, release: (e) => void out.push([Number(e.slot), e.status]), now: () => now });
    const ev = (slot: number, status: SlotStatusCode): ChainStatusEvent => ({ slot: BigInt(slot), status, observedAtMs: now });
    hold.offer(ev(7, S.processed));
    hold.offer(ev(7, S.confirmed));
    hold.offer(ev(8, S.processed));
    assert.equal(out.length, 0);
    hold.ingestDone(7n);
    assert.deepEqual(out, [[7, S.processed], [7, S.confirmed]]);
    hold.offer(ev(7, S.finalized)); // decoded already: at once
    assert.deepEqual(out.at(-1), [7, S.finalized]);
    now = 999;
    hold.tick();
    assert.equal(hold.size, 1);
    now = 1000;
    hold.tick();
    assert.deepEqual(out.at(-1), [8, S.processed]);
    assert.equal(hold.timedOut, 1);
    // Bounded: past maxHeld the oldest goes out at once.
    for (let s = 20; s < 25; s++) hold.offer(ev(s, S.processed));
    assert.equal(hold.size, 3);
    assert.deepEqual(out.slice(-2).map(([s]) => s), [20, 21]);
  });
});
