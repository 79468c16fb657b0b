import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AssignerProtocol, Kafka, logLevel, type Admin } from 'kafkajs';
import type { Bus } from '../../../../bus/bus';
import { EmbeddedBus } from '../../../../bus/embedded';
import { KafkaBus } from '../../../../bus/kafka';
import { encodeUsageEvent, newUsageEvent, type UsageEvent } from '../../../../bus/topics/usage-events';
import { UsageProducer } from '../../../../bus/usage-producer';
import { startBillingJob } from '../../../../infra/ops/billing/job';
import { loadAllLedgers } from '../../../../infra/ops/billing/store';
import { Registry } from '../../../../infra/base/metrics';
import { kafkaBrokers, restartableBroker } from '../../../support/kafka';
import { quietLog } from '../../../support/log-capture';
import { startBillingChild, totalsIn, type BillingChild } from './support';
import { waitFor } from '../../../support/wait';

// Billing on usage.events: totals equal, unit for unit, the weights of what was metered — across a broker
// restart, a SIGKILL of the job in the middle, duplicates written by the producer, and two jobs of one group.

const WEIGHTS: Record<string, number> = { getSlot: 1, getAccountInfo: 2, getMultipleAccounts: 5, getTransaction: 10, getProgramAccounts: 30, sendTransaction: 1 };
const METHODS = Object.keys(WEIGHTS);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

class Ledgerbook {
  readonly accepted: UsageEvent[] = [];
  private n = 0;
  constructor(private readonly tag: string) {}
  next(): UsageEvent {
    const method = METHODS[this.n % METHODS.length]!;
    const rental = `${this.tag}-r${this.n % 7}`;
    this.n++;
    const e = newUsageEvent({ rental, surface: method === 'sendTransaction' ? 'rpc' : 'rpc', method, units: WEIGHTS[method]!, outcome: 'ok' });
    this.accepted.push(e);
    return e;
  }
  /** rental|method → units, as the weights say. */
  expected(): Map<string, number> {
    const m = new Map<string, number>();
    for (const e of this.accepted) m.set(`${e.rental}|${e.method}`, (m.get(`${e.rental}|${e.method}`) ?? 0) + e.units);
    return m;
  }
}

async function topicWithPartitions(bus: Bus, name: string, partitions: number): Promise<void> {
  await bus.createTopics([{ name, partitions, compacted: false }]);
}

/**
 * Produces 1-unit events of rentals `fence-0`, `fence-1`, … (the key picks the partition) until every partition
 * of `topic` has one more record; returns how many were produced. Nothing else may be producing meanwhile.
 */
async function fenceEachPartition(bus: Bus, topic: string, partitions: number): Promise<number> {
  const start = await bus.endOffsets(topic);
  for (let n = 1; n <= 100; n++) {
    await bus.produce(topic, [encodeUsageEvent(newUsageEvent({ rental: `fence-${n - 1}`, surface: 'rpc', method: 'getSlot', units: 1, outcome: 'ok' }))]);
    const ends = await bus.endOffsets(topic);
    if (ends.size === partitions && [...ends].every(([p, o]) => BigInt(o) > BigInt(start.get(p) ?? '0'))) return n;
  }
  throw new Error(`100 fence events did not reach all ${partitions} partitions of ${topic}`);
}

/** The partitions of `topic` each member of the group holds, as the broker sees them; null unless the group is Stable. */
async function groupAssignment(admin: Admin, groupId: string, topic: string): Promise<number[][] | null> {
  const { groups } = await admin.describeGroups([groupId]);
  const g = groups.find((x) => x.groupId === groupId);
  if (g === undefined || g.state !== 'Stable') return null;
  return g.members.map((m) => AssignerProtocol.MemberAssignment.decode(m.memberAssignment)?.assignment[topic] ?? []);
}

