import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import bs58 from 'bs58';
import type { BusMessage, Consumer } from '../../bus/bus';
import { EmbeddedBus } from '../../bus/embedded';
import { decodeTxRecord } from '../../bus/topics/stream-transactions';
import { randomKeypair } from '../../infra/base/keypair';
import { Registry } from '../../infra/base/metrics';
import type { IngestConfig } from '../../ingest/config';
import { socketDrops } from '../../ingest/udp-drops';
import { startIngest, type RunningIngest } from '../../ingest/worker';
import { quietLog } from '../support/log-capture';
import { waitFor } from '../support/wait';
import { makeBlock, type Block } from './support/blocks';
import { hostilePool, runFlood, type FloodReport } from './support/flood';

// A flood over real loopback UDP into a running ingest (embedded bus): one address sends forged and malformed
// shreds at FLOOD_RATE datagrams/s (default 20,000; a loaded host slows the sender) while a feed on another
// address sends good blocks (shreds spread over time, blocks overlapping). Every good transaction must arrive
// exactly once, and the flood must not re-anchor ingest. Before this, each forged shred with a valid header cost
// a leader-signature verify, ingest fell behind the socket, and the kernel dropped the feed's shreds with the
// flood's: good sets never got 32 of their 64 shreds. Now forgeries are dropped before hashing once their
// source's budget is spent, and the feed (known-good after its first block) gets a connected socket of its own,
// which the flood cannot fill even when ingest is starved of CPU and the kernel drops much of the flood.
// Bounded in time: the flood lasts (BLOCKS + 3) × BLOCK_EVERY_MS + TAIL_MS (~5 s); the test takes ~10 s.

const RATE = Number(process.env.FLOOD_RATE ?? 20_000);
const BLOCKS = Number(process.env.FLOOD_BLOCKS ?? 12);
const BLOCK_EVERY_MS = 300;
const TAIL_MS = 500;
const FIRST_SLOT = 700_000n;
const SHRED_VERSION = 4242;

