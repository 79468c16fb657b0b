import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { Bus, ProduceRecord } from '../../bus/bus';
import { KafkaBus } from '../../bus/kafka';
import { encodeUsageEvent, newUsageEvent } from '../../bus/topics/usage-events';
import { startBillingJob } from '../../infra/ops/billing/job';
import { loadAllLedgers } from '../../infra/ops/billing/store';
import { createLogger, type Log } from '../../infra/base/log';
import { Registry } from '../../infra/base/metrics';
import { kafkaBrokers } from '../support/kafka';
import { sleep, type BenchResult } from './stats';

// Billing throughput on Kafka: EVENTS usage events are produced first, then a billing job (one member) reads
// them from the beginning, aggregates, writes each partition's ledger durably and commits. Rate = events /
// (job start → last event in a durable ledger). Reference in the same run: a bare group consumer reading the
// same records with a no-op handler (what the bus alone costs), so the difference is billing's own work.

const EVENTS = 200_000;
const PARTITIONS = 3;
const METHODS = ['getSlot', 'getAccountInfo', 'getTransaction', 'getProgramAccounts', 'sendTransaction'];

function silentLog(): Log {
  return createLogger({ destination: new Writable({ write: (_c, _e, cb) => cb() }), level: 'warn' });
}

async function fill(bus: Bus, topic: string): Promise<void> {
  await bus.createTopics([{ name: topic, partitions: PARTITIONS, compacted: false }]);
  const batch: ProduceRecord[] = [];
  const pending: Promise<void>[] = [];
  for (let i = 0; i < EVENTS; i++) {
    batch.push(encodeUsageEvent(newUsageEvent({ rental: `bench-r${i % 50}`, surface: 'rpc', method: METHODS[i % METHODS.length]!, units: 1 + (i % 10), outcome: 'ok' })));
    if (batch.length === 2_000) {
      pending.push(bus.produce(topic, batch.splice(0)));
      if (pending.length >= 8) await Promise.all(pending.splice(0));
    }
  }
  if (batch.length > 0) pending.push(bus.produce(topic, batch));
  await Promise.all(pending);
}

async function timeBareConsumer(bus: Bus, topic: string): Promise<number> {
  let seen = 0;
  const t0 = performance.now();
  const c = await bus.consume({ topics: [topic], groupId: `bench-bare-${process.pid}-${Date.now()}`, from: 'beginning', onBatch: (m) => void (seen += m.length) });
  while (seen < EVENTS) await sleep(20);
  const ms = performance.now() - t0;
  await c.close();
  return ms;
}

export async function benchBilling(): Promise<BenchResult[]> {
  const brokers = await kafkaBrokers();
  const log = silentLog();
  const bus = new KafkaBus({ brokers, clientId: 'bench-billing', log });
  const topic = `usage.bench-billing-${process.pid}-${Date.now()}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-billing-'));
  try {
    await fill(bus, topic);
    const bareMs = await timeBareConsumer(bus, topic);
    const t0 = performance.now();
    const job = await startBillingJob(bus, { group: `bench-billing-${process.pid}`, outDir: dir, topic, log, registry: new Registry() });
    while (job.stats().counted < EVENTS) await sleep(20);
    const jobMs = performance.now() - t0;
    const batches = job.stats().batches;
    await job.close();
    const inLedgers = loadAllLedgers(dir).reduce((n, l) => n + l.counted, 0);
    return [
      { bench: 'billing', case: `bare group consumer, ${EVENTS.toLocaleString('en-US')} events (reference)`, figures: { events_per_s: (EVENTS * 1000) / bareMs } },
      {
        bench: 'billing',
        case: `billing job: dedupe, aggregate, durable ledger, commit`,
        figures: { events_per_s: (EVENTS * 1000) / jobMs, vs_bare: `${((bareMs / jobMs) * 100).toFixed(0)}%`, durable_writes: batches },
        note: inLedgers === EVENTS ? undefined : `ledgers hold ${inLedgers}, expected ${EVENTS}`,
      },
    ];
  } finally {
    await bus.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
