import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import type { Bus } from '../../../../bus/bus';
import { EmbeddedBus } from '../../../../bus/embedded';
import { KafkaBus } from '../../../../bus/kafka';
import { encodeUsageEvent, newUsageEvent, type UsageEvent } from '../../../../bus/topics/usage-events';
import { parseConfig } from '../../../../infra/config';
import { launch } from '../../../../infra/launcher';
import { emptyLedger, LEDGER_VERSION, LedgerState } from '../../../../infra/ops/billing/ledger';
import { checkLedgerLog, LogProbe } from '../../../../infra/ops/billing/log-check';
import { formatReport, type Report } from '../../../../infra/ops/billing/report';
import { loadAllLedgers, loadArchives, loadLedger } from '../../../../infra/ops/billing/store';
import { post, startFakeNode, type FakeNode } from '../../../gateways/fake-node';
import { kafkaBrokers } from '../../../support/kafka';
import { quietLog } from '../../../support/log-capture';
import { projectRoot } from '../../../support/paths';
import { waitFor } from '../../../support/wait';
import { startBillingChild, totalsIn, type BillingChild } from './support';

// A billing ledger's offsets belong to one log (issue: a restart of the one-machine service started the embedded
// bus's log at offset 0 again, and the job skipped the new log's events as "already counted"). Checked here: the
// log check itself, a restart of the one-machine service with billing on, and a Kafka topic deleted and recreated
// under the same name between two batches. That a ledger of its own log still skips what it holds is the other
// billing tests' subject (job restart on the embedded bus, SIGKILL and broker restart on Kafka).

const WEIGHTS: Record<string, number> = { getSlot: 1, getAccountInfo: 2, getMultipleAccounts: 5, getTransaction: 10, getProgramAccounts: 30 };
const METHODS = Object.keys(WEIGHTS);

/** rental|method → units, for a list of events or of metered calls. */
function expectedOf(calls: Array<{ rental: string; method: string; units: number }>): Map<string, number> {
  const m = new Map<string, number>();
  for (const c of calls) m.set(`${c.rental}|${c.method}`, (m.get(`${c.rental}|${c.method}`) ?? 0) + c.units);
  return m;
}

function add(a: Map<string, number>, b: Map<string, number>): Map<string, number> {
  const out = new Map(a);
  for (const [k, v] of b) out.set(k, (out.get(k) ?? 0) + v);
  return out;
}

const sum = (m: Map<string, number>): number => [...m.values()].reduce((x, y) => x + y, 0);

/** `n` usage events of rentals `<tag>-r0..6` cycling through the methods (the rental is the key: it picks the partition). */
function events(tag: string, n: number): UsageEvent[] {
  return Array.from({ length: n }, (_, i) => newUsageEvent({ rental: `${tag}-r${i % 7}`, surface: 'rpc', method: METHODS[i % METHODS.length]!, units: WEIGHTS[METHODS[i % METHODS.length]!]!, outcome: 'ok' }));
}

async function produceAll(bus: Bus, topic: string, evs: UsageEvent[]): Promise<void> {
  for (let i = 0; i < evs.length; i += 200) await bus.produce(topic, evs.slice(i, i + 200).map(encodeUsageEvent));
}

function readReport(dir: string): Report {
  return JSON.parse(fs.readFileSync(path.join(dir, 'report.json'), 'utf8')) as Report;
}