describe('ingest under a UDP flood from one source: a feed on another source still completes every block', function () {
  this.timeout(120_000);
  let bus: EmbeddedBus | undefined;
  let consumer: Consumer | undefined;
  let ingest: RunningIngest | undefined;
  let udp: dgram.Socket | undefined;

  after(async () => {
    udp?.close();
    await ingest?.close();
    await consumer?.close();
    await bus?.close();
  });

  it(`every good transaction arrives exactly once under ${RATE} hostile datagrams/s; no reset, budgets hold`, async () => {
    const { log, lines } = quietLog('warn');
    bus = new EmbeddedBus({ log });
    const topics = { transactions: 'test.flood.transactions', slots: 'test.flood.slots' };
    await bus.createTopics([
      { name: topics.transactions, partitions: 1, compacted: false },
      { name: topics.slots, partitions: 1, compacted: false },
    ]);
    const got: BusMessage[] = [];
    consumer = await bus.consume({ topics: [topics.transactions], from: 'beginning', onBatch: (m) => void got.push(...m) });
    await consumer.ready;

    const leader = randomKeypair();
    const attacker = randomKeypair();
    const payer = randomKeypair();
    const cfg: IngestConfig = {
      enabled: true,
      host: '127.0.0.1',
      port: 0,
      recvBufferBytes: 4 * 1024 * 1024,
      recvBufferExplicit: false,
      shredVersion: SHRED_VERSION,
      leader: { mode: 'fixed', key: bs58.encode(leader.publicKey) },
      slotWindow: 512,
      windowResetMs: 1_000,
      queuePackets: 16_384,
      publishQueueBatches: 4096,
    };
    const registry = new Registry();
    ingest = await startIngest(cfg, bus, log, { topics, registry });
    const port = ingest.address.port;
    const txCount = (): number => got.length;

    // Before the flood: one block from the feed's address (it becomes a known-good source).
    const blocks: Block[] = Array.from({ length: BLOCKS + 2 }, (_, i) => makeBlock(FIRST_SLOT + BigInt(i), leader, payer, 20, SHRED_VERSION));
    udp = dgram.createSocket('udp4');
    await new Promise<void>((r) => udp!.bind(0, '127.0.0.1', r));
    for (const s of blocks[0]!.shreds) await new Promise<void>((r, j) => udp!.send(s, port, '127.0.0.1', (e) => (e ? j(e) : r())));
    await waitFor(() => txCount() >= 20, 30_000, 'the block before the flood');

    // The flood, with the feed's blocks 1..BLOCKS sent during it from the same feed address.
    const pool = hostilePool(34, attacker, payer, blocks[0]!, FIRST_SLOT, SHRED_VERSION);
    const feedAddress = udp.address().address;
    udp.close();
    udp = undefined;
    const report: FloodReport = await runFlood({
      port, hostileAddress: '127.0.0.2', feedAddress, pool, ratePerS: RATE,
      blocks: blocks.slice(1, BLOCKS + 1).map((b) => b.shreds), blockEveryMs: BLOCK_EVERY_MS, tailMs: TAIL_MS,
    });
    // After the flood: once every datagram sent so far was read or dropped by the kernel (a backlog left in the
    // socket buffer would drop this block's shreds as the flood's were), the last block.
    const sentSoFar = blocks[0]!.shreds.length + report.hostileSent + report.goodSent;
    await waitFor(() => {
      return ingest!.stats().receiver.received + (socketDrops(port, false) ?? 0) >= sentSoFar;
    }, 60_000, 'the socket backlog of the flood');
    udp = dgram.createSocket('udp4');
    await new Promise<void>((r) => udp!.bind(0, feedAddress, r));
    for (const s of blocks[BLOCKS + 1]!.shreds) await new Promise<void>((r, j) => udp!.send(s, port, '127.0.0.1', (e) => (e ? j(e) : r())));

    const expected = blocks.flatMap((b) => b.signatures);
    const settle = async (): Promise<boolean> => {
      const st = ingest!.stats();
      return st.receiver.queued === 0 && st.publisher.queued === 0 && txCount() >= expected.length;
    };
    const show = (): string => {
      const st = ingest!.stats();
      const have = new Set(got.map((m) => bs58.encode(m.key!)));
      const missing = blocks.filter((b) => !b.signatures.every((x) => have.has(x))).map((b) => String(b.slot));
      return JSON.stringify({ txs: txCount(), missing, of: expected.length, report, receiver: st.receiver, sets: st.pipeline.setsCompleted, drops: st.pipeline.drops, verifies: st.pipeline.verifies });
    };
    await waitFor(settle, 60_000, 'every good transaction').catch((e: Error) => {
      throw new Error(`${e.message}: ${show()}`);
    });

    const keys = got.map((m) => bs58.encode(m.key!));
    assert.equal(keys.length, expected.length, 'no transaction twice, none missing');
    assert.deepEqual([...keys].sort(), [...expected].sort());
    for (const m of got) assert.ok(decodeTxRecord(m.value!).ok);
    const st = ingest.stats();
    const p = st.pipeline;
    // A loaded host slows the sender too: at least half the rate, or the run proves little.
    assert.ok(report.hostileSent >= RATE * (((BLOCKS + 3) * BLOCK_EVERY_MS + TAIL_MS) / 1000) * 0.5, `the flood was sent (${report.hostileSent})`);
    assert.deepEqual(p.windowResets, { below: 0, above: 0 }, 'the flood re-anchored nothing');
    assert.equal(p.drops.internal, 0);
    assert.ok(st.receiver.dedicated >= 1, 'the feed got a socket of its own');
    assert.equal(p.setsCompleted, BLOCKS + 2, 'only the good sets completed');
    assert.equal(p.verifies.ok.good + p.verifies.ok.unproven, BLOCKS + 2, 'one verify per good set');
    // The hostile address spent at most its burst plus its refill over the flood on failed verifies.
    const floodS = report.floodMs / 1000;
    assert.ok(p.verifies.fail.unproven <= 64 + 100 * (floodS + 5), `failed verifies ${p.verifies.fail.unproven} in ${floodS.toFixed(1)} s`);
    assert.equal(p.verifies.fail.good, 0, "the feed's budget was never touched");
    assert.ok(p.drops.source_budget > 0, 'forged shreds were dropped by budget, before hashing');
    assert.ok(!lines.some((l) => /re-anchored/.test(l)), 'no reset line');
    const text = registry.render();
    assert.match(text, /^meridian_ingest_udp_kernel_drops \d+$/m);
    assert.match(text, /^meridian_ingest_sources\{class="good"\} 1$/m);
    console.log(`      flood: dedicated sockets ${st.receiver.dedicated}; ${report.hostileSent} hostile datagrams in ${floodS.toFixed(1)} s (${Math.round(report.hostileSent / floodS)}/s), ${JSON.stringify(report.byKind)}; `
      + `received ${st.receiver.received}, kernel drops ${st.receiver.kernelDrops}, shed ${st.receiver.shed}, queue drops ${st.receiver.queueDrops}; `
      + `verifies ok ${p.verifies.ok.good + p.verifies.ok.unproven} fail ${p.verifies.fail.unproven}, saved ${JSON.stringify(p.verifyCache)}, budget drops ${p.drops.source_budget}`);
  });
});
