import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import dgram from 'node:dgram';
import bs58 from 'bs58';
import type { Bus, BusMessage, Consumer } from '../../bus/bus';
import { EmbeddedBus } from '../../bus/embedded';
import { KafkaBus } from '../../bus/kafka';
import { decodeSlotRecord } from '../../bus/topics/stream-slots';
import { decodeTxRecord } from '../../bus/topics/stream-transactions';
import { signedTransfer } from '../../infra/local/demo/transfers';
import { encodeEntryBatch } from '../../ingest/entry/entries';
import { randomKeypair, type Keypair } from '../../infra/base/keypair';
import { Registry } from '../../infra/base/metrics';
import type { IngestConfig } from '../../ingest/config';
import { Pipeline } from '../../ingest/pipeline';
import { shredBatch } from '../../ingest/shred/shredder';
import { fixedLeader } from '../../ingest/shred/leader-keys';
import { startIngest, type RunningIngest } from '../../ingest/worker';
import { kafkaBrokers } from '../support/kafka';
import { quietLog } from '../support/log-capture';
import { waitFor } from '../support/wait';
import { drained } from './support/drained';

// A feed that jumps: slots far ahead, then far below (a cluster restart resumes at the last optimistically
// confirmed slot, below the highest seen; or an old capture replayed), then far ahead again, where the new fork
// reuses slot numbers the old one already carried, with other content. Every phase must stream exactly like a
// fresh start: every transaction, once, and nothing from the old slots' state (stale marks, DONE sets, a window)
// may swallow or corrupt the new ones.

const TX_PER_SLOT = 40;
/** Quiet time after which traffic outside the slot window re-anchors ingest (ingest.windowResetMs). */
const RESET_MS = 300;

interface MadeSlot {
  slot: bigint;
  shreds: Buffer[];
  signatures: string[];
}

/** One slot of signed transfers, shredded and signed by `leader` like the demo traffic (infra/local/demo/traffic.ts). */
function makeSlot(slot: bigint, leader: Keypair, payer: Keypair): MadeSlot {
  const signatures: string[] = [];
  const entries: Array<{ numHashes: bigint; hash: Buffer; txs: Buffer[] }> = [];
  for (let e = 0; e < 4; e++) {
    const txs: Buffer[] = [];
    for (let i = 0; i < TX_PER_SLOT / 4; i++) {
      const tx = signedTransfer(payer, crypto.randomBytes(32), BigInt(1 + e * 100 + i));
      txs.push(tx);
      signatures.push(bs58.encode(tx.subarray(1, 65)));
    }
    entries.push({ numHashes: 12_500n, hash: crypto.randomBytes(32), txs });
  }
  const batch = shredBatch(encodeEntryBatch(entries), {
    slot,
    parentOffset: 1,
    shredVersion: 0,
    fecSetIndexStart: 0,
    chainedRoot: crypto.randomBytes(32),
    leaderSeed32: leader.seed,
    lastInSlot: true,
  });
  return { slot, shreds: batch.shreds, signatures };
}

/** Newer slots, then much older ones, then newer again reusing a slot number of the first phase. */
function phases(leader: Keypair, payer: Keypair): MadeSlot[][] {
  return [
    [makeSlot(600_000n, leader, payer), makeSlot(600_001n, leader, payer)],
    [makeSlot(1_000n, leader, payer), makeSlot(1_001n, leader, payer)],
    [makeSlot(600_001n, leader, payer), makeSlot(600_002n, leader, payer)],
  ];
}