describe('billing job on the embedded bus', () => {
  it('gives exact totals through a restart of the job and duplicate records', async () => {
    const bus = new EmbeddedBus();
    const topic = 'usage.billing-embedded';
    await topicWithPartitions(bus, topic, 3);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-emb-'));
    const { log } = quietLog();
    const book = new Ledgerbook('emb');
    const produce = async (n: number, dupEvery = 0): Promise<void> => {
      for (let i = 0; i < n; i++) {
        const e = book.next();
        const rec = encodeUsageEvent(e);
        await bus.produce(topic, dupEvery > 0 && i % dupEvery === 0 ? [rec, rec] : [rec]);
      }
    };
    try {
      let job = await startBillingJob(bus, { group: 'bill', outDir: dir, topic, log, registry: new Registry() });
      await job.ready;
      await produce(1_500, 10);
      await waitFor(() => job.stats().counted === 1_500, 20_000, '1,500 counted');
      assert.equal(job.stats().duplicates, 150);
      await job.close();
      await produce(1_000);
      job = await startBillingJob(bus, { group: 'bill', outDir: dir, topic, log, registry: new Registry() });
      await job.ready;
      await produce(500);
      await waitFor(() => totalsIn([dir], 'emb-').events === 3_000, 20_000, 'all 3,000 events in the ledgers');
      assert.equal(await job.lag(), 0);
      await job.close();
      const got = totalsIn([dir], 'emb-');
      assert.equal(got.byKey.size, book.expected().size);
      assert.deepEqual(got.byKey, book.expected());
      const report = JSON.parse(fs.readFileSync(path.join(dir, 'report.json'), 'utf8')) as { totals: { events: number } };
      assert.equal(report.totals.events, 3_000);
    } finally {
      await bus.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('billing job on Kafka', function () {
  this.timeout(600_000);

  it('10,000 metered events: totals equal the weights through a broker restart and a SIGKILL of the job', async () => {
    const broker = await restartableBroker();
    const { log } = quietLog();
    const bus = new KafkaBus({ brokers: broker.brokers, clientId: 'billing-fault', idempotent: true, retry: { retries: 1, maxRetryTimeMs: 1_000 }, log });
    const topic = 'usage.billing-fault';
    await topicWithPartitions(bus, topic, 3);
    const producer = new UsageProducer(bus, { topic, log, registry: new Registry(), retryMaxMs: 1_000, closeTimeoutMs: 120_000 });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-kafka-'));
    const book = new Ledgerbook('fault');
    const startJob = (): BillingChild => startBillingChild({ brokers: broker.brokers, group: 'billing-fault', outDir: dir, topic });
    const emit = async (n: number): Promise<void> => {
      for (let i = 0; i < n; i += 250) {
        for (let j = 0; j < Math.min(250, n - i); j++) producer.emit(book.next());
        await sleep(50);
      }
    };
    let job = startJob();
    try {
      await emit(3_000);
      await waitFor(() => totalsIn([dir], 'fault-').events > 0, 120_000, 'the job to count something');
      job.proc.kill('SIGKILL');
      await job.exited();
      await emit(2_000);
      job = startJob();
      await emit(1_000);
      await broker.stop();
      await emit(1_500); // buffered by the producer while no broker runs
      await sleep(500);
      await broker.start();
      await emit(2_500);
      await producer.flush();
      assert.equal(book.accepted.length, 10_000);
      await waitFor(() => totalsIn([dir], 'fault-').events >= 10_000, 240_000, 'all 10,000 events in the ledgers').catch((e: Error) => {
        throw new Error(`${e.message}; ledgers hold ${totalsIn([dir], 'fault-').events}; job said: ${job.stderr().slice(-600)}`);
      });
      // Nothing more may arrive: a late replay would show as a count above 10,000. Fence: one more event on each
      // partition, under rentals of its own; the job reads a partition in order, so once it has counted those,
      // whatever it was going to count of the 10,000 is in the ledgers.
      const fences = await fenceEachPartition(bus, topic, 3);
      await waitFor(() => totalsIn([dir], 'fence-').events === fences, 120_000, 'the fence events in the ledgers');
      const got = totalsIn([dir], 'fault-');
      assert.equal(got.events, 10_000);
      assert.deepEqual(got.byKey, book.expected());
      const units = [...book.expected().values()].reduce((a, b) => a + b, 0);
      assert.equal([...got.byKey.values()].reduce((a, b) => a + b, 0), units);
      // The job reports progress on stderr once a second (the fence may be quicker than that).
      const progress = /billing: [\d,]+ events counted \([\d,]+\/s\), lag [\d,?]+/;
      await waitFor(() => progress.test(job.stderr()), 30_000, 'a progress line on the job\'s stderr', 100).catch((e: Error) => {
        throw new Error(`${e.message}; job said: ${job.stderr().slice(-600)}`);
      });
      job.proc.kill('SIGTERM');
      assert.equal(await job.exited(), 0, job.stderr());
      const report = JSON.parse(fs.readFileSync(path.join(dir, 'report.json'), 'utf8')) as { totals: { units: number } };
      assert.equal(report.totals.units, units + fences, 'the 10,000 events and the fences (1 unit each)');
    } finally {
      job.proc.kill('SIGKILL');
      await producer.close();
      await bus.close();
      await broker.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('two jobs in one group split the partitions, and their reports add up to the totals', async () => {
    const brokers = await kafkaBrokers();
    const { log } = quietLog();
    const bus = new KafkaBus({ brokers, clientId: 'billing-pair', log });
    const topic = `usage.billing-pair-${process.pid}`;
    await topicWithPartitions(bus, topic, 4);
    const dirs = [0, 1].map((i) => fs.mkdtempSync(path.join(os.tmpdir(), `billing-pair${i}-`)));
    const group = `pair-${process.pid}`;
    const jobs = await Promise.all(dirs.map((outDir) => startBillingJob(bus, { group, outDir, topic, log, registry: new Registry() })));
    const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
    const book = new Ledgerbook('pair');
    try {
      await Promise.all(jobs.map((j) => j.ready));
      // Both jobs are members and the group has settled with the 4 partitions split between them (one job
      // alone would take them all; the second one joining makes the group rebalance).
      await admin.connect();
      let seen: number[][] | null = null;
      await waitFor(
        async () => {
          seen = await groupAssignment(admin, group, topic);
          return seen !== null && seen.length === 2 && seen.every((ps) => ps.length > 0) && new Set(seen.flat()).size === 4;
        },
        60_000,
        'both jobs in the group with a share of the partitions each',
        200,
      ).catch((e: Error) => {
        throw new Error(`${e.message}; last seen ${JSON.stringify(seen)}`);
      });
      const records = Array.from({ length: 4_000 }, () => encodeUsageEvent(book.next()));
      for (let i = 0; i < records.length; i += 500) await bus.produce(topic, records.slice(i, i + 500));
      await waitFor(() => totalsIn(dirs, 'pair-').events >= 4_000, 120_000, 'both jobs to count all 4,000');
      const each = jobs.map((j) => j.stats().counted);
      assert.ok(each[0]! > 0 && each[1]! > 0, `each job counts a share: ${each.join(' + ')}`);
      assert.equal(each[0]! + each[1]!, 4_000);
      const per = dirs.map((d) => new Set(loadAllLedgers(d).filter((l) => l.counted > 0).map((l) => l.partition)));
      assert.deepEqual([...per[0]!].filter((p) => per[1]!.has(p)), [], 'no partition counted in both');
      assert.deepEqual(totalsIn(dirs, 'pair-').byKey, book.expected());
    } finally {
      await admin.disconnect();
      await Promise.all(jobs.map((j) => j.close()));
      await bus.close();
      for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
    }
  });
});
