import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import type { BusMessage } from '../../bus/bus';
import { KafkaBus } from '../../bus/kafka';
import { TOPIC, defaultTopicSpecs } from '../../bus/topics';
import { decodeUsageEvent, newUsageEvent, type UsageEvent } from '../../bus/topics/usage-events';
import { UsageProducer } from '../../bus/usage-producer';
import type { LocalBroker } from '../../infra/kafka/broker';
import { createLogger, type Log } from '../../infra/log';
import { Registry } from '../../infra/metrics';
import { restartableBroker } from '../support/kafka';
import { Collector, waitFor } from './contract';

// usage.events must survive a broker outage: a UsageProducer keeps emitting while its broker is stopped and
// started again (same port, same data), and afterwards the topic holds every accepted event id. Duplicates
// are allowed (at-least-once; billing dedupes by id) and reported. Nothing here asserts on timing.

const EVENTS_BEFORE = 1_000;
const EVENTS_DURING = 400;
const EVENTS_AFTER = 600;
const CHUNK = 50;

function quietLog(): { log: Log; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(...chunk.toString('utf8').split('\n').filter((l) => l.length > 0));
      cb();
    },
  });
  return { log: createLogger({ destination, level: 'info' }), lines };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

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

  after(async () => {
    await producer?.close();
    await bus?.close();
    await broker?.destroy();
  });

  it('keeps every accepted event id (at least once) while the broker stops and starts', async () => {
    broker = await restartableBroker();
    const { log, lines } = quietLog();
    after(() => { if (process.env.SHOW_LOG) for (const l of lines) console.log(l.slice(0, 300)); });
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
    emit(EVENTS_DURING); // certainly accepted while no broker runs
    await sleep(1_000);
    const startStarted = Date.now();
    await broker.start();
    const restartMs = Date.now() - startStarted;
    await steady;
    await producer.flush();

    const dropped = registry.render().split('\n').filter((l) => l.startsWith('meridian_usage_events_dropped_total'));
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
    process.stdout.write(
      `      ${accepted.length} events accepted, ${got.length} records read, ${duplicates} duplicates, ${missing.length} missing;` +
        ` broker down for ${startStarted - stopStarted + restartMs} ms (restart ${restartMs} ms)\n`,
    );
    assert.equal(want.size, EVENTS_BEFORE + EVENTS_DURING + EVENTS_AFTER);
    assert.equal(got.length, total);
    assert.deepEqual(missing, []);
    assert.deepEqual(gotSet, want);
    // The reader that lived through the outage saw the same set (duplicates allowed).
    assert.deepEqual(new Set(ids(live.messages)), want);
  });
});
