import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import bs58 from 'bs58';
import { Connection, Keypair, LAMPORTS_PER_SOL, SystemProgram, Transaction } from '@solana/web3.js';
import type { BusMessage, Consumer } from '../../../bus/bus';
import { KafkaBus } from '../../../bus/kafka';
import { rentalsFromList } from '../../../bus/rental-registry';
import { decodeTraceEvent, type TraceEvent } from '../../../bus/topics/submit-traces';
import { parseSubmitConfig } from '../../../gateways/submit/config';
import { QuicListener } from '../../../gateways/submit/quic/listener';
import { parseQuicConfig } from '../../../gateways/submit/quic/config';
import { QuicMetrics } from '../../../gateways/submit/quic/metrics';
import { ensureTerminatorBinary, PROBE_BIN, TERMINATOR_BIN } from '../../../gateways/submit/quic/terminator-build';
import { startSubmit, type SubmitService } from '../../../gateways/submit/service';
import type { TraceView } from '../../../gateways/submit/trace';
import type { KeySummary } from '../../../gateways/submit/key-summary';
import { startLocalChain, type LocalChain } from '../../../infra/local/chain';
import { Registry } from '../../../infra/base/metrics';
import { parseIngestConfig } from '../../../ingest/config';
import { startIngest, type RunningIngest } from '../../../ingest/worker';
import { kafkaBrokers } from '../../support/kafka';
import { quietLog } from '../../support/log-capture';
import { waitFor } from '../../support/wait';
import { hex, Probe } from '../quic/probe';
import { legacyTx, MIN_TIP, rental, TIP_ACCOUNTS } from './support';

// Traces end to end on a real Kafka broker (own topic names): the local chain node shreds its blocks to ingest,
// ingest publishes stream.transactions / stream.slots on Kafka, the submission service forwards to the node,
// reads first-seen from the stream, polls statuses from the node and produces submit.traces on Kafka.

