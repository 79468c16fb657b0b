import assert from 'node:assert/strict';
import { Connection, Keypair } from '@solana/web3.js';
import { KafkaBus } from '../../../bus/kafka';
import { rentalsFromList } from '../../../bus/rental-registry';
import { parseSubmitConfig } from '../../../gateways/submit/config';
import { startSubmit, type SubmitService } from '../../../gateways/submit/service';
import { ensureTpuBinary, LEADER_BIN, SENDER_BIN } from '../../../gateways/submit/tpu/sender-build';
import { Registry } from '../../../infra/base/metrics';
import { kafkaBrokers } from '../../support/kafka';
import { quietLog } from '../../support/log-capture';
import { waitFor } from '../../support/wait';
import { legacyTx, MIN_TIP, rental, TIP_ACCOUNTS } from './support';
import { sigOf, startTpuCluster, type TpuCluster } from './tpu-cluster';

// The local multi-leader chain's own forward hop: its sendTransaction executes nothing itself but forwards to the
// leaders' TPU over QUIC (Agave's client, in the sender process) with Agave's send-transaction service's
// retries, so what the `rpc` routes send lands only once it reached a leader's TPU — one hop after the `tpu`
// route. Every TPU server sits behind a UDP relay whose loss the tests set (0 or everything).
// 200 ms slots: a blockhash lives 150 of them (30 s), well past the retry test's blackout.

const SLOT_MS = 200;

describe("local multi-leader chain: sendTransaction forwards to the leaders' TPU", function () {
  this.timeout(30 * 60_000);
  const suffix = `${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const topics = { transactions: `hop-tx-${suffix}`, slots: `hop-slots-${suffix}`, traces: `hop-traces-${suffix}` };
  const { log } = quietLog('debug');
  const mine = rental();
  const key = mine.apiKeys[0]!;
  let bus: KafkaBus;
  let cluster: TpuCluster;
  let service: SubmitService;
  let conn: Connection;
  let faucet: Keypair;

  before(async () => {
    await ensureTpuBinary(SENDER_BIN);
    await ensureTpuBinary(LEADER_BIN);
    bus = new KafkaBus({ brokers: await kafkaBrokers(), clientId: 'meridian-hop-test', log });
    await bus.createTopics(Object.values(topics).map((name) => ({ name, partitions: 1, compacted: false })));
    cluster = await startTpuCluster({ leaders: 4, port: 0, slotMs: SLOT_MS, log, lossRelay: { loss: 0, seed: 36 } });
    service = await startSubmit(
      parseSubmitConfig({
        enabled: true,
        listen: '127.0.0.1:0',
        udp: { enabled: false },
        tips: { accounts: TIP_ACCOUNTS.map((k) => k.toBase58()), minLamports: MIN_TIP },
        forwardUrls: [cluster.chain.httpUrl],
        routes: ['rpc'],
        topics,
        traces: { pollIntervalMs: 100, statusUrl: cluster.chain.httpUrl },
      }),
      { bus, rentals: rentalsFromList([mine]), log, registry: new Registry() },
    );
    conn = new Connection(cluster.chain.httpUrl, 'processed');
    faucet = Keypair.fromSecretKey(cluster.chain.payer);
  });

  after(async () => {
    await service?.close();
    await cluster?.close();
    await bus?.close();
  });

  const blockhash = async (): Promise<string> => (await conn.getLatestBlockhash('processed')).blockhash;
  const status = async (sig: string): Promise<{ slot: number } | null> => (await conn.getSignatureStatuses([sig])).value[0] ?? null;

  it("a transaction on the rpc route reaches a leader's TPU through the chain's hop, and lands in that leader's slot", async () => {
    const before = cluster.chain.sendCounts();
    const tx = legacyTx({ payer: faucet, blockhash: await blockhash(), amount: 1_234_567 });
    const res = await fetch(`http://127.0.0.1:${service.http.port}/binary?api-key=${key}`, { method: 'POST', body: tx });
    assert.equal(await res.text(), sigOf(tx));
    let st: { slot: number } | null = null;
    await waitFor(async () => (st = await status(sigOf(tx))) !== null, 20_000, 'the transaction to land', 50);
    const arrivals = cluster.arrivals.get(sigOf(tx)) ?? [];
    assert.ok(arrivals.length >= 1, "a leader's TPU server received it");
    assert.ok(arrivals.some((a) => a.leader === cluster.chain.leaderAt(st!.slot)), `landed in slot ${st!.slot} of a leader whose TPU received it (arrivals ${JSON.stringify(arrivals.map((a) => a.leader))})`);
    for (const a of arrivals) assert.ok(cluster.servers[cluster.servers.findIndex((s) => s.identity === a.leader)]!.packets.some((p) => p.equals(tx)), 'the exact bytes');
    const after = cluster.chain.sendCounts();
    assert.ok(after.received > before.received && after.sent > before.sent, `the hop sent it: ${JSON.stringify(after)}`);
    assert.ok(cluster.hop.counts.queued >= 1, `handed to the QUIC client's workers: ${JSON.stringify(cluster.hop.counts)}`);
    assert.ok(cluster.relays.some((r) => r.counts.upForwarded > 0), 'over the relays (the addresses getClusterNodes names)');
  });

  it("retries as Agave's send-transaction service does: every 2 s while the node does not know it, never after it landed; maxRetries 0 = one send", async () => {
    const before = cluster.chain.sendCounts();
    cluster.setLoss(1);
    let retried: string;
    let once: string;
    try {
      const bh = await blockhash();
      retried = await conn.sendRawTransaction(legacyTx({ payer: faucet, blockhash: bh, amount: 2_000_001 }), { skipPreflight: true });
      once = await conn.sendRawTransaction(legacyTx({ payer: faucet, blockhash: bh, amount: 2_000_002 }), { skipPreflight: true, maxRetries: 0 });
      // Both sent while every datagram is lost; the node sends the first again every 2 s meanwhile.
      await waitFor(() => cluster.hop.handOvers(retried!) >= 3, 15_000, 'two retries while the path loses everything', 50);
      assert.equal(cluster.arrivals.get(retried!), undefined, 'nothing arrived while the relays lost everything');
    } finally {
      cluster.setLoss(0);
    }
    // After the path heals it lands (a retry to the leaders of the moment, or QUIC's own retransmission of an
    // earlier send: a blackout shorter than the connection's 10 s idle timeout does not lose what it carries).
    let st: { slot: number } | null = null;
    await waitFor(async () => (st = await status(retried!)) !== null, 20_000, 'the retried transaction to land after the path healed', 50);
    const sends = cluster.hop.handOvers(retried!);
    assert.ok(cluster.chain.sendCounts().retried >= before.retried + 2);
    // Three retry periods past its landing slot: not sent again (the working bank knows it).
    const until = st!.slot + 30;
    await waitFor(() => cluster.chain.slot() >= until, 20_000, '30 more slots');
    assert.equal(cluster.hop.handOvers(retried!), sends, 'no retry once it landed');
    assert.equal(cluster.hop.handOvers(once!), 1, 'maxRetries 0: sent once, never retried');
    assert.ok(cluster.chain.sendCounts().maxRetriesElapsed > before.maxRetriesElapsed, 'and left the pool for it');
  });
});
