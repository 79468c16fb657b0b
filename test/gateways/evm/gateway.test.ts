import assert from 'node:assert/strict';
import type { BusMessage } from '../../../bus/bus';
import { EmbeddedBus } from '../../../bus/embedded';
import { projectRentals, type RentalProjection } from '../../../bus/rental-registry';
import { TOPIC, defaultTopicSpecs } from '../../../bus/topics';
import { encodeRental, parseRental } from '../../../bus/topics/rentals';
import { decodeUsageEvent, type UsageEvent } from '../../../bus/topics/usage-events';
import { UsageProducer } from '../../../bus/usage-producer';
import { Registry } from '../../../infra/base/metrics';
import { parseEvmConfig } from '../../../gateways/evm/config';
import { startEvmGateway, type RunningEvmGateway } from '../../../gateways/evm/gateway';
import { createPublicClient, createWalletClient, http, webSocket, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { quietLog } from '../../support/log-capture';
import { waitFor } from '../../support/wait';
import { DEV_ADDR_1, DEV_KEY_0, PING_TOPIC, WsRpc, pingContractCode, rawRequest, rpcBody, startTwoAnvils, wsUpgrade, type TwoChains } from './support';

// The EVM endpoints end to end: two real anvil nodes (chain ids 56 and 137), the gateway in front of them on
// loopback, viem as the client, the rentals topic and usage events on the embedded bus.

const RENTAL = parseRental({ id: 'evm-rental', ips: ['127.0.0.1'], rps: 100, tps: 10, region: 'fra' });

describe('EVM endpoints (two real anvil nodes through the gateway)', function () {
  let nodes: TwoChains;
  let bus: EmbeddedBus;
  let usage: UsageProducer;
  let rentals: RentalProjection;
  let gw: RunningEvmGateway;
  const usageSeen: UsageEvent[] = [];
  const registry = new Registry();
  const { log, lines } = quietLog('info');

  const chain = (id: number): { http: string; ws: string } => gw.chains.find((c) => c.chainId === id)!;

  before(async () => {
    nodes = await startTwoAnvils();
    bus = new EmbeddedBus({ log });
    await bus.createTopics(defaultTopicSpecs({}));
    await bus.produce(TOPIC.rentals, [encodeRental(RENTAL)]);
    rentals = await projectRentals(bus, log, undefined, { tailIdleMs: 100 });
    usage = new UsageProducer(bus, { log, registry });
    const consumer = await bus.consume({
      topics: [TOPIC.usageEvents],
      from: 'beginning',
      onBatch: (ms: BusMessage[]) => {
        for (const m of ms) {
          const e = decodeUsageEvent(m.value!);
          if (!('error' in e)) usageSeen.push(e);
        }
      },
    });
    await consumer.ready;
    const cfg = parseEvmConfig({
      enabled: true,
      serve: [56, 137],
      auth: { mode: 'ip' },
      health: { intervalMs: 100, maxStallMs: 0 }, // anvil here mines on demand only
      chains: {
        56: { http: '127.0.0.1:0', ws: '127.0.0.1:0', upstreams: [nodes.bsc.httpUrl] },
        137: { http: '127.0.0.1:0', ws: '127.0.0.1:0', upstreams: [nodes.polygon.httpUrl] },
      },
    });
    gw = await startEvmGateway(cfg, { rentals, usage, log, registry });
  });

  after(async () => {
    await gw?.close();
    await usage?.close();
    await rentals?.close();
    await bus?.close();
    await nodes?.stop();
  });

  it('answers eth_chainId 0x38 on the chain-56 endpoint and 0x89 on the chain-137 endpoint, over HTTP and WebSocket', async () => {
    for (const [id, hex] of [[56, '0x38'], [137, '0x89']] as const) {
      const viaHttp = createPublicClient({ transport: http(chain(id).http) });
      assert.equal(await viaHttp.getChainId(), id);
      const raw = await rawRequest(chain(id).http, { body: rpcBody('eth_chainId') });
      assert.equal(raw.status, 200);
      assert.equal((raw.json() as { result: string }).result, hex);
      const ws = webSocket(chain(id).ws);
      const viaWs = createPublicClient({ transport: ws });
      assert.equal(await viaWs.getChainId(), id);
      await (await viaWs.transport.getRpcClient()).close();
    }
  });

  it('sends a signed transfer through the proxy and reads its receipt', async () => {
    const url = chain(137).http;
    const account = privateKeyToAccount(DEV_KEY_0);
    const wallet = createWalletClient({ account, transport: http(url) });
    const client = createPublicClient({ transport: http(url) });
    const before = await client.getBalance({ address: DEV_ADDR_1 });
    const value = 123_456_789n;
    // viem signs locally and sends eth_sendRawTransaction.
    const hash = await wallet.sendTransaction({ to: DEV_ADDR_1, value, chain: null });
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    assert.equal(receipt.status, 'success');
    assert.equal(receipt.transactionHash, hash);
    assert.equal(await client.getBalance({ address: DEV_ADDR_1 }), before + value);
    // The other chain never saw it.
    const other = createPublicClient({ transport: http(chain(56).http) });
    assert.equal(await other.getTransaction({ hash }).catch(() => null), null);
  });

  it('proxies a batch (viem batching, and a raw batch answered item by item)', async () => {
    const client = createPublicClient({ transport: http(chain(56).http, { batch: { batchSize: 10, wait: 5 } }) });
    const [id, block, balance] = await Promise.all([client.getChainId(), client.getBlockNumber(), client.getBalance({ address: DEV_ADDR_1 })]);
    assert.equal(id, 56);
    assert.equal(typeof block, 'bigint');
    assert.ok(balance > 0n);

    const body = JSON.stringify([
      { jsonrpc: '2.0', id: 'a', method: 'eth_chainId', params: [] },
      { jsonrpc: '2.0', id: 'b', method: 'net_version', params: [] },
      { jsonrpc: '2.0', id: 'c', method: 'no_suchMethod', params: [] },
    ]);
    const r = await rawRequest(chain(56).http, { body });
    assert.equal(r.status, 200);
    const items = r.json() as Array<{ id: string; result?: string; error?: { code: number } }>;
    assert.equal(items.length, 3);
    const byId = new Map(items.map((x) => [x.id, x]));
    assert.equal(byId.get('a')!.result, '0x38');
    assert.equal(byId.get('b')!.result, '56');
    assert.ok(byId.get('c')!.error !== undefined, 'the node answers the unknown method with its own error');
  });

  it('delivers newHeads in order while blocks are mined, and stops after eth_unsubscribe', async () => {
    const sub = await WsRpc.open(chain(56).ws);
    try {
      const r = await sub.call('eth_subscribe', ['newHeads']);
      const id = r.result as string;
      assert.match(id, /^0x[0-9a-f]+$/);
      const mine = createPublicClient({ transport: http(chain(56).http) });
      const start = await mine.getBlockNumber();
      for (let i = 0; i < 5; i++) await rawRequest(chain(56).http, { body: rpcBody('evm_mine') });
      await waitFor(() => sub.notifications(id).length >= 5, 10_000, 'five newHeads');
      const heads = sub.notifications(id).map((h) => BigInt(h.number as string));
      assert.equal(heads.length, 5);
      assert.deepEqual(heads, [1n, 2n, 3n, 4n, 5n].map((k) => start + k));

      const un = await sub.call('eth_unsubscribe', [id]);
      assert.equal(un.result, true);
      await rawRequest(chain(56).http, { body: rpcBody('evm_mine') });
      // A later subscription sees the next block; the cancelled one must not have.
      const again = (await sub.call('eth_subscribe', ['newHeads'])).result as string;
      await rawRequest(chain(56).http, { body: rpcBody('evm_mine') });
      await waitFor(() => sub.notifications(again).length >= 1, 10_000, 'a head on the new subscription');
      assert.equal(sub.notifications(id).length, 5, 'nothing arrives after eth_unsubscribe');
    } finally {
      sub.close();
    }
  });

  it('delivers logs of a contract deployed from hand-written bytecode, in order, through viem', async () => {
    const url = chain(137).http;
    const account = privateKeyToAccount(DEV_KEY_0);
    const wallet = createWalletClient({ account, transport: http(url) });
    const client = createPublicClient({ transport: http(url) });
    const deployed = await client.waitForTransactionReceipt({ hash: await wallet.deployContract({ abi: [], bytecode: pingContractCode(), chain: null }), pollingInterval: 50 });
    const address = deployed.contractAddress!;

    const wsClient = createPublicClient({ transport: webSocket(chain(137).ws) });
    const got: Array<{ data: Hex; topics: readonly Hex[] }> = [];
    const { unsubscribe } = await wsClient.transport.subscribe({
      params: ['logs', { address, topics: [PING_TOPIC] }],
      onData: (d) => void got.push((d as { result: { data: Hex; topics: Hex[] } }).result),
      onError: () => undefined,
    });
    try {
      const payloads: Hex[] = ['0x01', '0x0202', '0x030303'];
      for (const data of payloads) await client.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: address, data, chain: null }), pollingInterval: 50 });
      await waitFor(() => got.length >= 3, 10_000, 'three logs');
      assert.equal(got.length, 3);
      assert.deepEqual(got.map((l) => l.data), payloads);
      for (const l of got) assert.deepEqual(l.topics, [PING_TOPIC]);
    } finally {
      await unsubscribe();
      await (await wsClient.transport.getRpcClient()).close();
    }
  });

  it('delivers newPendingTransactions', async () => {
    const sub = await WsRpc.open(chain(56).ws);
    try {
      const id = (await sub.call('eth_subscribe', ['newPendingTransactions'])).result as string;
      const wallet = createWalletClient({ account: privateKeyToAccount(DEV_KEY_0), transport: http(chain(56).http) });
      const hash = await wallet.sendTransaction({ to: DEV_ADDR_1, value: 1n, chain: null });
      await waitFor(() => sub.notifications(id).length >= 1, 10_000, 'a pending transaction');
      assert.deepEqual(sub.notifications(id), [hash]);
    } finally {
      sub.close();
    }
  });

  it('refuses an IP on no allowlist with 403 -32003 (HTTP and the WebSocket upgrade), and admits it once a rental lists it', async () => {
    for (const id of [56, 137]) {
      const r = await rawRequest(chain(id).http, { body: rpcBody('eth_chainId'), localAddress: '127.0.0.2' });
      assert.equal(r.status, 403);
      const e = (r.json() as { error: { code: number; message: string } }).error;
      assert.equal(e.code, -32003);
      assert.ok(e.message.startsWith('You have no access to this service'));
      const up = await wsUpgrade(chain(id).ws, '127.0.0.2');
      assert.equal(up.status, 403);
      assert.equal((JSON.parse(up.body) as { error: { code: number } }).error.code, -32003);
    }
    // An operator adds the address on the rentals topic: the next request is admitted, on both chains.
    await bus.produce(TOPIC.rentals, [encodeRental(parseRental({ id: 'second', ips: ['127.0.0.2'] }))]);
    await waitFor(() => rentals.byIp('127.0.0.2') !== undefined, 10_000, 'the new rental');
    for (const id of [56, 137]) {
      const r = await rawRequest(chain(id).http, { body: rpcBody('eth_chainId'), localAddress: '127.0.0.2' });
      assert.equal(r.status, 200);
      const up = await wsUpgrade(chain(id).ws, '127.0.0.2');
      assert.equal(up.status, 101);
      up.ws!.close();
    }
  });

  it('answers bad input with a clear error and keeps serving', async () => {
    const url = chain(56).http;
    const cases: Array<{ what: string; opts: Parameters<typeof rawRequest>[1]; status: number; code: number; prefix: string }> = [
      { what: 'unparsable JSON', opts: { body: '{"jsonrpc":' }, status: 400, code: -32600, prefix: 'Invalid request body' },
      { what: 'a JSON string', opts: { body: '"eth_chainId"' }, status: 400, code: -32600, prefix: 'Invalid request body' },
      { what: 'an empty batch', opts: { body: '[]' }, status: 400, code: -32600, prefix: 'Invalid request body' },
      { what: 'wrong content-type', opts: { body: rpcBody('eth_chainId'), contentType: 'text/plain' }, status: 400, code: -32600, prefix: 'Invalid request body' },
      { what: 'GET', opts: { method: 'GET', body: '' }, status: 405, code: -32600, prefix: 'Method not allowed' },
      { what: 'another path', opts: { path: '/admin', body: rpcBody('eth_chainId') }, status: 404, code: -32600, prefix: 'Not found' },
    ];
    for (const c of cases) {
      const r = await rawRequest(url, c.opts);
      assert.equal(r.status, c.status, c.what);
      const e = (r.json() as { error: { code: number; message: string } }).error;
      assert.equal(e.code, c.code, c.what);
      assert.ok(e.message.startsWith(c.prefix), `${c.what}: ${e.message}`);
      const ok = await rawRequest(url, { body: rpcBody('eth_chainId') });
      assert.equal(ok.status, 200, `still serving after ${c.what}`);
    }
    const plainOnWs = await rawRequest(chain(56).ws.replace('ws:', 'http:'), { method: 'GET', body: '' });
    assert.equal(plainOnWs.status, 405);
    const wrongPathUpgrade = await wsUpgrade(`${chain(56).ws}/admin`);
    assert.equal(wrongPathUpgrade.status, 404);
    // A malformed message on an open WebSocket is answered on the socket; the socket stays open.
    const sub = await WsRpc.open(chain(56).ws);
    try {
      sub.ws.send('{not json');
      await waitFor(() => sub.messages.length >= 1, 5_000, 'the error reply');
      assert.equal((sub.messages[0]!.error as { code: number }).code, -32600);
      assert.equal((await sub.call('eth_chainId')).result, '0x38');
    } finally {
      sub.close();
    }
  });

  it('emits a usage event per method and request: surface evm, the chain id, the method, the rental', async () => {
    await usage.flush();
    const mark = usageSeen.length;
    const body = JSON.stringify([
      { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] },
      { jsonrpc: '2.0', id: 2, method: 'eth_gasPrice', params: [] },
    ]);
    assert.equal((await rawRequest(chain(137).http, { body })).status, 200);
    assert.equal((await rawRequest(chain(56).http, { body: rpcBody('eth_getBalance', [DEV_ADDR_1, 'latest']) })).status, 200);
    const sub = await WsRpc.open(chain(56).ws);
    assert.equal((await sub.call('eth_subscribe', ['newHeads'])).result !== undefined, true);
    sub.close();
    await usage.flush();
    await waitFor(() => usageSeen.length >= mark + 4, 10_000, 'four usage events');
    const mine = usageSeen.slice(mark).filter((e) => e.rental === RENTAL.id);
    assert.equal(mine.length, 4);
    assert.deepEqual(mine.map((e) => [e.surface, e.chain, e.method, e.units, e.outcome]), [
      ['evm', 137, 'eth_blockNumber', 1, 'ok'],
      ['evm', 137, 'eth_gasPrice', 1, 'ok'],
      ['evm', 56, 'eth_getBalance', 1, 'ok'],
      ['evm', 56, 'eth_subscribe', 1, 'ok'],
    ]);
  });

  it('never writes an endpoint URL into the log', () => {
    assert.ok(lines.length > 0);
    for (const l of lines) {
      assert.ok(!l.includes('http://') && !l.includes('ws://'), `log line carries a URL: ${l.slice(0, 200)}`);
      assert.ok(!l.includes(`:${nodes.bsc.port}`) && !l.includes(`:${nodes.polygon.port}`), `log line carries an upstream address: ${l.slice(0, 200)}`);
    }
  });
});
