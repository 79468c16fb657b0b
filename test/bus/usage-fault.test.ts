import assert from 'node:assert/strict';
import type { Bus, BusMessage, ProduceRecord } from '../../bus/bus';
import { KafkaBus } from '../../bus/kafka';
import { TOPIC, defaultTopicSpecs } from '../../bus/topics';
import { decodeUsageEvent, newUsageEvent, type UsageEvent } from '../../bus/topics/usage-events';
import { UsageProducer } from '../../bus/usage-producer';
import type { LocalBroker } from '../../infra/local/kafka/broker';
import { Registry } from '../../infra/base/metrics';
import { restartableBroker } from '../support/kafka';
import { Collector, waitFor } from './contract';
import { quietLog } from '../support/log-capture';

// usage.events must survive a broker outage: a UsageProducer keeps emitting while its broker is stopped and
// started again (same port, same data), and afterwards the topic holds every accepted event id. Duplicates
// are allowed (at-least-once; billing dedupes by id) and reported. Nothing here asserts on timing.

const EVENTS_BEFORE = 1_000;
const EVENTS_DURING = 400;
const EVENTS_AFTER = 600;
const CHUNK = 50;


const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function gauge(registry: Registry, name: string): number {
  const line = registry.render().split('\n').find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`no ${name} in the registry`);
  return Number(line.split(' ')[1]);
}

function ids(messages: BusMessage[]): string[] {
  return messages.map((m) => {
    const e = decodeUsageEvent(m.value ?? Buffer.alloc(0));
    if ('error' in e) throw new Error(`undecodable usage event at ${m.partition}/${m.offset}: ${e.error}`);
    return e.id;
  });
}

describe('usage.events across a broker restart', function () {
  this.timeout(600_000);
  let broker: LocalBroker | undefined;
  let bus: KafkaBus | undefined;
  let producer: UsageProducer | undefined;
  let logLines: string[] = [];

  afterEach(function () {
    // The client's log stays out of the output unless the test failed, when it is the best clue.
    if (this.currentTest?.state === 'failed') for (const l of logLines) process.stdout.write(`      ${l.slice(0, 400)}\n`);
  });
  after(async () => {
    await producer?.close();
    await bus?.close();
    await broker?.destroy();
  });

  it('keeps every accepted event id (at least once) while the broker stops and starts', async () => {
    broker = await restartableBroker();
    const { log, lines } = quietLog();
    logLines = lines;
    // A small retry budget makes produce() fail during the outage, so the UsageProducer's own retry loop is
    // what carries the events across it (and the live reader's consumer crashes and restarts).
    bus = new KafkaBus({ brokers: broker.brokers, clientId: 'usage-fault', idempotent: true, retry: { retries: 1, maxRetryTimeMs: 1_000 }, log });
    await bus.createTopics(defaultTopicSpecs().filter((s) => s.name === TOPIC.usageEvents));
    // A live reader across the outage too: an independent reader must resume where it was after rejoining.
    const live = new Collector();
    const liveReader = await bus.consume({ topics: [TOPIC.usageEvents], from: 'beginning', onBatch: live.onBatch });
    await liveReader.ready;

    const registry = new Registry();
    producer = new UsageProducer(bus, { log, registry, retryMaxMs: 1_000, closeTimeoutMs: 120_000 });
    const accepted: UsageEvent[] = [];
    const emit = (n: number): void => {
      for (let i = 0; i < n; i++) {
        const e = newUsageEvent({ rental: `rental-${accepted.length % 17}`, surface: 'rpc', method: 'getSlot', units: 1, outcome: 'ok' });
        accepted.push(e);
        producer!.emit(e);
      }
    };
    // Emission runs on its own the whole time; the outage happens in the middle of it.
    const steady = (async () => {
      for (let sent = 0; sent < EVENTS_BEFORE + EVENTS_AFTER; sent += CHUNK) {
        emit(CHUNK);
        await sleep(100);
      }
    })();
    await sleep(700);
    const stopStarted = Date.now();
    await broker.stop();
    emit(EVENTS_DURING); // certainly accepted while no broker runs, so certainly buffered now
    const bufferedDuringOutage = gauge(registry, 'meridian_usage_buffered_events');
    await sleep(1_000);
    const startStarted = Date.now();
    await broker.start();
    const restartMs = Date.now() - startStarted;
    await steady;
    await producer.flush();

    assert.ok(bufferedDuringOutage >= EVENTS_DURING, `only ${bufferedDuringOutage} events buffered during the outage`);
    assert.equal(gauge(registry, 'meridian_usage_buffered_events'), 0);
    const dropped = registry.render().split('\n').filter((l) => l.startsWith('meridian_usage_events_dropped_total'));
    assert.equal(dropped.length, 3);
    assert.deepEqual(dropped.map((l) => l.split(' ')[1]), ['0', '0', '0']);

    const end = await bus.endOffsets(TOPIC.usageEvents);
    const total = [...end.values()].reduce((n, o) => n + Number(o), 0);
    const all = new Collector();
    const reader = await bus.consume({ topics: [TOPIC.usageEvents], from: 'beginning', onBatch: all.onBatch });
    await reader.ready;
    await waitFor(() => all.messages.length >= total, 120_000, `all ${total} records`);
    await waitFor(() => live.messages.length >= total, 120_000, `the live reader to reach ${total} records`);
    await reader.close();
    await liveReader.close();

    const want = new Set(accepted.map((e) => e.id));
    const got = ids(all.messages);
    const gotSet = new Set(got);
    const missing = [...want].filter((id) => !gotSet.has(id));
    const duplicates = got.length - gotSet.size;
    const retried = lines.filter((l) => l.includes('retrying with backoff')).length;
    process.stdout.write(
      `      ${accepted.length} events accepted, ${got.length} records read, ${duplicates} duplicates, ${missing.length} missing;` +
        ` broker down for ${startStarted - stopStarted + restartMs} ms (restart ${restartMs} ms); producer outages seen: ${retried}\n`,
    );
    assert.equal(want.size, EVENTS_BEFORE + EVENTS_DURING + EVENTS_AFTER);
    assert.equal(got.length, total);
    assert.deepEqual(missing, []);
    assert.deepEqual(gotSet, want);
    // The reader that lived through the outage saw the same set (duplicates allowed).
    assert.deepEqual(new Set(ids(live.messages)), want);
    // The outage was logged (connection refusals at least), and no line names the broker's address.
    const address = broker.brokers[0]!;
    assert.ok(lines.length > 0, 'the outage left no log line');
    assert.deepEqual(lines.filter((l) => l.includes(address) || l.includes(`:${address.split(':')[1]}`)), []);
  });
});