describe('billing: a ledger is checked against the log it was read from', () => {
  const topic = 'usage.log-check';

  async function ledgerAfter(bus: EmbeddedBus, n: number): Promise<LedgerState> {
    await bus.createTopics([{ name: topic, partitions: 1, compacted: false }]);
    await produceAll(bus, topic, events('lc', n));
    const st = new LedgerState(emptyLedger(topic, 0, (await bus.logIdentity(topic)).id));
    let read!: () => void;
    const done = new Promise<void>((resolve) => (read = resolve));
    const reader = await bus.consume({ topics: [topic], from: 'beginning', onBatch: (ms) => {
      st.apply(ms);
      if (BigInt(st.ledger.nextOffset) === BigInt(n)) read();
    } });
    await done;
    await reader.close(); // the ledger holds exactly the first n records
    return st;
  }

  it('embedded bus: the log id settles it — same bus, same log; a new bus (a restart) is another log', async () => {
    const a = new EmbeddedBus();
    const b = new EmbeddedBus();
    try {
      const st = await ledgerAfter(a, 20);
      assert.equal((await checkLedgerLog(st.ledger, await LogProbe.of(a, topic))).same, true);
      await b.createTopics([{ name: topic, partitions: 1, compacted: false }]);
      await produceAll(b, topic, events('lc', 50)); // longer than the ledger's: only the id tells them apart
      const v = await checkLedgerLog(st.ledger, await LogProbe.of(b, topic));
      assert.equal(v.same, false);
      assert.match((v as { why: string }).why, /offsets are of log embedded:/);
      // A ledger that has read nothing skips nothing, whatever its log.
      assert.equal((await checkLedgerLog(emptyLedger(topic, 0, 'embedded:gone'), await LogProbe.of(b, topic))).same, true);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('an identity that survives a recreated topic (as on Kafka): the end offset and the append-time marker tell', async () => {
    const a = new EmbeddedBus();
    const b = new EmbeddedBus();
    try {
      const st = await ledgerAfter(a, 20);
      const same = { id: st.ledger.log, exact: false };
      // The same log, with more appended since: still the same.
      await produceAll(a, topic, events('lc', 5));
      assert.deepEqual(await checkLedgerLog(st.ledger, new LogProbe(a, topic, same)), { same: true });
      // A log created later under the same identity and already longer than the ledger: the end offset cannot tell,
      // the marker does (its first record appended after the ledger's last one is at offset 0, not after 19).
      await b.createTopics([{ name: topic, partitions: 1, compacted: false }]);
      await waitFor(() => Date.now() > st.ledger.last!.timestamp, 1000, 'the clock past the ledger\'s last record');
      await produceAll(b, topic, events('lc', 50));
      const v = await checkLedgerLog(st.ledger, new LogProbe(b, topic, same));
      assert.equal(v.same, false);
      assert.match((v as { why: string }).why, /first record appended after the ledger's last one \(offset 19, .*\) is at offset 0; the topic was recreated/);
      // A shorter one: its end is below the ledger's next offset.
      const c = new EmbeddedBus();
      await c.createTopics([{ name: topic, partitions: 1, compacted: false }]);
      await produceAll(c, topic, events('lc', 3));
      assert.match(((await checkLedgerLog(st.ledger, new LogProbe(c, topic, same))) as { why: string }).why, /ends at offset 3, below the ledger's next offset 20/);
      await c.close();
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a version 1 ledger (no log recorded) is read as of an unrecorded log', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-v1-'));
    try {
      const v1 = { version: 1, topic, partition: 0, nextOffset: '7', rows: {}, recentIds: [], counted: 7, duplicates: 0, invalid: 0 };
      fs.writeFileSync(path.join(dir, `${topic}-p0.ledger.json`), JSON.stringify(v1));
      const l = loadLedger(dir, topic, 0);
      assert.equal(l.version, LEDGER_VERSION);
      assert.equal(l.log, '');
      assert.equal(l.nextOffset, '7');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('billing across a restart of the one-machine service (embedded bus, billing on)', function () {
  this.timeout(180_000);

  let node: FakeNode;
  let dir: string;
  before(async () => {
    node = await startFakeNode();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-restart-'));
  });
  after(async () => {
    await node.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** infra/config/local.json with only what this needs: the embedded bus, rentals, billing, and the chain gateway over a stand-in node. */
  function config(): ReturnType<typeof parseConfig> {
    const raw = JSON.parse(fs.readFileSync(path.join(projectRoot(), 'infra', 'config', 'local.json'), 'utf8')) as Record<string, Record<string, unknown>>;
    const rentalsFile = path.join(dir, 'rentals.json');
    fs.writeFileSync(rentalsFile, JSON.stringify([{ id: 'restart-a', region: 'local', ips: ['127.0.0.1', '::1'], rps: 1_000_000, tps: 1000, pps: 1000 }]));
    const gateways = raw.gateways as Record<string, Record<string, unknown>>;
    return parseConfig({
      ...raw,
      metrics: { enabled: false },
      localchain: { enabled: false },
      ingest: { enabled: false },
      fanout: { enabled: false },
      admin: { enabled: false },
      demo: { enabled: false },
      rentals: { ...raw.rentals, file: rentalsFile },
      billing: { enabled: true, outDir: dir },
      gateways: {
        rpc: { ...gateways.rpc, listen: '127.0.0.1:0', wsListen: '127.0.0.1:0', upstreams: [{ http: node.url, ws: node.wsUrl }] },
        submit: { enabled: false },
        evm: { enabled: false },
      },
    });
  }

  /** `n` calls through the gateway as JSON-RPC batches of 10 (each item metered at its weight); the calls made. */
  async function traffic(url: string, n: number, offset: number): Promise<Array<{ rental: string; method: string; units: number }>> {
    const calls: Array<{ rental: string; method: string; units: number }> = [];
    for (let i = 0; i < n; i += 10) {
      const items = Array.from({ length: Math.min(10, n - i) }, (_, j) => ({ jsonrpc: '2.0', id: i + j, method: METHODS[(offset + i + j) % METHODS.length]!, params: [] }));
      const res = await post(url, JSON.stringify(items));
      assert.equal(res.status, 200, res.body);
      for (const it of items) calls.push({ rental: 'restart-a', method: it.method, units: WEIGHTS[it.method]! });
    }
    return calls;
  }

  it('bills the second run\'s calls exactly, and keeps the first run\'s totals beside them', async () => {
    const { log } = quietLog('warn');
    // First run: 400 calls, then a stop straight away: the stop lets the job read what was metered (its usage
    // events die with the embedded bus), so all 400 are billed.
    let running = await launch(config(), log);
    let first: Map<string, number>;
    try {
      first = expectedOf(await traffic(running.endpoints.rpc!.http, 400, 0));
    } finally {
      await running.stop();
    }
    assert.deepEqual(totalsIn([dir], 'restart-').byKey, first);
    assert.equal(totalsIn([dir], 'restart-').events, 400);
    const before = loadAllLedgers(dir);
    assert.ok(before.some((l) => BigInt(l.nextOffset) > 0n) && before.every((l) => l.log.startsWith('embedded:')), 'the first run\'s ledgers name their log');

    // Second run on the same billing directory: a new embedded bus, whose log starts at offset 0 again. Fewer calls
    // than the first run, so every one of them sits below the old ledgers' next offsets.
    running = await launch(config(), log);
    let second: Map<string, number>;
    try {
      second = expectedOf(await traffic(running.endpoints.rpc!.http, 250, 3));
      // Billed while the service runs, not only at its stop.
      await waitFor(() => totalsIn([dir], 'restart-').events === 650, 60_000, 'both runs\' 650 calls billed').catch((e: Error) => {
        throw new Error(`${e.message}; ledgers hold ${totalsIn([dir], 'restart-').events}`);
      });
    } finally {
      await running.stop(); // the job's last batch is in, the report is final
    }
    const all = add(first, second);
    assert.deepEqual(totalsIn([dir], 'restart-').byKey, all, 'after the stop: nothing more, nothing less');
    assert.equal(totalsIn([dir], 'restart-').events, 650);

    // The first run's ledgers are archived under their log; the current ones are of the second run's log.
    const archives = loadArchives(dir);
    assert.equal(archives.length, 1);
    assert.equal(archives[0]!.log, before.find((l) => BigInt(l.nextOffset) > 0n)!.log);
    assert.ok(archives[0]!.name.startsWith(archives[0]!.log.replace(/[^A-Za-z0-9._-]/g, '_')), archives[0]!.name);
    const now = loadAllLedgers(dir);
    assert.ok(now.every((l) => l.log.startsWith('embedded:') && l.log !== archives[0]!.log));

    // The report: totals per log and summed.
    const report = readReport(dir);
    assert.deepEqual(report.logs.map((l) => [l.archive === null ? 'current' : 'archived', l.units, l.events]), [
      ['archived', sum(first), 400],
      ['current', sum(second), 250],
    ]);
    assert.equal(report.totals.units, sum(all));
    assert.equal(report.totals.events, 650);
    const table = formatReport(report);
    assert.match(table, new RegExp(`${archives[0]!.log}\\s+archived ${archives[0]!.name.replace(/\./g, '\\.')}\\s+\\d+\\s+${sum(first)}\\s+400`));
    assert.match(table, new RegExp(`ALL LOGS\\s+${sum(all)}\\s+650`));
  });
});

describe('billing on Kafka: usage topic deleted and recreated between two batches', function () {
  this.timeout(600_000);

  it('bills both batches exactly, with the job restarted in between', async () => {
    const brokers = await kafkaBrokers();
    const { log } = quietLog('warn');
    const bus = new KafkaBus({ brokers, clientId: 'billing-recreate', log });
    const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    const topic = `usage.billing-recreate-${process.pid}`;
    const group = `recreate-${process.pid}`;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-recreate-'));
    let job: BillingChild | undefined;
    try {
      await bus.createTopics([{ name: topic, partitions: 3, compacted: false }]);
      const batch1 = events('rc', 300);
      await produceAll(bus, topic, batch1);
      job = startBillingChild({ brokers, group, outDir: dir, topic });
      await waitFor(() => totalsIn([dir], 'rc-').events === 300, 120_000, 'the first batch billed').catch((e: Error) => {
        throw new Error(`${e.message}; ledgers hold ${totalsIn([dir], 'rc-').events}; job said: ${job!.stderr().slice(-600)}`);
      });
      job.proc.kill('SIGTERM');
      assert.equal(await job.exited(), 0, job.stderr());
      const held = loadAllLedgers(dir);
      assert.ok(held.every((l) => l.log.startsWith('kafka:') && l.log.endsWith(`/${topic}`)), JSON.stringify(held.map((l) => l.log)));

      // The topic goes and comes back under the same name (offsets from 0), with more records per partition than
      // the ledgers hold: their end offsets pass the ledgers' next offsets, so only the marker can tell.
      await admin.deleteTopics({ topics: [topic], timeout: 30_000 });
      await waitFor(async () => !(await admin.listTopics()).includes(topic), 60_000, 'the topic deleted', 200);
      await waitFor(
        async () => {
          try {
            await bus.createTopics([{ name: topic, partitions: 3, compacted: false }]);
            return (await admin.listTopics()).includes(topic);
          } catch {
            return false; // still marked for deletion
          }
        },
        60_000,
        'the topic created again',
        500,
      );
      const batch2 = events('rc', 900);
      await produceAll(bus, topic, batch2);
      const ends = await bus.endOffsets(topic);
      for (const l of held) assert.ok(BigInt(ends.get(l.partition)!) >= BigInt(l.nextOffset), `partition ${l.partition}: end ${ends.get(l.partition)} ≥ ledger ${l.nextOffset}`);

      job = startBillingChild({ brokers, group, outDir: dir, topic });
      await waitFor(() => totalsIn([dir], 'rc-').events >= 1_200, 120_000, 'both batches billed').catch((e: Error) => {
        throw new Error(`${e.message}; ledgers hold ${totalsIn([dir], 'rc-').events}; job said: ${job!.stderr().slice(-600)}`);
      });
      // Fence: one more event per partition under rentals of their own; once those are in, nothing of the two
      // batches can still arrive (each partition is read in order).
      const fence: UsageEvent[] = [];
      const start = await bus.endOffsets(topic);
      for (let n = 0; n < 100; n++) {
        const e = newUsageEvent({ rental: `fence-${n}`, surface: 'rpc', method: 'getSlot', units: 1, outcome: 'ok' });
        await bus.produce(topic, [encodeUsageEvent(e)]);
        fence.push(e);
        const now = await bus.endOffsets(topic);
        if ([...start].every(([p, o]) => BigInt(now.get(p)!) > BigInt(o))) break;
      }
      await waitFor(() => totalsIn([dir], 'fence-').events === fence.length, 120_000, 'the fence billed');
      const expected = add(expectedOf(batch1), expectedOf(batch2));
      const got = totalsIn([dir], 'rc-');
      assert.equal(got.events, 1_200);
      assert.deepEqual(got.byKey, expected);
      job.proc.kill('SIGTERM');
      assert.equal(await job.exited(), 0, job.stderr());

      const archives = loadArchives(dir);
      assert.equal(archives.length, 1, `the old ledgers archived together: ${JSON.stringify(archives.map((a) => [a.name, a.ledgers.map((l) => [l.partition, l.nextOffset, l.counted])]))}`);
      assert.equal(archives[0]!.ledgers.length, held.length);
      const why = fs.readFileSync(path.join(dir, 'archive', archives[0]!.name, `${topic}-p0.why.txt`), 'utf8');
      assert.match(why, /the topic was recreated/);
      const report = readReport(dir);
      assert.deepEqual(report.logs.map((l) => [l.archive === null ? 'current' : 'archived', l.log]), [
        ['archived', held[0]!.log],
        ['current', held[0]!.log],
      ]);
      assert.equal(report.logs[0]!.units, sum(expectedOf(batch1)));
      assert.equal(report.logs[1]!.units, sum(expectedOf(batch2)) + fence.length);
    } finally {
      job?.proc.kill('SIGKILL');
      await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
      await admin.disconnect();
      await bus.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
