import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { Connection, Keypair, LAMPORTS_PER_SOL, SystemProgram, Transaction } from '@solana/web3.js';
import { KafkaBus } from '../../../bus/kafka';
import { rentalsFromList } from '../../../bus/rental-registry';
import { parseSubmitConfig } from '../../../gateways/submit/config';
import { QuicListener } from '../../../gateways/submit/quic/listener';
import { parseQuicConfig } from '../../../gateways/submit/quic/config';
import { QuicMetrics } from '../../../gateways/submit/quic/metrics';
import { ensureTerminatorBinary, PROBE_BIN, TERMINATOR_BIN } from '../../../gateways/submit/quic/terminator-build';
import { startSubmit, type SubmitService } from '../../../gateways/submit/service';
import type { TraceView } from '../../../gateways/submit/trace';
import { ensureTpuBinary, LEADER_BIN, SENDER_BIN } from '../../../gateways/submit/tpu/sender-build';
import { Registry } from '../../../infra/base/metrics';
import { parseIngestConfig } from '../../../ingest/config';
import { startIngest, type RunningIngest } from '../../../ingest/worker';
import { kafkaBrokers } from '../../support/kafka';
import { quietLog } from '../../support/log-capture';
import { waitFor } from '../../support/wait';
import { hex, Probe } from '../quic/probe';
import { legacyTx, MIN_TIP, rental, TIP_ACCOUNTS } from './support';
import { sigOf, startTpuCluster, type TpuCluster } from './tpu-cluster';

// The `tpu` route on the local multi-leader cluster: 4 real TPU servers (Agave's solana-streamer QUIC server,
// each on its own loopback address with its own identity) leading in turn every 4 slots of the local chain,
// whose getSlotLeaders / getClusterNodes name them; the submission service with only the `tpu` route sends
// through Agave's client (solana-tpu-client-next) in the sender process. The slot estimate comes from ingest's
// stream.slots on a real Kafka broker (and the node's slot notifications). Only what reaches the right leader's
// TPU lands: the servers hand their packets to the chain, which executes them in that leader's slots.

const SLOT_MS = 100;

