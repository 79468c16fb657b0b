import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import bs58 from 'bs58';
import { Kafka, logLevel } from 'kafkajs';
import { KafkaBus } from '../../bus/kafka';
import { putRental } from '../../bus/rental-store';
import { TOPIC, defaultTopicSpecs } from '../../bus/topics';
import { decodeUsageEvent } from '../../bus/topics/usage-events';
import type { Rental } from '../../bus/topics/rentals';
import { encodeEntryBatch } from '../../ingest/entry/entries';
import type { Endpoints } from '../../infra/base/endpoints';
import { randomKeypair } from '../../infra/base/keypair';
import { startLocalCluster, type LocalCluster } from '../../infra/local/kafka/cluster';
import { signedTransfer } from '../../infra/local/demo/transfers';
import { startFakeNode, type FakeNode } from '../gateways/fake-node';
import { startBillingChild, totalsIn, type BillingChild } from '../infra/ops/billing/support';
import { makeTx, txRecord } from '../fanout/support';
import { seqsContiguous, V2Client } from '../fanout/v2/client';
import { readFleetGauges } from '../support/fleet-gauges';
import { onRunEnd } from '../support/global-fixtures';
import { assertTopicsAsSpecified } from '../support/cluster-topics';
import { quietLog } from '../support/log-capture';
import { StreamClient } from '../support/stream-client';
import { waitFor } from '../support/wait';
import { runCli, sendSlotBatch, type Proc } from './support';

// A deployment as several hosts on a real 3-broker KRaft cluster (replication 3, min.insync.replicas 2), under
// faults while traffic flows. Every component is its own `meridian start` process (config by file) bound to its
// own loopback address (a "host"); the brokers bind three more. On the cluster:
//   2 ingest instances fed the same shreds (redundant feeds), 3 fanouts, 2 chain gateways, 2 submission
//   instances, and the billing job (`meridian billing run`).
// Traffic: slots of 4 transactions every 100 ms to both ingests; v2 and v1 subscribers on the fanouts; a rental's
// getSlot calls round-robin over both gateways at 3× its RPS; submissions round-robin over both submission
// instances at 3× its TPS. Faults, in turn: the partition leader broker of stream.transactions stopped (SIGTERM,
// a controlled shutdown; started again later), a fanout SIGKILLed (its v2 client resumes from its cursor on another), the billing job SIGKILLed (and
// started again), one ingest's feed cut, a gateway SIGKILLed. Asserted:
//   - the project's own topic creation gave every topic the README's replication, min ISR, retention and cleanup;
//   - v2: the resumed client's transactions (its segment on the killed fanout, then the one from its cursor on
//     another) are exactly those of an uninterrupted v2 client on a surviving fanout, same cursors, same order (no
//     gap, no duplicate); every segment's seq runs 1, 2, 3, … and no stream sees a gap notice;
//   - v1 subscribers of the surviving fanouts got every signature the bus accepted (the reference's), once each;
//     every transaction sent whose slot both or one live feed carried is on the bus;
//   - billing: per method, what the job billed equals what the surviving surfaces answered (a request answered by
//     the SIGKILLed gateway may have died with it before its event left: billed ≤ answered there, and all of
//     what it answered more than 1 s before the kill);
//   - the rental's RPS units metered in any 10 s window and TPS in any 1 s window (by the usage events' times, i.e.
//     when the servers admitted them) stay within the README's bound; from 2 s after the gateway's SIGKILL, every
//     call the survivor refuses while counting itself alone (its /metrics read through the run) comes with at least
//     0.9 of the rental metered in the 10 s before it (what it metered in the 10 s window is printed);
//   - every transaction sent is on the bus (the log read directly, and the reference stream);
//   - a rental suspended on the bus is refused by every gateway and submission instance within 1 s.

const HOST = (n: number): string => `127.0.36.${n}`;
const BROKER_HOSTS = [HOST(11), HOST(12), HOST(13)];
const CLIENT_IP = HOST(101);
const SHRED_VERSION = 4242;
const SLOT_EVERY_MS = 100;
const TXS_PER_SLOT = 4;

const RPS = 20;
const WINDOW_MS = 10_000;
const BUDGET = (RPS * WINDOW_MS) / 1000;
const BOUND = 1.1;
const RETURN_MS = 2_000;
const TPS = 10;
const CONVERGE_MS = 1_000;

/** The timeline (ms after traffic starts): each fault while everything else keeps flowing. */
const T = {
  brokerKill: 6_000,
  brokerBack: 16_000,
  fanoutKill: 10_000,
  billingKill: 18_000,
  billingBack: 22_000,
  feedCut: 24_000,
  feedBack: 32_000,
  gatewayKill: 28_000,
  suspend: 34_000,
  end: 43_000,
};

interface Component {
  name: string;
  proc: Proc;
  endpoints: Endpoints;
  dir: string;
}

function rental(over: Partial<Rental> & { id: string }): Rental {
  return { region: '', status: 'active', rps: RPS, tps: TPS, pps: 0, ips: [CLIENT_IP], evmIps: [], apiKeys: [], tokens: [], dedicatedPaths: [], ...over };
}

/** `meridian start --config FILE` on its own host; resolves once its endpoints file is written. */
async function start(name: string, brokers: string[], section: Record<string, unknown>): Promise<Component> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `meridian-mh-${name}-`));
  const cfg = {
    bus: { kind: 'kafka', brokers },
    log: { format: 'json', level: process.env.MH_LOGS === undefined ? 'warn' : 'info' },
    metrics: { enabled: false },
    admin: { enabled: false },
    billing: { enabled: false },
    ingest: { enabled: false },
    fanout: { enabled: false },
    rentals: { fromBus: true },
    gateways: { rpc: { enabled: false }, evm: { enabled: false }, submit: { enabled: false } },
    ...section,
  };
  const config = path.join(dir, 'config.json');
  const file = path.join(dir, 'endpoints.json');
  fs.writeFileSync(config, JSON.stringify(cfg));
  const proc = runCli(['start', '--config', config, '--endpoints', file]);
  onRunEnd(() => void proc.child.kill('SIGKILL'));
  await waitFor(() => {
    if (proc.child.exitCode !== null) throw new Error(`${name} exited ${proc.child.exitCode}:\n${proc.stdout()}\n${proc.stderr()}`);
    return fs.existsSync(file);
  }, 120_000, `${name} endpoints file`, 50);
  return { name, proc, endpoints: JSON.parse(fs.readFileSync(file, 'utf8')) as Endpoints, dir };
}