describe('ingest: a feed that jumps back and forth streams every slot like a fresh start', function () {
  this.timeout(180_000);

  it('pipeline: newer, much older, newer again (a reused slot number) — every transaction, once', () => {
    const leader = randomKeypair();
    const payer = randomKeypair();
    const got = new Map<bigint, string[]>();
    const slotsSeen: bigint[] = [];
    const p = new Pipeline({
      leaders: fixedLeader(bs58.encode(leader.publicKey)),
      windowResetMs: RESET_MS,
      sink: {
        batch: (out) => {
          const list = got.get(out.batch.slot) ?? [];
          for (const t of out.txs) list.push(bs58.encode(t.tx.signatures[0]!));
          got.set(out.batch.slot, list);
        },
        slot: (slot) => void slotsSeen.push(slot),
      },
    });
    let t = 1_000_000;
    const all = phases(leader, payer);
    for (const phase of all) {
      got.clear();
      for (const s of phase) for (const shred of s.shreds) p.push(shred, (t += 0.01));
      assert.equal(got.size, phase.length, `slots of phase starting ${phase[0]!.slot}`);
      for (const s of phase) {
        const sigs = got.get(s.slot) ?? [];
        assert.equal(sigs.length, TX_PER_SLOT, `transactions of slot ${s.slot}`);
        assert.deepEqual([...sigs].sort(), [...s.signatures].sort());
      }
      t += RESET_MS + 1; // the feed is quiet for a moment (restart), then continues elsewhere
    }
    const s = p.stats();
    assert.equal(s.transactions, TX_PER_SLOT * 6);
    assert.equal(s.batches, 6);
    assert.equal(s.drops.slot_window, 0);
    assert.equal(s.drops.conflict + s.drops.signature + s.equivocations, 0, 'the reused slot number carries nothing of the old one');
    assert.deepEqual(slotsSeen, [600_000n, 600_001n, 1_000n, 1_001n, 600_001n, 600_002n]);
  });

  it('pipeline: within the quiet time, traffic outside the window is refused (a stray old packet cannot wipe live state)', () => {
    const leader = randomKeypair();
    const payer = randomKeypair();
    let txs = 0;
    const p = new Pipeline({
      leaders: fixedLeader(bs58.encode(leader.publicKey)),
      windowResetMs: RESET_MS,
      sink: { batch: (out) => void (txs += out.txs.length), slot: () => undefined },
    });
    const live = makeSlot(600_000n, leader, payer);
    const stray = makeSlot(1_000n, leader, payer);
    for (const shred of live.shreds) p.push(shred, 1000);
    p.push(stray.shreds[0]!, 1000 + RESET_MS - 1);
    assert.equal(txs, TX_PER_SLOT);
    assert.equal(p.stats().drops.slot_window, 1);
  });

  for (const kind of ['embedded', 'kafka'] as const) {
    describe(`over real UDP into a running ingest, on the ${kind} bus`, () => {
      let bus: Bus | undefined;
      let consumer: Consumer | undefined;
      let ingest: RunningIngest | undefined;
      let socket: dgram.Socket | undefined;

      after(async () => {
        socket?.close();
        await ingest?.close();
        await consumer?.close();
        await bus?.close();
      });

      it('publishes every transaction of each phase, each once, and a slot event per slot', async () => {
        const { log } = quietLog('warn');
        const id = crypto.randomBytes(4).toString('hex');
        const topics = { transactions: `test.jump.${id}.transactions`, slots: `test.jump.${id}.slots` };
        bus = kind === 'kafka'
          ? new KafkaBus({ brokers: await kafkaBrokers(), clientId: 'meridian-test-jump', log })
          : new EmbeddedBus({ log });
        await bus.createTopics([
          { name: topics.transactions, partitions: 1, compacted: false },
          { name: topics.slots, partitions: 1, compacted: false },
        ]);
        const got: BusMessage[] = [];
        consumer = await bus.consume({ topics: [topics.transactions, topics.slots], from: 'beginning', onBatch: (m) => void got.push(...m) });
        await consumer.ready;

        const leader = randomKeypair();
        const payer = randomKeypair();
        const cfg: IngestConfig = {
          enabled: true,
          host: '127.0.0.1',
          port: 0,
          recvBufferBytes: 8 * 1024 * 1024,
          recvBufferExplicit: false,
          shredVersion: 0,
          leader: { mode: 'fixed', key: bs58.encode(leader.publicKey) },
          slotWindow: 512,
          windowResetMs: RESET_MS,
          queuePackets: 65_536,
          publishQueueBatches: 4096,
        };
        ingest = await startIngest(cfg, bus, log, { topics, registry: new Registry() });
        const port = ingest.address.port;
        const udp = dgram.createSocket('udp4');
        socket = udp;

        const txsOf = (slot: bigint): string[] =>
          got.filter((m) => m.topic === topics.transactions).flatMap((m) => {
            const r = decodeTxRecord(m.value!);
            return r.ok && r.record.slot === slot ? [bs58.encode(m.key!)] : [];
          });
        let sent = 0;
        const send = async (shreds: Buffer[]): Promise<void> => {
          sent += shreds.length;
          // Paced a little: loopback drops nothing at this rate, and the test is about slots, not bursts.
          for (let i = 0; i < shreds.length; i++) {
            await new Promise<void>((r, j) => udp.send(shreds[i]!, port, '127.0.0.1', (e) => (e ? j(e) : r())));
            if (i % 64 === 63) await new Promise((r) => setTimeout(r, 2));
          }
        };

        const all = phases(leader, payer);
        let expected = 0;
        for (const phase of all) {
          const before = got.filter((m) => m.topic === topics.transactions).length;
          for (const s of phase) await send(s.shreds);
          expected += phase.length * TX_PER_SLOT;
          await waitFor(() => got.filter((m) => m.topic === topics.transactions).length >= expected, 60_000, `phase starting at slot ${phase[0]!.slot} on the bus`);
          const phaseMsgs = got.filter((m) => m.topic === topics.transactions).slice(before);
          assert.equal(phaseMsgs.length, phase.length * TX_PER_SLOT);
          for (const s of phase) {
            const mine = phaseMsgs.filter((m) => {
              const r = decodeTxRecord(m.value!);
              return r.ok && r.record.slot === s.slot;
            }).map((m) => bs58.encode(m.key!));
            assert.equal(mine.length, TX_PER_SLOT, `slot ${s.slot}`);
            assert.deepEqual([...mine].sort(), [...s.signatures].sort());
          }
          await new Promise((r) => setTimeout(r, RESET_MS + 100)); // the feed pauses, as a restart does
        }

        const isMark = await drained(ingest, bus, [topics.transactions, topics.slots], got, sent); // anything extra has arrived now
        const txMsgs = got.filter((m) => m.topic === topics.transactions && !isMark(m));
        assert.equal(txMsgs.length, 6 * TX_PER_SLOT);
        assert.equal(new Set(txMsgs.map((m) => bs58.encode(m.key!))).size, 6 * TX_PER_SLOT, 'each transaction once');
        assert.equal(txsOf(600_001n).length, 2 * TX_PER_SLOT, 'both forks of the reused slot number');
        const slotEvents = got.filter((m) => m.topic === topics.slots && !isMark(m)).map((m) => decodeSlotRecord(m.value!)?.slot);
        assert.deepEqual(slotEvents, [600_000n, 600_001n, 1_000n, 1_001n, 600_001n, 600_002n]);
        const s = ingest.stats();
        assert.equal(s.pipeline.drops.slot_window, 0);
        assert.equal(s.pipeline.batches, 6);
        assert.equal(s.publisher.failed + s.publisher.queueDrops, 0);
      });
    });
  }
});
