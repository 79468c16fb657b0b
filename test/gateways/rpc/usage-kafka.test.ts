import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { KafkaBus } from '../../../bus/kafka';
import { decodeUsageEvent, type UsageEvent } from '../../../bus/topics/usage-events';
import { UsageProducer } from '../../../bus/usage-producer';
import type { LocalChain } from '../../../infra/local/chain';
import { Registry } from '../../../infra/base/metrics';
import { Collector } from '../../bus/contract';
import { kafkaBrokers } from '../../support/kafka';
import { quietLog } from '../../support/log-capture';
import { waitFor } from '../../support/wait';
import { post } from '../fake-node';
import { chainUpstream, localChain, rental, testGateway, type TestGateway } from './support';

// Usage events of the chain gateway, produced through the UsageProducer onto a real Kafka broker and read back:
// one event per method and request (a batch of ten of one method is one event with calls 10, its units summed),
// unit for unit, with the outcome of the request, for HTTP
// (surface rpc) and WebSocket (surface rpc-ws). Requests the gateway refuses before metering (auth) carry no
// rental to bill and produce none.

const call = (method: string, params: unknown[] = [], id = 1): Record<string, unknown> => ({ jsonrpc: '2.0', id, method, params });
const SIG = '1111111111111111111111111111111111111111111111111111111111111111';
const key = (e: Pick<UsageEvent, 'rental' | 'surface' | 'method' | 'calls' | 'units' | 'outcome'>): string => `${e.rental} ${e.surface} ${e.method} ${e.calls} ${e.units} ${e.outcome}`;

describe('chain gateway: usage events on a real Kafka broker', function () {
  this.timeout(180_000);
  let chain: LocalChain;
  let gw: TestGateway;
  let bus: KafkaBus;
  let producer: UsageProducer;
  const topic = `usage.events.rpc-test-${process.pid}-${Date.now()}`;

  before(async () => {
    const { log } = quietLog('warn');
    bus = new KafkaBus({ brokers: await kafkaBrokers(), clientId: 'rpc-usage-test', idempotent: true, log });
    await bus.createTopics([{ name: topic, partitions: 2, compacted: false }]);
    producer = new UsageProducer(bus, { topic, log, registry: new Registry() });
    chain = await localChain();
    // rps 12 → 120 units per 10 s window; tps 1.
    gw = await testGateway({ upstreams: [chainUpstream(chain)], rentals: [rental({ id: 'bill-me', ips: ['127.0.0.1'], rps: 12, tps: 1 })], usage: producer });
  });
  after(async () => {
    await gw?.close();
    await producer?.close();
    await bus?.close();
    await chain?.close();
  });

  it('match the requests made, unit for unit', async () => {
    const expected: string[] = [];
    const exp = (surface: 'rpc' | 'rpc-ws', method: string, units: number, outcome: UsageEvent['outcome'], calls = 1): number => expected.push(key({ rental: 'bill-me', surface, method, calls, units, outcome }));

    assert.equal((await post(gw.http.url, JSON.stringify(call('getSlot')))).status, 200);
    exp('rpc', 'getSlot', 1, 'ok');
    const ten = Array.from({ length: 10 }, (_v, i) => call('getTransaction', [SIG], i));
    assert.equal((await post(gw.http.url, JSON.stringify(ten))).status, 200);
    exp('rpc', 'getTransaction', 100, 'ok', 10);
    // A batch of two methods: an event for each, in the order they first appear.
    const mixed = [call('getSlot', [], 1), call('getBlockHeight', [], 2), call('getSlot', [], 3)];
    assert.equal((await post(gw.http.url, JSON.stringify(mixed))).status, 200);
    exp('rpc', 'getSlot', 2, 'ok', 2);
    exp('rpc', 'getBlockHeight', 1, 'ok');
    assert.equal((await post(gw.http.url, JSON.stringify(call('getAccountInfo', [SIG.slice(0, 32)])))).status, 200);
    exp('rpc', 'getAccountInfo', 2, 'ok');
    // 106 of 120 units spent: a 30-unit call does not fit and is refused, charged nothing.
    assert.equal((await post(gw.http.url, JSON.stringify(call('getProgramAccounts', ['11111111111111111111111111111111'])))).status, 429);
    exp('rpc', 'getProgramAccounts', 0, 'rate_limited');
    // sendTransaction: TPS, one unit; the second in the same second is refused.
    assert.notEqual((await post(gw.http.url, JSON.stringify(call('sendTransaction', ['bogus'])))).status, 429);
    exp('rpc', 'sendTransaction', 1, 'ok');
    assert.equal((await post(gw.http.url, JSON.stringify(call('sendTransaction', ['bogus'])))).status, 429);
    exp('rpc', 'sendTransaction', 0, 'rate_limited');
    // Not metered, no rental: nothing produced.
    assert.equal((await post(gw.http.url, JSON.stringify(call('getSlot')), { localAddress: '127.0.0.2' })).status, 403);
    // WebSocket subscribe/unsubscribe: weight 1 each.
    const ws = new WebSocket(gw.ws.url);
    const replies: Array<{ id?: number; result?: unknown }> = [];
    ws.on('message', (d) => replies.push(JSON.parse(d.toString()) as { id?: number }));
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify(call('slotSubscribe', [], 1)));
    await waitFor(() => replies.some((m) => m.id === 1), 10_000, 'subscribe reply');
    const subId = replies.find((m) => m.id === 1)!.result;
    ws.send(JSON.stringify(call('slotUnsubscribe', [subId], 2)));
    await waitFor(() => replies.some((m) => m.id === 2), 10_000, 'unsubscribe reply');
    ws.close();
    exp('rpc-ws', 'slotSubscribe', 1, 'ok');
    exp('rpc-ws', 'slotUnsubscribe', 1, 'ok');

    await producer.flush();
    const got = new Collector();
    const reader = await bus.consume({ topics: [topic], from: 'beginning', onBatch: got.onBatch });
    try {
      await waitFor(() => got.messages.length >= expected.length, 60_000, `${expected.length} usage events`);
      // Nothing more arrives (no event for the 403, no duplicates).
      await new Promise((r) => setTimeout(r, 500));
      const events = got.messages.map((m) => decodeUsageEvent(m.value!));
      for (const e of events) assert.ok(!('error' in e), JSON.stringify(e));
      const ok = events as UsageEvent[];
      assert.equal(ok.length, expected.length);
      assert.deepEqual(ok.map(key).sort(), [...expected].sort());
      assert.equal(new Set(ok.map((e) => e.id)).size, ok.length);
      const units = ok.filter((e) => e.surface === 'rpc' && e.method === 'getTransaction').reduce((a, e) => a + e.units, 0);
      assert.equal(units, 100);
      for (const m of got.messages) assert.equal(m.key?.toString('utf8'), 'bill-me');
    } finally {
      await reader.close();
    }
  });
});