describe('submit tpu route on a local multi-leader cluster', function () {
  // The first run builds the Agave crates (several minutes on 2 cores); later runs take seconds.
  this.timeout(30 * 60_000);
  const suffix = `${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const topics = { transactions: `tpu-tx-${suffix}`, slots: `tpu-slots-${suffix}`, traces: `tpu-traces-${suffix}` };
  const { log } = quietLog('debug');
  const mine = rental();
  const key = mine.apiKeys[0]!;
  let bus: KafkaBus;
  let ingest: RunningIngest;
  let cluster: TpuCluster;
  let service: SubmitService;
  let conn: Connection;
  let faucet: Keypair;
  let base: string;
  const reg = new Registry();

  before(async () => {
    await ensureTpuBinary(SENDER_BIN);
    await ensureTpuBinary(LEADER_BIN);
    bus = new KafkaBus({ brokers: await kafkaBrokers(), clientId: 'meridian-tpu-test', log });
    await bus.createTopics([
      { name: topics.transactions, partitions: 1, compacted: false },
      { name: topics.slots, partitions: 1, compacted: false },
      { name: topics.traces, partitions: 1, compacted: false },
    ]);
    ingest = await startIngest(parseIngestConfig({ listen: '127.0.0.1:0', shredVersion: 'any', leader: { mode: 'off' } }), bus, log, { registry: new Registry(), topics: { transactions: topics.transactions, slots: topics.slots } });
    // One leader of the schedule has no tpuQuic at all (a node that never advertised one).
    cluster = await startTpuCluster({ leaders: 4, badContacts: [null], port: 0, slotMs: SLOT_MS, shredTo: `${ingest.address.host}:${ingest.address.port}`, log });
    const cfg = parseSubmitConfig({
      enabled: true,
      listen: '127.0.0.1:0',
      udp: { listen: '127.0.0.1:0' },
      tips: { accounts: TIP_ACCOUNTS.map((k) => k.toBase58()), minLamports: MIN_TIP },
      forwardUrls: [cluster.chain.httpUrl],
      routes: ['tpu'],
      tpu: { statsIntervalMs: 100 },
      topics,
      traces: { pollIntervalMs: 100, statusUrl: cluster.chain.httpUrl },
    });
    service = await startSubmit(cfg, { bus, rentals: rentalsFromList([mine]), log, registry: reg });
    base = `http://127.0.0.1:${service.http.port}`;
    conn = new Connection(cluster.chain.httpUrl, 'processed');
    faucet = Keypair.fromSecretKey(cluster.chain.payer);
    await waitFor(() => service.tpu!.targets() !== null, 20_000, 'the tpu route to know the slot and the schedule');
    // Traces take the slot at acceptance from stream.slots: known before the first transaction.
    await waitFor(() => service.tracing?.store.currentSlot !== null, 20_000, 'the trace store to know the current slot');
  });

  it("the route's slot estimate follows the chain's working slot", async () => {
    // Over 20 slots, the estimate (stream.slots and the node's notifications, the highest) is never a window behind.
    const end = cluster.chain.slot() + 20;
    let worst = 0;
    await waitFor(() => {
      worst = Math.max(worst, cluster.chain.slot() - service.tpu!.tracker.schedule.currentSlot()!);
      return cluster.chain.slot() >= end;
    }, 20_000, '20 slots', 5);
    assert.ok(worst < 4, `estimate at most ${worst} slots behind`);
  });
  after(async () => {
    await service?.close();
    await cluster?.close();
    await ingest?.close();
    await bus?.close();
  });

  const blockhash = async (): Promise<string> => (await conn.getLatestBlockhash('processed')).blockhash;

  /** A funded payer (the funding transfer goes through the node's own sendTransaction, not the route). */
  async function funded(lamports = LAMPORTS_PER_SOL): Promise<Keypair> {
    const kp = Keypair.generate();
    const t = new Transaction({ feePayer: faucet.publicKey, recentBlockhash: await blockhash() }).add(SystemProgram.transfer({ fromPubkey: faucet.publicKey, toPubkey: kp.publicKey, lamports }));
    t.sign(faucet);
    const sig = await conn.sendRawTransaction(t.serialize(), { skipPreflight: true });
    await waitFor(async () => (await conn.getSignatureStatuses([sig])).value[0] !== null, 20_000, 'funding transfer', 50);
    return kp;
  }

  async function trace(sig: string): Promise<TraceView | undefined> {
    const res = await fetch(`${base}/trace/${sig}?api-key=${key}`);
    return res.status === 200 ? ((await res.json()) as { trace: TraceView }).trace : undefined;
  }

  async function landedTrace(sig: string, what: string): Promise<TraceView> {
    let t: TraceView | undefined;
    try {
      await waitFor(async () => {
        t = await trace(sig);
        return t !== undefined && t.landed !== null && t.forwards.length >= 1;
      }, 30_000, what, 50);
    } catch (e) {
      const windows = t?.accepted.slot == null ? [] : [0, 4, 8].map((d) => cluster.chain.leaderAt(t!.accepted.slot! + d));
      throw new Error(`${(e as Error).message}; trace ${JSON.stringify(t)}; arrivals ${JSON.stringify(cluster.arrivals.get(sig))}; leaders near acceptance ${JSON.stringify(windows)}; chain tpu ${JSON.stringify(cluster.chain.tpuCounts())}`);
    }
    return t!;
  }

  const metric = (name: string, labels: Record<string, string>): number => {
    const line = reg.render().split('\n').find((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
    return line === undefined ? 0 : Number(line.split(' ').pop());
  };

  /** The identities of the schedule's leaders for the window of `slot` and the next (the default send fanout 2). */
  function windowLeaders(slot: number): string[] {
    const first = slot - (slot % 4);
    return [...new Set([cluster.chain.leaderAt(slot), cluster.chain.leaderAt(first + 4)])];
  }

  const transports: Array<[string, (tx: Buffer) => Promise<string>]> = [
    ['binary', async (tx) => (await fetch(`${base}/binary?api-key=${key}`, { method: 'POST', body: tx })).text()],
    ['plaintext', async (tx) => (await fetch(`${base}/plaintext?api-key=${key}`, { method: 'POST', body: tx.toString('base64') })).text()],
    [
      'jsonrpc',
      async (tx) => {
        const r = await fetch(`${base}/?api-key=${key}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [tx.toString('base64'), { encoding: 'base64' }] }) });
        return ((await r.json()) as { result: string }).result;
      },
    ],
    [
      'udp',
      async (tx) => {
        const s = dgram.createSocket('udp4');
        await new Promise<void>((r) => s.send(Buffer.concat([Buffer.from(key, 'ascii'), tx]), service.udp!.port, '127.0.0.1', () => r()));
        s.close();
        return sigOf(tx);
      },
    ],
  ];

  /** Asserts a landed transaction went to the right leaders' TPU, one packet each, and its trace names them. */
  function checkDelivered(tx: Buffer, t: TraceView): void {
    const sig = sigOf(tx);
    const fw = t.forwards.filter((f) => f.route === 'tpu');
    assert.equal(fw.length, t.accepted.submissions, `one forward step on the tpu route per submission: ${JSON.stringify(t)}`);
    assert.equal(fw[0]!.outcome, 'ok');
    const named = fw[0]!.leaders!;
    assert.ok(named.length >= 1 && named.length <= 2, `send fanout 2: ${named.length} leaders`);
    assert.ok(t.accepted.slot !== null);
    // The route picks at dispatch, from its own slot estimate: no earlier than the slot at acceptance (both come
    // from stream.slots; the route also takes the node's notifications) and no later than the landing slot.
    const allowed = new Set<string>();
    for (let slot = t.accepted.slot!; slot <= t.landed!.slot; slot++) for (const l of windowLeaders(slot)) allowed.add(l);
    for (const l of named) assert.ok(allowed.has(l), `leader ${l} leads between slot ${t.accepted.slot} and ${t.landed!.slot}`);
    const arrivals = cluster.arrivals.get(sig) ?? [];
    for (const l of named) {
      const server = cluster.servers.find((s) => s.identity === l);
      if (server === undefined) continue; // the leader without a TPU address is never named (checked below)
      assert.ok(server.packets.some((p) => p.equals(tx)), `leader ${l}'s TPU received the exact bytes`);
    }
    assert.ok(arrivals.every((a) => named.includes(a.leader)), 'no leader that was not named received it');
    assert.equal(new Set(arrivals.map((a) => a.leader)).size, arrivals.length, 'one packet per leader (one stream per transaction)');
    assert.ok(cluster.servers.some((s) => s.identity === cluster.chain.leaderAt(t.landed!.slot)), 'landed in the slot of a leader with a TPU');
    assert.ok(named.includes(cluster.chain.leaderAt(t.landed!.slot)), 'landed in a named leader\'s slot');
  }

  for (const [transport, send] of transports) {
    it(`${transport}: accepted with only the tpu route → sent to the next leaders' TPU over QUIC → lands; the trace names the leaders`, async () => {
      const payer = await funded();
      const tx = legacyTx({ payer, blockhash: await blockhash() });
      assert.equal(await send(tx), sigOf(tx));
      const t = await landedTrace(sigOf(tx), `the ${transport} transaction to land`);
      checkDelivered(tx, t);
    });
  }

  it('quic: the same', async () => {
    await ensureTerminatorBinary(TERMINATOR_BIN);
    await ensureTerminatorBinary(PROBE_BIN);
    const quic = await QuicListener.start({ config: parseQuicConfig({ listen: '127.0.0.1:0' }), pipeline: service.pipeline, log, metrics: new QuicMetrics(new Registry()) });
    const probe = await Probe.start();
    try {
      const payer = await funded();
      const tx = legacyTx({ payer, blockhash: await blockhash() });
      await probe.ok(`sdk connect 127.0.0.1:${quic.address.port} ${key}`);
      assert.equal(await probe.ok(`sdk send ${hex(tx)}`), 'sent');
      checkDelivered(tx, await landedTrace(sigOf(tx), 'the quic transaction to land'));
    } finally {
      await probe.close();
      await quic.close();
    }
  });

  it('keeps landing across leader changes (a new leader every 4 slots)', async () => {
    const payer = await funded(10 * LAMPORTS_PER_SOL);
    const txs: Buffer[] = [];
    const startSlot = cluster.chain.slot();
    // One transaction every ~2 slots over 10 windows: every leader leads at least twice meanwhile.
    while (cluster.chain.slot() < startSlot + 40) {
      const tx = legacyTx({ payer, blockhash: await blockhash() });
      txs.push(tx);
      assert.equal(await transports[0]![1](tx), sigOf(tx));
      const s = cluster.chain.slot();
      await waitFor(() => cluster.chain.slot() >= s + 2, 5_000, 'two slots');
    }
    const traces: TraceView[] = [];
    for (const tx of txs) traces.push(await landedTrace(sigOf(tx), 'every transaction to land'));
    traces.forEach((t, i) => checkDelivered(txs[i]!, t));
    const leadersLanded = new Set(traces.map((t) => cluster.chain.leaderAt(t.landed!.slot)));
    assert.equal(leadersLanded.size, 4, `landed in the slots of all 4 leaders with a TPU (got ${leadersLanded.size})`);
    // The leader without a tpuQuic had windows in that span: skipped there (and counted), never a stall.
    assert.ok(Number(/meridian_submit_tpu_leaders_without_address_total (\d+)/.exec(reg.render())![1]) > 0, 'windows of the leader without an address were skipped and counted');
  });

  it('a leader whose TPU is down is skipped and counted while the others land the traffic', async () => {
    const down = cluster.servers[1]!;
    await down.stop();
    const payer = await funded(10 * LAMPORTS_PER_SOL);
    const before = metric('meridian_submit_tpu_dispatch_total', { leader: down.identity, result: 'gone' }) + metric('meridian_submit_tpu_leader_errors_total', { leader: down.identity, kind: 'connect_error' }) + metric('meridian_submit_tpu_leader_errors_total', { leader: down.identity, kind: 'connection_timed_out' });
    // Send while the stopped leader is in the send windows (its window or the one before), until several did.
    const sent: Buffer[] = [];
    await waitFor(async () => {
      const slot = cluster.chain.slot();
      if (windowLeaders(slot).includes(down.identity)) {
        const tx = legacyTx({ payer, blockhash: await blockhash() });
        sent.push(tx);
        assert.equal(await transports[0]![1](tx), sigOf(tx));
      }
      return sent.length >= 6;
    }, 30_000, 'six transactions sent while the stopped leader was due', 40);
    let landed = 0;
    for (const tx of sent) {
      const t = await trace(sigOf(tx));
      assert.ok(t !== undefined);
      // The other window's leader gets each one; those it gets in time land.
      await waitFor(async () => (await trace(sigOf(tx)))?.landed !== null || (cluster.arrivals.get(sigOf(tx)) ?? []).length > 0, 10_000, 'a live leader to receive it');
    }
    for (const tx of sent) {
      const st = (await conn.getSignatureStatuses([sigOf(tx)])).value[0];
      if (st !== null) landed++;
      assert.ok(!(cluster.arrivals.get(sigOf(tx)) ?? []).some((a) => a.leader === down.identity), 'nothing reached the stopped server');
    }
    await waitFor(async () => {
      let n = 0;
      for (const tx of sent) if ((await conn.getSignatureStatuses([sigOf(tx)])).value[0] !== null) n++;
      landed = n;
      return n >= sent.length - 1;
    }, 20_000, 'the transactions to land through the live leaders', 100);
    assert.ok(landed >= sent.length - 1, `${landed}/${sent.length} landed`);
    await waitFor(() => {
      const after = metric('meridian_submit_tpu_dispatch_total', { leader: down.identity, result: 'gone' }) + metric('meridian_submit_tpu_leader_errors_total', { leader: down.identity, kind: 'connect_error' }) + metric('meridian_submit_tpu_leader_errors_total', { leader: down.identity, kind: 'connection_timed_out' });
      return after > before;
    }, 15_000, 'the stopped leader to be counted (connection errors or a gone worker)', 50);
  });
});

describe('submit tpu route with unusable contact info', function () {
  this.timeout(30 * 60_000);
  const { log } = quietLog('debug');
  const mine = rental();
  const key = mine.apiKeys[0]!;
  let cluster: TpuCluster;
  let service: SubmitService;
  const reg = new Registry();
  let bus: KafkaBus;
  const suffix = `${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const topics = { transactions: `tpub-tx-${suffix}`, slots: `tpub-slots-${suffix}`, traces: `tpub-traces-${suffix}` };

  before(async () => {
    bus = new KafkaBus({ brokers: await kafkaBrokers(), clientId: 'meridian-tpu-test-bad', log });
    await bus.createTopics(Object.values(topics).map((name) => ({ name, partitions: 1, compacted: false })));
    // One real TPU server, then four leaders whose contact info is garbage or missing. The chain's own
    // sendTransaction forwards to the current and next windows' leaders (only what reaches a TPU lands), so the
    // route sends to the current window only (sendFanout 1) and the test sends while the garbage leader just
    // before the real one leads: the route has no usable address, the chain's hop reaches the next, real leader.
    cluster = await startTpuCluster({ leaders: 1, badContacts: ['not an address', null, '300.1.2.3:8009', '127.0.0.1:0'], port: 0, slotMs: SLOT_MS, log });
    const cfg = parseSubmitConfig({
      enabled: true,
      listen: '127.0.0.1:0',
      udp: { enabled: false },
      tips: { accounts: TIP_ACCOUNTS.map((k) => k.toBase58()), minLamports: MIN_TIP },
      forwardUrls: [cluster.chain.httpUrl],
      routes: ['rpc', 'tpu'],
      tpu: { sendFanout: 1, connectFanout: 1 },
      topics,
      traces: { pollIntervalMs: 100, statusUrl: cluster.chain.httpUrl },
    });
    service = await startSubmit(cfg, { bus, rentals: rentalsFromList([mine]), log, registry: reg });
    await waitFor(() => service.tpu!.targets() !== null, 20_000, 'the tpu route to know the schedule');
  });
  after(async () => {
    await service?.close();
    await cluster?.close();
    await bus?.close();
  });

  it('degrades to the RPC routes with a counter', async () => {
    const conn = new Connection(cluster.chain.httpUrl, 'processed');
    const faucet = Keypair.fromSecretKey(cluster.chain.payer);
    const tx = legacyTx({ payer: faucet, blockhash: (await conn.getLatestBlockhash('processed')).blockhash });
    // The first slot of the window of the leader at '127.0.0.1:0' (the one before the real leader's).
    const garbage = cluster.chain.leaderAt(4 * 4);
    await waitFor(() => cluster.chain.slot() % 4 === 0 && cluster.chain.leaderAt(cluster.chain.slot()) === garbage, 20_000, 'the window before the real leader', 5);
    const res = await fetch(`http://127.0.0.1:${service.http.port}/binary?api-key=${key}`, { method: 'POST', body: tx });
    assert.equal(await res.text(), sigOf(tx));
    await waitFor(async () => (await conn.getSignatureStatuses([sigOf(tx)])).value[0] !== null, 20_000, 'the transaction to land through rpc-0', 50);
    const text = reg.render();
    assert.ok(Number(/meridian_submit_tpu_not_routed_total\{reason="no_address"\} (\d+)/.exec(text)![1]) >= 1, 'counted as not routed: no usable address');
    assert.ok(Number(/meridian_submit_tpu_unusable_contacts (\d+)/.exec(text)![1]) >= 4, 'the unusable contacts are counted');
    assert.ok(Number(/meridian_submit_route_skipped_total\{route="tpu"\} (\d+)/.exec(text)![1]) >= 1);
    let t: TraceView | undefined;
    await waitFor(async () => {
      const r = await fetch(`http://127.0.0.1:${service.http.port}/trace/${sigOf(tx)}?api-key=${key}`);
      t = r.status === 200 ? ((await r.json()) as { trace: TraceView }).trace : undefined;
      return t !== undefined && t.forwards.length >= 2;
    }, 10_000, 'the trace', 50);
    assert.deepEqual(t!.forwards.map((f) => `${f.route}:${f.outcome}`).sort(), ['rpc-0:ok', 'tpu:skipped']);
  });
});