describe('submit traces on the local chain and Kafka', function () {
  this.timeout(180_000);
  const suffix = `${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const topics = { transactions: `tr-tx-${suffix}`, slots: `tr-slots-${suffix}`, traces: `tr-traces-${suffix}` };
  const { log, lines } = quietLog('debug');
  const mine = rental();
  const other = rental();
  const key = mine.apiKeys[0]!;
  let bus: KafkaBus;
  let ingest: RunningIngest;
  let chain: LocalChain;
  let service: SubmitService;
  let deadPort: number;
  let conn: Connection;
  let faucet: Keypair;
  let reader: Consumer;
  const events: TraceEvent[] = [];
  const undecodable: string[] = [];
  let base: string;
  const reg = new Registry();

  before(async () => {
    bus = new KafkaBus({ brokers: await kafkaBrokers(), clientId: 'meridian-trace-test', log });
    await bus.createTopics([
      { name: topics.transactions, partitions: 1, compacted: false },
      { name: topics.slots, partitions: 1, compacted: false },
      { name: topics.traces, partitions: 3, compacted: false },
    ]);
    ingest = await startIngest(parseIngestConfig({ listen: '127.0.0.1:0', shredVersion: 'any', leader: { mode: 'off' } }), bus, log, { registry: new Registry(), topics: { transactions: topics.transactions, slots: topics.slots } });
    // 100 ms slots: a blockhash ages out after 150 blocks = 15 s, so the expiry test waits for a real one.
    chain = await startLocalChain({ port: 0, shredTo: `${ingest.address.host}:${ingest.address.port}`, slotMs: 100, log });
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    deadPort = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const cfg = parseSubmitConfig({
      enabled: true,
      listen: '127.0.0.1:0',
      udp: { listen: '127.0.0.1:0' },
      tips: { accounts: TIP_ACCOUNTS.map((k) => k.toBase58()), minLamports: MIN_TIP },
      // rpc-0: the node; rpc-1: nothing listening (every attempt fails).
      forwardUrls: [chain.httpUrl, `http://127.0.0.1:${deadPort}/`],
      topics,
      traces: { pollIntervalMs: 100, expiryCheckAfterMs: 0, blockhashRecheckMs: 500, statusUrl: chain.httpUrl },
    });
    service = await startSubmit(cfg, { bus, rentals: rentalsFromList([mine, other]), log, registry: reg });
    base = `http://127.0.0.1:${service.http.port}`;
    conn = new Connection(chain.httpUrl, 'processed');
    faucet = Keypair.fromSecretKey(chain.payer);
    reader = await bus.consume({
      topics: [topics.traces],
      from: 'beginning',
      onBatch: (ms: BusMessage[]) => {
        for (const m of ms) {
          const d = decodeTraceEvent(m.value!);
          // Recorded, not asserted here (a throw would stop the reader): every test checks what arrived.
          if (!d.ok) undecodable.push(`${d.reason}: ${m.value!.toString('utf8')}`);
          else if (m.key?.toString('utf8') !== d.event.signature) undecodable.push(`key is not the signature: ${d.event.id}`);
          else events.push(d.event);
        }
      },
    });
    await reader.ready;
    // The slot at acceptance comes from stream.slots through the delivery feed: a fence, so the first transaction
    // is not accepted before the feed has seen a slot (the chain has been producing them since it started).
    await waitFor(() => service.tracing?.store.currentSlot !== null, 20_000, 'the submission service to know the current slot');
  });
  after(async () => {
    await reader?.close();
    await service?.close();
    await chain?.close();
    await ingest?.close();
    await bus?.close();
  });

  const blockhash = async (): Promise<string> => (await conn.getLatestBlockhash('processed')).blockhash;
  const sig58 = (tx: Buffer): string => bs58.encode(tx.subarray(1, 65));

  async function funded(lamports = LAMPORTS_PER_SOL): Promise<Keypair> {
    const kp = Keypair.generate();
    const t = new Transaction({ feePayer: faucet.publicKey, recentBlockhash: await blockhash() }).add(SystemProgram.transfer({ fromPubkey: faucet.publicKey, toPubkey: kp.publicKey, lamports }));
    t.sign(faucet);
    const sig = await conn.sendRawTransaction(t.serialize(), { skipPreflight: true });
    await waitFor(async () => (await conn.getSignatureStatuses([sig])).value[0] !== null, 20_000, 'funding transfer', 100);
    return kp;
  }

  async function getTrace(sig: string, k = key): Promise<{ status: number; body: { trace?: TraceView; summary?: KeySummary } | string }> {
    const res = await fetch(`${base}/trace/${sig}?api-key=${k}`);
    const text = await res.text();
    return { status: res.status, body: res.status === 200 ? (JSON.parse(text) as { trace: TraceView; summary: KeySummary }) : text };
  }

  async function settledTrace(sig: string, what: string): Promise<TraceView> {
    let t: TraceView | undefined;
    await waitFor(async () => {
      const r = await getTrace(sig);
      t = typeof r.body === 'string' ? undefined : r.body.trace;
      // The node's status may come before the shreds reach the stream: a landed trace is waited for until seen too.
      return t !== undefined && t.state !== 'pending' && t.forwards.length >= 2 && (t.state === 'expired' || (t.landed?.commitment === 'finalized' && t.seen !== null));
    }, 60_000, what, 100);
    return t!;
  }

  /** The events of one signature on Kafka, once they include `steps`, deduplicated by id. */
  async function eventsOf(sig: string, steps: string[]): Promise<TraceEvent[]> {
    let got: TraceEvent[] = [];
    await waitFor(() => {
      const byId = new Map(events.filter((e) => e.signature === sig).map((e) => [e.id, e]));
      got = [...byId.values()].sort((a, b) => Number(a.id.split(':')[1]) - Number(b.id.split(':')[1]));
      assert.deepEqual(undecodable, [], 'every event on the topic decodes, keyed by its signature');
      return steps.every((s) => got.some((e) => e.step === s));
    }, 30_000, `${steps.join(', ')} on ${topics.traces}`, 100);
    return got;
  }

  function checkLanded(t: TraceView, transport: string): void {
    assert.equal(t.accepted.transport, transport);
    assert.equal(typeof t.accepted.slot, 'number', 'the slot at acceptance is known (stream.slots)');
    const byRoute = new Map(t.forwards.map((f) => [f.route, f]));
    assert.equal(byRoute.get('rpc-0')?.outcome, 'ok');
    assert.equal(byRoute.get('rpc-1')?.outcome, 'error', 'the failing route shows its failure');
    assert.ok(t.forwards.every((f) => !JSON.stringify(f).includes('http')), 'no route URL in the trace');
    assert.ok(t.seen !== null, 'seen in shreds');
    assert.ok(t.landed !== null);
    assert.equal(t.landed.status, 'ok');
    assert.equal(t.landed.err, null);
    assert.equal(t.landed.slotDelta, t.landed.slot - t.accepted.slot!);
    assert.ok(t.landed.slotDelta! >= 0, `slot delta ${t.landed.slotDelta}`);
    assert.equal(t.seen.slot, t.landed.slot, 'seen in the shreds of the slot it landed in');
    assert.ok(t.seen.sinceAcceptedMs >= 0 && t.landed.sinceAcceptedMs >= 0);
  }

  async function checkEvents(sig: string, t: TraceView, transport: string): Promise<void> {
    const evs = await eventsOf(sig, ['accepted', 'forward', 'seen', 'landed']);
    const acc = evs.find((e) => e.step === 'accepted')!;
    assert.deepEqual([acc.transport, acc.rental, acc.slot, acc.resend], [transport, mine.id, t.accepted.slot, 0]);
    assert.deepEqual(evs.filter((e) => e.step === 'forward').map((e) => `${e.route}:${e.outcome}`).sort(), ['rpc-0:ok', 'rpc-1:error']);
    const seen = evs.find((e) => e.step === 'seen')!;
    assert.deepEqual([seen.slot, seen.slotDelta], [t.seen!.slot, t.seen!.slotDelta]);
    const landed = evs.filter((e) => e.step === 'landed');
    assert.deepEqual([landed[0]!.slot, landed[0]!.slotDelta, landed[0]!.status], [t.landed!.slot, t.landed!.slotDelta, 'ok']);
    assert.equal(landed[landed.length - 1]!.commitment, t.landed!.commitment);
    assert.equal(new Set(evs.map((e) => e.id)).size, evs.length);
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
        return sig58(tx); // UDP answers nothing: the trace is how the sender learns what happened
      },
    ],
  ];

  for (const [transport, send] of transports) {
    it(`${transport}: accepted → forwarded (one route failing) → seen in shreds → landed, with a slot delta, the same on ${'submit.traces'}`, async () => {
      const payer = await funded();
      const tx = legacyTx({ payer, blockhash: await blockhash() });
      assert.equal(await send(tx), sig58(tx), 'the client got its signature although a route fails');
      const t = await settledTrace(sig58(tx), `the ${transport} trace to land`);
      checkLanded(t, transport);
      await checkEvents(sig58(tx), t, transport);
    });
  }

  it('quic: the same steps', async function () {
    this.timeout(30 * 60_000);
    await ensureTerminatorBinary(TERMINATOR_BIN);
    await ensureTerminatorBinary(PROBE_BIN);
    const quic = await QuicListener.start({ config: parseQuicConfig({ listen: '127.0.0.1:0' }), pipeline: service.pipeline, log, metrics: new QuicMetrics(new Registry()) });
    const probe = await Probe.start();
    try {
      const payer = await funded();
      const tx = legacyTx({ payer, blockhash: await blockhash() });
      await probe.ok(`sdk connect 127.0.0.1:${quic.address.port} ${key}`);
      assert.equal(await probe.ok(`sdk send ${hex(tx)}`), 'sent');
      const t = await settledTrace(sig58(tx), 'the quic trace to land');
      checkLanded(t, 'quic');
      await checkEvents(sig58(tx), t, 'quic');
    } finally {
      await probe.close();
      await quic.close();
    }
  });

  it('a transaction that fails on chain lands with its error', async () => {
    const payer = await funded(LAMPORTS_PER_SOL / 10);
    const tx = legacyTx({ payer, blockhash: await blockhash(), amount: 50 * LAMPORTS_PER_SOL });
    assert.equal((await (await fetch(`${base}/binary?api-key=${key}`, { method: 'POST', body: tx })).text()), sig58(tx));
    const t = await settledTrace(sig58(tx), 'the failing transaction to land');
    assert.equal(t.state, 'failed');
    assert.equal(t.landed!.status, 'failed');
    assert.deepEqual(t.landed!.err, { InstructionError: [0, { Custom: 1 }] });
    const evs = await eventsOf(sig58(tx), ['landed']);
    assert.deepEqual(evs.find((e) => e.step === 'landed')!.err, { InstructionError: [0, { Custom: 1 }] });
  });

  it('a transaction whose blockhash has aged out is traced as expired', async () => {
    const payer = await funded();
    const old = await blockhash();
    await waitFor(async () => !(await conn.isBlockhashValid(old, { commitment: 'confirmed' })).value, 60_000, 'the blockhash to age out', 500);
    const tx = legacyTx({ payer, blockhash: old });
    assert.equal((await (await fetch(`${base}/binary?api-key=${key}`, { method: 'POST', body: tx })).text()), sig58(tx));
    const t = await settledTrace(sig58(tx), 'the expiry');
    assert.equal(t.state, 'expired');
    assert.equal(t.expired!.blockhash, old);
    assert.equal(t.landed, null);
    const evs = await eventsOf(sig58(tx), ['accepted', 'expired']);
    assert.equal(evs.find((e) => e.step === 'expired')!.blockhash, old);
    assert.equal((await conn.getSignatureStatuses([sig58(tx)])).value[0], null, 'the chain agrees: it never landed');
  });

  it("GET /trace: another key gets the same 404 as for a signature that does not exist; the key's summary", async () => {
    const payer = await funded();
    const tx = legacyTx({ payer, blockhash: await blockhash() });
    await fetch(`${base}/binary?api-key=${key}`, { method: 'POST', body: tx });
    await settledTrace(sig58(tx), 'the trace');
    const theirs = await getTrace(sig58(tx), other.apiKeys[0]!);
    const nothing = await getTrace(bs58.encode(Buffer.alloc(64, 9)));
    const noKey = await fetch(`${base}/trace/${sig58(tx)}`);
    assert.deepEqual([theirs.status, theirs.body], [404, 'not found']);
    assert.deepEqual([nothing.status, nothing.body], [404, 'not found']);
    assert.deepEqual([noKey.status, await noKey.text()], [404, 'not found']);
    assert.equal((await fetch(`${base}/trace/${sig58(tx)}?api-key=${key}`, { method: 'POST' })).status, 405);

    const s = (await (await fetch(`${base}/trace?api-key=${key}`)).json()) as { summary: KeySummary };
    assert.ok(s.summary.landed >= 1);
    assert.ok(s.summary.landingRate !== null && s.summary.landingRate > 0 && s.summary.landingRate <= 1);
    assert.equal(s.summary.landingRate, s.summary.landed / (s.summary.landed + s.summary.expired));
    assert.ok(s.summary.slotDelta !== null && s.summary.slotDelta.p50 <= s.summary.slotDelta.p99);
    const none = (await (await fetch(`${base}/trace?api-key=${other.apiKeys[0]}`)).json()) as { summary: KeySummary };
    assert.deepEqual([none.summary.settled, none.summary.landingRate], [0, null]);

    const text = reg.render();
    assert.match(text, /meridian_submit_route_landed_total\{route="rpc-0"\} [1-9]/);
    assert.match(text, /meridian_submit_route_errors_total\{route="rpc-1"\} [1-9]/);
    assert.match(text, /meridian_submit_route_landed_total\{route="rpc-1"\} 0/);
    assert.match(text, /meridian_submit_trace_seen_ms_count [1-9]/);
    // The lines a URL would leak into must be there: the failing route's warning (rpc-1 fails on every transaction).
    const failure = lines.find((l) => l.includes('forward to upstream failed'));
    assert.ok(failure !== undefined && failure.includes('"route":"rpc-1"'), `the failing route is in the log (${lines.length} lines)`);
    assert.ok(!lines.some((l) => l.includes(chain.httpUrl) || l.includes(`:${deadPort}`) || l.includes(key)), 'no URL or key in the logs');
  });
});