async function sigkill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGKILL');
  await exited;
}

function call(agent: http.Agent, url: string, body: string | Buffer, contentType = 'application/json'): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': contentType } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface Answer {
  at: number;
  /** Index of the instance it went to. */
  to: number;
  ok: boolean;
  /** When the answer came (429s). */
  answeredAt?: number;
}

/** The most admitted answers in any `windowMs` window starting within [from, to − windowMs], in 100 ms steps. */
function maxWindow(log: Answer[], from: number, to: number, windowMs: number): number {
  const ok = log.filter((s) => s.ok).map((s) => s.at);
  let best = 0;
  for (let t = from; t + windowMs <= to; t += 100) best = Math.max(best, ok.filter((a) => a >= t && a < t + windowMs).length);
  return best;
}

const admittedIn = (log: Answer[], from: number, to: number, to_?: number): number => log.filter((s) => s.ok && s.at >= from && s.at < to && (to_ === undefined || s.to === to_)).length;

describe('multi-host deployment on a 3-broker Kafka cluster, under faults', function () {
  this.timeout(420_000);
  // Once per CI run: `npm test` runs it, `npm run test:node24` sets MERIDIAN_MULTI_HOST=0 (2–3 minutes of a
  // 3-broker cluster and ten processes on two cores; the second runtime adds nothing the first did not show).
  before(function () {
    if (process.env.MERIDIAN_MULTI_HOST === '0') this.skip();
  });
  let cluster: LocalCluster | undefined;
  let upstream: FakeNode | undefined;
  const components: Component[] = [];
  const billing: BillingChild[] = [];
  const streams: Array<{ cancel: () => void }> = [];
  const dirs: string[] = [];

  after(async () => {
    for (const s of streams) s.cancel();
    for (const b of billing) await sigkill(b.proc);
    for (const c of components) await c.proc.stop('SIGTERM');
    // MH_LOGS=DIR keeps every host's output there, to the last line of its stop (the failure message carries only the ingests' tails).
    const keep = process.env.MH_LOGS;
    if (keep !== undefined) {
      fs.mkdirSync(keep, { recursive: true });
      for (const c of components) fs.writeFileSync(path.join(keep, `${c.name}.log`), c.proc.stdout() + c.proc.stderr());
    }
    await upstream?.stop();
    await cluster?.destroy();
    for (const d of [...dirs, ...components.map((c) => c.dir)]) fs.rmSync(d, { recursive: true, force: true });
  });

  it('topics as the README states, v2 without gap or duplicate, v1 lossless, billing exact, limits held, rentals converged', async () => {
    const t00 = Date.now();
    cluster = await startLocalCluster({ hosts: BROKER_HOSTS, replication: 3, minInsync: 2 });
    process.stderr.write(`      [mh] cluster up in ${Date.now() - t00} ms\n`);
    const brokers = cluster.brokers;
    upstream = await startFakeNode();
    const tag = `${process.pid}`;
    const apiKey = `0c3d5e7f-1a2b-4c4d-8e9f-${tag.padStart(12, '0').slice(-12)}`;
    const tip = randomKeypair().publicKey;
    const tip58 = bs58.encode(tip);
    // Distinct transfers with a minimum tip, signed with node's ed25519 (tens of µs: the traffic loops must stay
    // far cheaper than the processes they drive on two shared cores).
    const payer = randomKeypair();
    const newTx = (): Buffer => signedTransfer(payer, crypto.randomBytes(32), 1_000n, crypto.randomBytes(32), { account: tip, lamports: 1_000_000n });
    const main = rental({ id: `mh-${tag}`, apiKeys: [apiKey] });
    const probeKey = `1d4e6f80-2b3c-4d5e-9f0a-${tag.padStart(12, '0').slice(-12)}`;
    const probe = rental({ id: `mh-probe-${tag}`, ips: [HOST(102)], apiKeys: [probeKey], rps: 1000, tps: 1000 });

    // --- topics, by the project's own creation (what `meridian start` runs with bus.createTopics on), before any
    // host starts, then seen by every broker: a fresh cluster's brokers learn a new topic's metadata at different
    // moments, and kafkajs gives up on the UNKNOWN_TOPIC_OR_PARTITION of a broker that has not yet (a start
    // racing it ended in a stack trace: see the report). The hosts then find the topics (existing: not an error).
    const { log } = quietLog('warn');
    const admin = new KafkaBus({ brokers, clientId: 'mh-admin', log });
    await admin.createTopics(defaultTopicSpecs());
    for (const b of brokers) {
      const one = new Kafka({ brokers: [b], clientId: 'mh-topics', logLevel: logLevel.NOTHING, retry: { retries: 0 } }).admin();
      await one.connect();
      await waitFor(async () => {
        const m = await one.fetchTopicMetadata({ topics: defaultTopicSpecs().map((s) => s.name) }).catch(() => null);
        return m !== null && m.topics.every((t) => t.partitions.length > 0 && t.partitions.every((x) => x.leader >= 0));
      }, 30_000, `broker ${b} to know every topic`, 100);
      await one.disconnect();
    }

    // --- hosts.
    const ingestCfg = (n: number): Record<string, unknown> => ({ ingest: { enabled: true, listen: `${HOST(n)}:0`, shredVersion: SHRED_VERSION, leader: { mode: 'off' } } });
    const ingests = [await start('ingest-a', brokers, ingestCfg(21))];
    await putRental(admin, main);
    await putRental(admin, probe);
    const fanoutCfg = (n: number): Record<string, unknown> => ({ fanout: { enabled: true, listen: `${HOST(n)}:0`, auth: { mode: 'none' } } });
    // Gateways serve /metrics: the survivor's fleet members and exchange state are read while it is judged.
    const gatewayCfg = (n: number): Record<string, unknown> => ({ metrics: { listen: `${HOST(n)}:0` }, gateways: { rpc: { enabled: true, listen: `${HOST(n)}:0`, wsListen: `${HOST(n)}:0`, upstreams: [{ http: upstream!.url, ws: upstream!.wsUrl }] }, evm: { enabled: false }, submit: { enabled: false } } });
    const submitCfg = (n: number): Record<string, unknown> => ({
      gateways: {
        rpc: { enabled: false },
        evm: { enabled: false },
        submit: { enabled: true, listen: `${HOST(n)}:0`, udp: { enabled: false }, tips: { accounts: [tip58], minLamports: 1_000_000 }, forwardUrls: [upstream!.url], traces: { enabled: false } },
      },
    });
    const rest = await Promise.all([
      start('ingest-b', brokers, ingestCfg(22)),
      start('fanout-1', brokers, fanoutCfg(31)),
      start('fanout-2', brokers, fanoutCfg(32)),
      start('fanout-3', brokers, fanoutCfg(33)),
      start('gateway-1', brokers, gatewayCfg(41)),
      start('gateway-2', brokers, gatewayCfg(42)),
      start('submit-1', brokers, submitCfg(51)),
      start('submit-2', brokers, submitCfg(52)),
    ]);
    components.push(...ingests, ...rest);
    ingests.push(rest[0]!);
    const fanouts = rest.slice(1, 4);
    const gateways = rest.slice(4, 6);
    const submits = rest.slice(6, 8);
    const billingDir = fs.mkdtempSync(path.join(os.tmpdir(), 'meridian-mh-billing-'));
    dirs.push(billingDir);
    const startBilling = (): BillingChild => {
      const b = startBillingChild({ brokers, group: `mh-billing-${tag}`, outDir: billingDir, topic: TOPIC.usageEvents });
      billing.push(b);
      onRunEnd(() => void b.proc.kill('SIGKILL'));
      return b;
    };
    let job = startBilling();
    const startedMs = Date.now() - t00;
    process.stderr.write(`      [mh] cluster and ${components.length} components up in ${startedMs} ms\n`);

    // --- the topics, as the project's own creation made them.
    await assertTopicsAsSpecified(brokers, defaultTopicSpecs());

    // --- subscribers, before any traffic: both v2 streams start live at the same (empty) point.
    const v2Victim = new V2Client(fanouts[0]!.endpoints.stream!);
    const v2Ref = new V2Client(fanouts[2]!.endpoints.stream!);
    const v1 = fanouts.map((f) => StreamClient.open(f.endpoints.stream!));
    streams.push(v2Victim, v2Ref, ...v1.map((c) => ({ cancel: () => void c.close() })));
    for (const c of [v2Victim, v2Ref]) {
      c.add('tips', [tip58]);
      c.start();
    }
    v1.forEach((c, i) => c.send({ transactions: { tips: { accountInclude: [tip58] } }, pingId: i + 1 }));
    await Promise.all(v1.map((c, i) => c.waitFor((r) => r.pingId === i + 1, 20_000)));
    await Promise.all([v2Victim, v2Ref].map((c) => c.waitUpdates((u) => u.some((x) => x.hasFilterAck()) && u.some((x) => x.hasHeartbeat() && x.getCursor_asU8().length > 0), 'ack and a heartbeat', 20_000)));

    // Ready: every gateway and submission instance answers the probe rental (a gateway answers 503 until its
    // upstream has answered a health probe).
    {
      const probeAgent = new http.Agent({ keepAlive: true, localAddress: HOST(102) });
      for (const g of gateways) await waitFor(async () => (await call(probeAgent, g.endpoints.rpc!.http, '{"jsonrpc":"2.0","id":1,"method":"getSlot"}')).status === 200, 30_000, `${g.name} ready`, 100);
      for (const x of submits) await waitFor(async () => (await call(probeAgent, `${x.endpoints.submit!.http!}/binary?api-key=${probeKey}`, newTx(), 'application/octet-stream')).status === 200, 30_000, `${x.name} ready`, 100);
      probeAgent.destroy();
    }

    // --- traffic. Each loop runs until `stopAt` and records what it saw.
    const t0 = Date.now();
    const stopAt = t0 + T.end;
    const live = (): boolean => Date.now() < stopAt;
    /** Until `ms` after the start of traffic; always yields (a loop behind its schedule must not starve the rest). */
    const at = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, t0 + ms - Date.now())));

    // Shreds: a slot of 4 transactions every 100 ms to both ingests, except to ingest B while its feed is cut.
    const ingestAddr = ingests.map((c) => c.endpoints.ingest!);
    const sent = new Map<string, { slot: number; feeds: number }>();
    const slotSentAt = new Map<number, number>();
    let feedCut = false;
    let slot = 5000;
    const shreds = (async () => {
      const leader = randomKeypair().seed;
      for (let n = 0; live(); n++) {
        const txs = Array.from({ length: TXS_PER_SLOT }, () => newTx());
        slot++;
        const feeds = feedCut ? ingestAddr.slice(0, 1) : ingestAddr;
        for (const tx of txs) sent.set(bs58.encode(tx.subarray(1, 65)), { slot, feeds: feeds.length });
        slotSentAt.set(slot, Date.now() - t0);
        const entries = encodeEntryBatch([{ numHashes: 1n, hash: Buffer.alloc(32, n & 0xff), txs }]);
        await Promise.all(feeds.map((f) => sendSlotBatch(f, slot, SHRED_VERSION, entries, leader)));
        await at((n + 1) * SLOT_EVERY_MS);
      }
    })();

    // Chain-gateway calls: 3 × RPS, round-robin; getSlot to gateway 1, getBlockHeight to gateway 2 (both 1 unit),
    // so billing tells them apart. A gateway whose connection fails leaves the rotation (a balancer's health check).
    const rpcLog: Answer[] = [];
    const rpcUnexpected: string[] = [];
    /** Calls that got no HTTP answer (a connection refused or reset): the gateway leaves the rotation. */
    const rpcFailed: { to: number; at: number; why: string }[] = [];
    let rpcUnavailable = 0;
    /** 503 -32099 answers per gateway, by send time: metered and billed at the method's weight (outcome `error`). */
    const rpcErrors: Answer[] = [];
    const rpcAgent = new http.Agent({ keepAlive: true, maxSockets: 64, localAddress: CLIENT_IP });
    const inRotation = new Set([0, 1]);
    const METHOD = ['getSlot', 'getBlockHeight'];
    const rpc = (async () => {
      const inflight = new Set<Promise<void>>();
      for (let n = 0; live(); n++) {
        const to = [...inRotation][n % inRotation.size]!;
        const sentAt = Date.now();
        const p = call(rpcAgent, gateways[to]!.endpoints.rpc!.http, JSON.stringify({ jsonrpc: '2.0', id: n, method: METHOD[to] })).then(
          (r) => {
            if (r.status === 200 && r.text.includes('"result"')) rpcLog.push({ at: sentAt, to, ok: true });
            else if (r.status === 429) rpcLog.push({ at: sentAt, to, ok: false, answeredAt: Date.now() });
            // The upstream (a fake node in this test process) missing a health probe on the loaded machine: the
            // gateway's contract answer for a node it cannot use, not a limit; counted and printed.
            else if (r.status === 503 && r.text.includes('-32099')) {
              rpcUnavailable++;
              rpcErrors.push({ at: sentAt, to, ok: true });
            }
            else rpcUnexpected.push(`${r.status} ${r.text.slice(0, 120)}`);
          },
          (e: Error & { code?: string }) => {
            rpcFailed.push({ to, at: Date.now(), why: e.code ?? e.message });
            inRotation.delete(to);
          },
        );
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
        await at(((n + 1) * 1000) / (3 * RPS));
      }
      await Promise.all(inflight);
    })();

    // Submissions: 3 × TPS, round-robin over both instances.
    const subLog: Answer[] = [];
    const subUnexpected: string[] = [];
    const subAgent = new http.Agent({ keepAlive: true, maxSockets: 64, localAddress: CLIENT_IP });
    const sub = (async () => {
      const inflight = new Set<Promise<void>>();
      for (let n = 0; live(); n++) {
        const to = n % 2;
        const sentAt = Date.now();
        const tx = newTx();
        const p = call(subAgent, `${submits[to]!.endpoints.submit!.http!}/binary?api-key=${apiKey}`, tx, 'application/octet-stream').then(
          (r) => {
            if (r.status === 200 && r.text === bs58.encode(tx.subarray(1, 65))) subLog.push({ at: sentAt, to, ok: true });
            else if (r.status === 429) subLog.push({ at: sentAt, to, ok: false });
            else subUnexpected.push(`${r.status} ${r.text.slice(0, 120)}`);
          },
          (e: Error) => void subUnexpected.push(e.message),
        );
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
        await at(((n + 1) * 1000) / (3 * TPS));
      }
      await Promise.all(inflight);
    })();

    // The survivor's view of its fleet, read from its /metrics every 100 ms: the members it counts and whether its
    // exchange is out. Held to its part of the rental (members > 1, or out) is the README's documented price of a
    // bus outage, not a limiter that forgot a dead peer; a refusal is judged against the rental's spend only when
    // the survivor counted itself alone with its exchange in, before and after it.
    const fleetView: Array<{ sentAt: number; at: number; members: number; out: number }> = [];
    const view = (async () => {
      while (live()) {
        const sentAt = Date.now();
        const g = await readFleetGauges(gateways[0]!.endpoints.metrics!);
        fleetView.push({ sentAt, at: Date.now(), ...g });
        await new Promise((r) => setTimeout(r, Math.max(0, sentAt + 100 - Date.now())));
      }
    })();

    // --- faults, in turn.
    const events: string[] = [];
    const mark = (what: string): void => {
      events.push(`${((Date.now() - t0) / 1000).toFixed(1)} s ${what}`);
      if (process.env.MH_DEBUG !== undefined) process.stderr.write(`      [mh] ${events[events.length - 1]}\n`);
    };
    let gatewayKilledAt = 0;
    let gatewayKillFrom = 0;
    let v2Resumed: V2Client | undefined;
    let victimRows: string[] = [];
    let suspendedIn: number[] = [];
    let brokerBack: Promise<void> = Promise.resolve();
    const faults = (async () => {
      await at(T.brokerKill);
      const leader = await cluster!.leaderOf(TOPIC.streamTransactions);
      const node = cluster!.nodes.find((n) => n.nodeId === leader)!;
      // Controlled shutdown (SIGTERM): leadership moves at once; the JVM's exit may take a while on a loaded machine.
      const stopped = node.stop().then(() => mark(`broker ${leader} exited`));
      mark(`stopping broker ${leader}, leader of ${TOPIC.streamTransactions}`);
      await at(T.fanoutKill);
      // The victim's last cursor before the kill; everything after it must come from the resumed stream.
      await sigkill(fanouts[0]!.proc.child);
      await v2Victim.waitStatus(10_000);
      const cursor = v2Victim.lastCursor();
      assert.ok(cursor !== undefined, 'the victim stream has a cursor');
      victimRows = rows(v2Victim);
      v2Resumed = new V2Client(fanouts[1]!.endpoints.stream!);
      streams.push(v2Resumed);
      v2Resumed.add('tips', [tip58]);
      v2Resumed.start({ cursor });
      mark(`SIGKILL fanout-1; its v2 client resumes on fanout-2 after ${victimRows.length} transactions`);
      await at(T.brokerBack);
      // In the background: a JVM start on the loaded machine can take a while, and the other faults keep time.
      brokerBack = stopped.then(() => node.start()).then(() => mark(`broker ${leader} back`));
      await at(T.billingKill);
      await sigkill(job.proc);
      mark('SIGKILL billing');
      await at(T.billingBack);
      job = startBilling();
      mark('billing restarted');
      await at(T.feedCut);
      feedCut = true;
      mark('ingest-b feed cut');
      await at(T.gatewayKill);
      gatewayKillFrom = Date.now();
      await sigkill(gateways[1]!.proc.child);
      gatewayKilledAt = Date.now();
      mark('SIGKILL gateway-2');
      await at(T.feedBack);
      feedCut = false;
      mark('ingest-b feed back');
      await at(T.suspend);
      // Rentals converge: the probe rental, answered everywhere, suspended on the bus; every live gateway and
      // submission instance refuses it within CONVERGE_MS of the write's acknowledgement.
      const probeAgent = new http.Agent({ keepAlive: true, localAddress: HOST(102) });
      const liveGw = [gateways[0]!];
      for (const g of liveGw) assert.equal((await call(probeAgent, g.endpoints.rpc!.http, '{"jsonrpc":"2.0","id":1,"method":"getSlot"}')).status, 200);
      for (const s of submits) assert.equal((await call(probeAgent, `${s.endpoints.submit!.http!}/binary?api-key=${probeKey}`, newTx(), 'application/octet-stream')).status, 200);
      await putRental(admin, { ...probe, status: 'suspended' });
      const putAt = Date.now();
      suspendedIn = await Promise.all([
        ...liveGw.map(async (g) => {
          await waitFor(async () => (await call(probeAgent, g.endpoints.rpc!.http, '{"jsonrpc":"2.0","id":1,"method":"getSlot"}')).status !== 200, 10_000, 'gateway refuses the suspended rental', 20);
          return Date.now() - putAt;
        }),
        ...submits.map(async (s) => {
          await waitFor(async () => (await call(probeAgent, `${s.endpoints.submit!.http!}/binary?api-key=${probeKey}`, newTx(), 'application/octet-stream')).status !== 200, 10_000, 'submission refuses the suspended rental', 20);
          return Date.now() - putAt;
        }),
      ]);
      probeAgent.destroy();
      mark(`probe rental suspended: refused after ${suspendedIn.join(', ')} ms`);
    })();
    await Promise.all([shreds, rpc, sub, faults, view]);
    const t1 = Date.now();
    await brokerBack;
    rpcAgent.destroy();
    subAgent.destroy();

    // --- v2: the resumed stream's transactions are exactly the reference's.
    // Fence: a record produced to stream.transactions now lands after everything the ingests published; when both
    // v2 streams and the v1 subscribers have it, they have everything before it.
    const fence = makeTx({ keys: [tip], slot: BigInt(slot + 1) });
    const fenceSig = bs58.encode(fence.signature);
    await admin.produce(TOPIC.streamTransactions, [txRecord(fence)]);
    const hasFence = (c: V2Client): boolean => c.txs().some((u) => bs58.encode(u.getTransaction()!.getSignature_asU8()) === fenceSig);
    const v2State = (): string =>
      [[v2Victim, 'victim'], [v2Ref, 'reference'], [v2Resumed, 'resumed']]
        .map(([c, what]) => (c === undefined ? `${what}: none` : `${what}: ${(c as V2Client).txs().length} txs, status ${JSON.stringify((c as V2Client).status?.details ?? null)}`))
        .join('; ') +
      `; v1 ${v1.map((c) => c.transactions.length).join('/')}; sent ${sent.size} in slots 5001..${slot}; reference's last slot ${v2Ref.txs().at(-1)?.getTransaction()?.getSlot()}; ${events.join(', ')}\n` +
      ingests.map((c) => `${c.name}: ${c.proc.stdout().slice(-2500)}${c.proc.stderr().slice(-1000)}`).join('\n');
    await waitFor(() => hasFence(v2Ref) && v2Resumed !== undefined && hasFence(v2Resumed), 60_000, 'the fence on both v2 streams').catch(async (e: Error) => {
      const a = new Kafka({ brokers, clientId: 'mh-diag', logLevel: logLevel.NOTHING }).admin();
      await a.connect();
      const m = await a.fetchTopicMetadata({ topics: [TOPIC.streamTransactions, TOPIC.streamEntries, TOPIC.fleetUsage] }).catch((x: Error) => x.message);
      const ends = await a.fetchTopicOffsets(TOPIC.streamTransactions).catch((x: Error) => x.message);
      await a.disconnect();
      throw new Error(`${e.message}: ${v2State()}\nmetadata ${JSON.stringify(m)}\nends ${JSON.stringify(ends)}\n` + ingests.map((c) => c.proc.stdout().split('\n').filter((l) => /produce|publish/i.test(l)).join('\n')).join('\n'));
    });
    // The log itself, read from its start by a reader of our own (not through a fanout): which of the sent
    // transactions it holds, whatever the fanouts made of them.
    const inLog = new Set<string>();
    {
      const reader = await admin.consume({
        topics: [TOPIC.streamTransactions],
        from: 'beginning',
        onBatch: (ms) => {
          for (const m of ms) if (m.key !== null) inLog.add(bs58.encode(m.key));
        },
      });
      await reader.ready;
      await waitFor(() => inLog.has(fenceSig), 60_000, 'the fence in our own read of the log').catch(() => undefined);
      await reader.close();
    }
    inLog.delete(fenceSig);
    const expected = rows(v2Ref);
    const got = [...victimRows, ...rows(v2Resumed!)];
    for (const [c, what] of [[v2Victim, 'victim'], [v2Resumed!, 'resumed'], [v2Ref, 'reference']] as const) {
      assert.ok(seqsContiguous(c.updates), `${what}: seq 1, 2, 3, …`);
      assert.equal(c.updates.filter((u) => u.hasGap()).length, 0, `${what}: no gap notice`);
    }
    assert.equal(v2Ref.status, undefined, 'the reference stream stays open');
    const firstDiff = got.findIndex((r, i) => r !== expected[i]);
    assert.equal(got.length, expected.length, `v2: no gap, no duplicate (${got.length} vs ${expected.length}; first difference at ${firstDiff})`);
    assert.equal(firstDiff, -1, `v2: the same transactions in the same order; at ${firstDiff}:\n  got      ${got.slice(Math.max(0, firstDiff - 1), firstDiff + 3).join('\n           ')}\n  expected ${expected.slice(Math.max(0, firstDiff - 1), firstDiff + 3).join('\n           ')}`);

    // What the bus accepted: every signature sent while at least one feed ran (all of them), the reference has.
    const onBus = new Set(expected.map((r) => r.split(' ')[1]!).map((hex) => bs58.encode(Buffer.from(hex, 'hex'))));
    onBus.delete(fenceSig);
    // Every transaction sent reached the log, through the broker stop and the cut feed (the ingests' publisher fell
    // behind by minutes, one item per round trip, until it coalesced what queued: ingest/publisher.ts).
    const missing = [...sent.keys()].filter((s) => !onBus.has(s));
    const fenceHex = Buffer.from(fence.signature).toString('hex');
    const lastOnBus = expected.filter((r) => !r.endsWith(fenceHex)).reduce((m, r) => Math.max(m, Number(r.split(' ')[0])), 0);
    process.stdout.write(`      ingest: ${sent.size - missing.length} of ${sent.size} transactions sent reached the bus (${[...sent.keys()].filter((k) => inLog.has(k)).length} in the log, read directly); the last slot on the bus (${lastOnBus}) was sent ${slotSentAt.get(lastOnBus) ?? '?'} ms into the traffic, the last sent (${slot}) at ${slotSentAt.get(slot)} ms\n`);
    const twice = expected.length - 1 - onBus.size;
    assert.deepEqual(missing.slice(0, 3), [], `${missing.length} of ${sent.size} transactions sent never reached the bus`);
    assert.equal([...sent.keys()].filter((k) => !inLog.has(k)).length, 0, 'every transaction sent is in the log (read directly)');

    // --- v1: the surviving fanouts' subscribers lost nothing the bus accepted, and got each signature once.
    for (const i of [1, 2]) {
      const c = v1[i]!;
      await c.waitFor((r) => r.transaction?.signature === fenceSig, 60_000);
      const sigs = c.transactions.map((t) => t.signature).filter((s) => s !== fenceSig);
      assert.equal(new Set(sigs).size, sigs.length, `fanout-${i + 1} v1: each signature once`);
      const lost = [...onBus].filter((s) => !sigs.includes(s));
      assert.deepEqual(lost.slice(0, 5), [], `fanout-${i + 1} v1 lost ${lost.length} of ${onBus.size}`);
    }

    // --- what the servers admitted, when: the rental's usage events (each stamped with the time its request was
    // metered, on this machine's one clock), read from the topic's start to the ends it has now. The client's send
    // times are not that: on the loaded machine a request waits in a socket or a stalled process for up to seconds,
    // so a window of send times can hold up to twice what any window of admissions did.
    const metered: Array<{ surface: string; at: number; units: number }> = [];
    {
      const ends = await admin.endOffsets(TOPIC.usageEvents);
      const left = new Map([...ends].filter(([, o]) => o !== '0'));
      const reader = await admin.consume({
        topics: [TOPIC.usageEvents],
        from: 'beginning',
        onBatch: (ms) => {
          for (const m of ms) {
            if (left.has(m.partition) && BigInt(m.offset) + 1n >= BigInt(left.get(m.partition)!)) left.delete(m.partition);
            const e = m.value === null ? null : decodeUsageEvent(m.value);
            if (e === null || 'error' in e || e.rental !== main.id || e.units === 0) continue;
            metered.push({ surface: e.surface, at: Date.parse(e.time), units: e.units });
          }
        },
      });
      await waitFor(() => left.size === 0, 60_000, 'usage.events read to its ends');
      await reader.close();
    }
    /** The most units metered in any window of `ms` starting within the traffic, in 100 ms steps, and where. */
    const peakMetered = (surface: string, ms: number): { units: number; from: number } => {
      let best = { units: 0, from: 0 };
      for (let t = t0; t + ms <= t1; t += 100) {
        const units = metered.filter((m) => m.surface === surface && m.at >= t && m.at < t + ms).reduce((n, m) => n + m.units, 0);
        if (units > best.units) best = { units, from: t - t0 };
      }
      return best;
    };
    const rpcPeak = peakMetered('rpc', WINDOW_MS);
    const meteredRpc = rpcPeak.units;
    const tpsPeak = peakMetered('submit', 1000);
    const meteredTps = tpsPeak.units;
    {
      const series: number[] = [];
      for (let x = t0; x + 1000 <= t1; x += 1000) series.push(metered.filter((m) => m.surface === 'rpc' && m.at >= x && m.at < x + 1000).reduce((n, m) => n + m.units, 0));
      process.stdout.write(`      RPS units metered per second of the traffic: ${series.join(' ')}; the peak 10 s window from ${(rpcPeak.from / 1000).toFixed(1)} s, the peak 1 s TPS window from ${(tpsPeak.from / 1000).toFixed(1)} s\n`);
    }

    // --- limits held across the fleet.
    assert.deepEqual(rpcUnexpected, [], 'every gateway answer is 200 with a result or 429');
    assert.deepEqual(subUnexpected, [], 'every submission answer is 200 with the signature or 429');
    const peakRpc = maxWindow(rpcLog, t0, t1, WINDOW_MS);
    assert.ok(meteredRpc <= BUDGET * BOUND, `${meteredRpc} RPS units metered in a 10 s window; bound ${BUDGET * BOUND}`);
    // What the survivor's limiter admitted, as metered (usage events): an admitted call its upstream then failed
    // (503 -32099: the fake node in this process missing a health probe on the loaded machine) spent the rental
    // as much as a 200 did. By the client's 200s alone a CI run counted 66 of 200 while answers went 503.
    const meteredIn = (surface: string, from: number, to: number): number => metered.filter((m) => m.surface === surface && m.at >= from && m.at < to).reduce((n, m) => n + m.units, 0);
    const afterKill = meteredIn('rpc', gatewayKilledAt + RETURN_MS, gatewayKilledAt + RETURN_MS + WINDOW_MS);
    assert.ok(gatewayKilledAt + RETURN_MS + WINDOW_MS <= t1, 'the run covers the window after the kill');
    // What the client got back, to tell a limiter holding calls back (429s) from calls not offered or not answered.
    const sentRpc = rpcLog.length + rpcErrors.length + rpcUnexpected.length + rpcFailed.length;
    process.stdout.write(`      RPS calls answered: ${rpcLog.filter((a) => a.ok).length} 200, ${rpcLog.filter((a) => !a.ok).length} 429, ${rpcErrors.length} 503, ${rpcUnexpected.length} other, ${rpcFailed.length} with no answer (${rpcFailed.map((f) => `gateway-${f.to + 1} ${f.why} at ${f.at - t0} ms`).slice(0, 3).join('; ')}); ${sentRpc} in ${((t1 - t0) / 1000).toFixed(1)} s at ${3 * RPS}/s offered\n`);
    const perSecond: number[] = [];
    for (let x = gatewayKilledAt - 5_000; x + 1000 <= t1; x += 1000) perSecond.push(admittedIn(rpcLog, x, x + 1000));
    const meteredPerSecond: number[] = [];
    for (let x = gatewayKilledAt - 5_000; x + 1000 <= t1; x += 1000) meteredPerSecond.push(meteredIn('rpc', x, x + 1000));
    process.stdout.write(`      RPS units answered 200 per second from 5 s before the gateway kill: ${perSecond.join(' ')}; metered: ${meteredPerSecond.join(' ')}\n`);
    // Only the killed gateway leaves calls without an answer, and only from its kill on (the kill's start is
    // `gatewayKillFrom`; its connections reset as the process dies).
    for (const f of rpcFailed) assert.ok(f.to === 1 && f.at >= gatewayKillFrom, `a call to gateway-${f.to + 1} got no answer (${f.why}) ${f.at - t0} ms into the traffic; gateway-2 was killed at ${gatewayKillFrom - t0} ms`);
    // The property is the limiter's: after the kill the survivor's part is the whole rental, as for 3 → 2 instances in
    // test/gateways/rpc/fleet-limits.test.ts (≥ 0.9 of the rental in a 10 s window from 2 s after the kill). A
    // survivor that refused calls (429) in that window while metering less than that withheld the rental. One that
    // refused none was not offered enough (a machine answering the calls themselves slowly: seen once, 209 answers
    // in 43 s at 60/s offered, none of them 429, on every build of the time), which says nothing about the limiter.
    //
    // Judged per refusal, the limiter's own rule: a survivor counting itself alone (its dead peer gone, its exchange
    // in) refuses only when the rental is spent — B units metered, the fleet's, in the window before it answered,
    // less one request and what the dead peer's last reports carry late (placed at report time, ≤ 250 ms of its
    // spend). A fixed window's total is not that: the load client here stalls and bursts (2 then 53 units in a
    // second), and a burst just before the window's start leaves the survivor rightly refusing with less in it. A
    // CI run saw 178 of 200 in the fixed window with 48 refusals; its per-refusal view was not recorded.
    const refusedAfterKill = rpcLog.filter((a) => !a.ok && a.to === 0 && a.at >= gatewayKilledAt + RETURN_MS);
    const stateAt = (from: number, to: number): { alone: boolean; seen: boolean } => {
      const before = fleetView.filter((v) => v.at <= from).pop();
      const after = fleetView.find((v) => v.sentAt >= to);
      const between = fleetView.filter((v) => v.at > from && v.sentAt < to);
      const all = [before, ...between, after];
      const seen = all.every((v) => v !== undefined && !Number.isNaN(v.members));
      return { seen, alone: seen && all.every((v) => v!.members === 1 && v!.out === 0) };
    };
    // The decision fell somewhere between the send and the answer (on the loaded machine, up to seconds apart):
    // the window taken is the fullest one ending in that span.
    const spentBefore = (from: number, to: number): number => {
      let best = 0;
      for (let d = from; d <= to + 50; d += 50) best = Math.max(best, meteredIn('rpc', d - WINDOW_MS, d));
      return best;
    };
    let held = 0;
    let unseenState = 0;
    const judged: Array<{ after: number; spent: number }> = [];
    for (const r of refusedAfterKill) {
      const s = stateAt(r.at, r.answeredAt!);
      if (!s.seen) unseenState++;
      else if (!s.alone) held++;
      else judged.push({ after: r.answeredAt! - gatewayKilledAt, spent: spentBefore(r.at, r.answeredAt!) });
    }
    const lowest = judged.reduce((a, j) => (j.spent < a.spent ? j : a), { after: NaN, spent: Infinity });
    const short = judged.filter((j) => j.spent < BUDGET * 0.9);
    const heldFrom = fleetView.filter((v) => v.at >= gatewayKilledAt && (v.members > 1 || v.out > 0));
    process.stdout.write(
      `      survivor after the kill: ${refusedAfterKill.length} refusals from ${RETURN_MS / 1000} s on; ${judged.length} while counting itself alone (${short.length} with less than ${BUDGET * 0.9} units metered in the 10 s before; the lowest ${judged.length > 0 ? `${lowest.spent} of ${BUDGET}, ${(lowest.after / 1000).toFixed(1)} s after the kill` : '-'}), ${held} while held to its part, ${unseenState} with its state unread; ` +
        `its view: ${heldFrom.length} of ${fleetView.filter((v) => v.at >= gatewayKilledAt).length} reads from the kill on counted a peer or an exchange out (last at ${heldFrom.length > 0 ? ((heldFrom[heldFrom.length - 1]!.at - gatewayKilledAt) / 1000).toFixed(1) : '-'} s after)\n`,
    );
    assert.ok(fleetView.some((v) => !Number.isNaN(v.members)), 'the survivor\'s fleet gauges were read');
    assert.deepEqual(short.slice(0, 3), [], `the surviving gateway, counting itself alone, refused ${short.length} calls with less than 0.9 of the rental metered in the 10 s before (spent, ms after the kill)`);
    const peakTps = maxWindow(subLog, t0, t1, 1000);
    // README: at most B + (N − 1) × p_max + ε in any window, the bus down included (11 at 10 TPS: B + 1; ε is what
    // is offered in the readers' skew, and metered times are answer times). Held at 1.5× for a loaded machine's ε.
    // Before the fleet's rule held through an outage: 11–19 metered over the runs, 15 and 23 once each (instances
    // counting alone once their peers expired, a bucket's saved burst on top).
    assert.ok(meteredTps <= TPS * 1.5, `${meteredTps} submissions metered in a 1 s window; rental ${TPS} TPS (by send time ${peakTps})`);
    const subOk = subLog.filter((s) => s.ok).length;
    // Printed; asserted is only that the fleet does not starve the rental (on the loaded machine the offered rate
    // itself falls short of 3 × TPS at times).
    assert.ok(subOk >= TPS * ((t1 - t0) / 1000) * 0.5, `the fleet admitted ${subOk} submissions in ${((t1 - t0) / 1000).toFixed(0)} s at ${TPS} TPS`);
    // Rentals converge.
    for (const ms of suspendedIn) assert.ok(ms <= CONVERGE_MS, `a suspension took ${ms} ms to reach an instance; bound ${CONVERGE_MS}`);

    // --- billing: exact for the surfaces that survive, never more than answered for the one killed.
    const answered = (to: number, log: Answer[], before = Infinity): number => log.filter((s) => s.ok && s.to === to && s.at < before).length;
    // Billed: every answer the gateway metered, its 503s (outcome `error`, README's usage.events) included.
    const want = { getSlot: answered(0, rpcLog) + answered(0, rpcErrors), binary: subOk };
    const key = (m: string): string => `${main.id}|${m}`;
    await waitFor(() => {
      const { byKey } = totalsIn([billingDir], main.id);
      return byKey.get(key('getSlot')) === want.getSlot && byKey.get(key('binary')) === want.binary;
    }, 60_000, 'billing to reach the answered totals', 250).catch(() => undefined);
    const { byKey } = totalsIn([billingDir], main.id);
    const billed = (m: string): number => byKey.get(key(m)) ?? 0;
    assert.equal(billed('getSlot'), want.getSlot, 'getSlot (gateway-1) billed exactly');
    // Each submission answered 200 billed once; a 429 bills 0 units (it billed 1 until the run that found it).
    assert.equal(billed('binary'), want.binary, 'submissions billed exactly');
    const gw2 = answered(1, rpcLog) + answered(1, rpcErrors);
    const gw2Safe = answered(1, rpcLog, gatewayKilledAt - 1_000) + answered(1, rpcErrors, gatewayKilledAt - 1_000);
    assert.ok(billed('getBlockHeight') <= gw2 && billed('getBlockHeight') >= gw2Safe, `getBlockHeight (gateway-2, SIGKILLed) billed ${billed('getBlockHeight')}; answered ${gw2Safe} by 1 s before the kill, ${gw2} in all`);

    for (const c of components.filter((x) => x !== fanouts[0] && x !== gateways[1])) assert.doesNotMatch(c.proc.stdout(), /"level":(50|60)/, `${c.name} logged an error:\n${c.proc.stdout().slice(-3000)}`);

    process.stdout.write(
      `      ${components.length} components and the billing job on 3 brokers, up in ${(startedMs / 1000).toFixed(1)} s; ${((t1 - t0) / 1000).toFixed(1)} s of traffic\n` +
        events.map((e) => `        ${e}\n`).join('') +
        `      v2: ${expected.length} transactions (${onBus.size} signatures, ${twice} twice from the redundant feeds), the resumed client identical; v1 survivors complete; ${sent.size - missing.length} of ${sent.size} sent reached the bus\n` +
        `      RPS: ${rpcUnavailable} answers 503 -32099 (upstream unavailable); max ${meteredRpc} units metered in a 10 s window (${(meteredRpc / BUDGET).toFixed(3)}× the rental; ${peakRpc} by send time), ${afterKill} in the window from ${RETURN_MS / 1000} s after the gateway kill; TPS: max ${meteredTps} metered in a 1 s window at ${TPS} (${peakTps} by send time), ${subOk} admitted in ${((t1 - t0) / 1000).toFixed(1)} s\n` +
        `      billing: getSlot ${billed('getSlot')}/${want.getSlot}, binary ${billed('binary')}/${want.binary}, getBlockHeight ${billed('getBlockHeight')} (answered ${gw2Safe}..${gw2})\n`,
    );
    await admin.close();
  });
});

/**
 * A v2 client's transactions as compared: `slot signature` (hex), in bus order. Not the cursors: a cursor also
 * holds positions in topics the stream does not read (stream.slots, stream.entries), which a resumed stream carries
 * over from the cursor it started at while an uninterrupted one moves them on; its stream.transactions position is
 * what fixes the order, and seq and the signatures show any gap or repeat.
 */
function rows(c: V2Client): string[] {
  const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
  return c.txs().map((u) => `${u.getTransaction()!.getSlot()} ${hex(u.getTransaction()!.getSignature_asU8())}`);
}