/** A Bus whose produce() fails while `down`; records what it accepted. Only produce() is used by UsageProducer. */
class FlakyBus implements Bus {
  readonly kind = 'embedded' as const;
  down = true;
  attempts = 0;
  readonly produced: string[] = [];
  async produce(_topic: string, records: ProduceRecord[]): Promise<void> {
    this.attempts++;
    if (this.down) throw new Error('broker down');
    for (const r of records) this.produced.push(JSON.parse(r.value!.toString('utf8')).id as string);
  }
  async createTopics(): Promise<void> {}
  consume(): never {
    throw new Error('not used');
  }
  async endOffsets(): Promise<Map<number, string>> {
    return new Map();
  }
  async startOffsets(): Promise<Map<number, string>> {
    return new Map();
  }
  async offsetsForTime(): Promise<Map<number, string>> {
    return new Map();
  }
  async close(): Promise<void> {}
}

function dropped(registry: Registry): Record<string, number> {
  const out: Record<string, number> = {};
  for (const l of registry.render().split('\n')) {
    const m = /^meridian_usage_events_dropped_total\{reason="(\w+)"\} (\d+)$/.exec(l);
    if (m !== null) out[m[1]!] = Number(m[2]);
  }
  return out;
}

describe('UsageProducer buffer', () => {
  const event = (i: number): UsageEvent => ({ ...newUsageEvent({ rental: 'r', surface: 'rpc', method: 'm', units: 1, outcome: 'ok' }), id: `e${i}` });

  it('loses nothing within the bound while the bus is down, in emit order once it is back', async () => {
    const bus = new FlakyBus();
    const registry = new Registry();
    const p = new UsageProducer(bus, { maxBuffered: 100, maxBatch: 7, retryMinMs: 5, retryMaxMs: 20, log: quietLog().log, registry });
    for (let i = 0; i < 100; i++) p.emit(event(i));
    await waitFor(() => bus.attempts >= 3, 10_000, 'a few failed attempts');
    bus.down = false;
    await p.flush();
    assert.equal(bus.produced.length, 100);
    assert.deepEqual(bus.produced, Array.from({ length: 100 }, (_, i) => `e${i}`));
    assert.deepEqual(dropped(registry), { buffer_full: 0, closed: 0, invalid: 0 });
    await p.close();
  });

  it('drops the oldest beyond the bound, counts and warns, and never throws', async () => {
    const bus = new FlakyBus();
    const registry = new Registry();
    const { log, lines } = quietLog();
    const p = new UsageProducer(bus, { maxBuffered: 100, maxBatch: 10, retryMinMs: 5, retryMaxMs: 20, log, registry });
    // No await between emits: the flush loop takes nothing yet, so exactly the first 50 make room.
    for (let i = 0; i < 150; i++) p.emit(event(i));
    assert.equal(dropped(registry).buffer_full, 50);
    assert.equal(lines.filter((l) => l.includes('usage events dropped')).length, 1);
    const bad = { ...event(999), units: 1n as unknown as number }; // JSON cannot encode a bigint
    assert.doesNotThrow(() => p.emit(bad));
    assert.equal(dropped(registry).invalid, 1);
    bus.down = false;
    await p.flush();
    assert.equal(bus.produced.length, 100);
    assert.deepEqual(bus.produced, Array.from({ length: 100 }, (_, i) => `e${i + 50}`));
    await p.close();
    assert.doesNotThrow(() => p.emit(event(1000)));
    assert.equal(dropped(registry).closed, 1);
  });

  it('gives up at the close deadline while the bus is down, counting what was not produced', async () => {
    const bus = new FlakyBus();
    const registry = new Registry();
    const { log, lines } = quietLog();
    const p = new UsageProducer(bus, { maxBuffered: 100, retryMinMs: 5, retryMaxMs: 20, closeTimeoutMs: 200, log, registry });
    for (let i = 0; i < 30; i++) p.emit(event(i));
    await p.close();
    assert.equal(bus.produced.length, 0);
    assert.equal(dropped(registry).closed, 30);
    assert.equal(lines.filter((l) => l.includes('not produced before close')).length, 1);
  });
});
