import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { rentalsFromList } from '../../../bus/rental-registry';
import { parseRental } from '../../../bus/topics/rentals';
import { startAnvil, type Anvil } from '../../../infra/local/anvil/anvil';
import { Registry } from '../../../infra/base/metrics';
import { parseEvmConfig } from '../../../gateways/evm/config';
import { startEvmGateway } from '../../../gateways/evm/gateway';
import { createPublicClient, createWalletClient, http as viemHttp, keccak256, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { quietLog } from '../../support/log-capture';
import { waitFor } from '../../support/wait';
import { DEV_ADDR_1, DEV_KEY_0, WsRpc, rawRequest, rpcBody, wsUpgrade } from './support';

// Upstream trouble with real anvil nodes: a node that goes down and comes back, failover of reads past a node
// that drops requests (and no second copy of a transaction), closing in both directions, a slow WebSocket client.

const rentals = rentalsFromList([parseRental({ id: 'r1', ips: ['127.0.0.1'] })]);

function gatewayConfig(upstreams: unknown[], limits: Record<string, number> = {}, maxStallMs = 0): ReturnType<typeof parseEvmConfig> {
  return parseEvmConfig({
    enabled: true,
    serve: [56],
    auth: { mode: 'ip' },
    health: { intervalMs: 100, timeoutMs: 500, maxStallMs },
    upstream: { timeoutMs: 5_000 },
    limits,
    chains: { 56: { http: '127.0.0.1:0', ws: '127.0.0.1:0', upstreams } },
  });
}

function errorOf(body: string): { code: number; message: string } {
  return (JSON.parse(body) as { error: { code: number; message: string } }).error;
}

function gaugeValue(registry: Registry, name: string): number {
  const line = registry.render().split('\n').find((l) => l.startsWith(`${name}{`));
  assert.ok(line !== undefined, `metric ${name} exists`);
  return Number(line.split(' ').pop());
}

describe('EVM endpoints: upstream faults', function () {
  const { log } = quietLog('info');

  it('answers 503 -32099 while the only upstream is down, and serves again when it comes back, without a restart', async () => {
    let node: Anvil = await startAnvil({ chainId: 56 });
    const registry = new Registry();
    const gw = await startEvmGateway(gatewayConfig([node.httpUrl]), { rentals, log, registry });
    const { http: url, ws } = gw.chains[0]!;
    try {
      assert.equal((await rawRequest(url, { body: rpcBody('eth_chainId') })).status, 200);
      const sub = await WsRpc.open(ws);
      assert.equal((await sub.call('eth_chainId')).result, '0x38');

      await node.stop();
      // The open WebSocket follows its upstream down.
      await waitFor(() => sub.closed !== null, 10_000, 'the client socket to close');
      const down = await rawRequest(url, { body: rpcBody('eth_chainId') });
      assert.equal(down.status, 503);
      assert.equal(errorOf(down.body).code, -32099);
      assert.ok(errorOf(down.body).message.startsWith('Server is not available at the moment'));
      await waitFor(() => gw.chains[0]!.pool.healthyCount() === 0, 10_000, 'the probe to mark it down');
      const batch = await rawRequest(url, { body: `[${rpcBody('eth_chainId')},${rpcBody('eth_blockNumber', [], 2)}]` });
      assert.equal(batch.status, 503);
      assert.equal(errorOf(batch.body).code, -32099);
      const up = await wsUpgrade(ws);
      assert.equal(up.status, 503);
      assert.equal(errorOf(up.body).code, -32099);

      node = await startAnvil({ chainId: 56, port: node.port });
      await waitFor(() => gw.chains[0]!.pool.healthyCount() === 1, 10_000, 'the probe to bring it back');
      const again = await rawRequest(url, { body: rpcBody('eth_chainId') });
      assert.equal(again.status, 200);
      assert.equal((JSON.parse(again.body) as { result: string }).result, '0x38');
      const sub2 = await WsRpc.open(ws);
      assert.equal((await sub2.call('eth_chainId')).result, '0x38');
      sub2.close();
      await waitFor(() => gaugeValue(registry, 'meridian_gateway_ws_connections') === 0, 5_000, 'no proxied socket left');
    } finally {
      await gw.close();
      await node.stop();
    }
  });

  it('takes a node whose block number stops moving out of service, and back once it moves again', async () => {
    const node = await startAnvil({ chainId: 56 }); // no block time: it mines only when asked
    const gw = await startEvmGateway(gatewayConfig([node.httpUrl], {}, 400), { rentals, log, registry: new Registry() });
    const { http: url, pool } = gw.chains[0]!;
    try {
      assert.equal((await rawRequest(url, { body: rpcBody('eth_chainId') })).status, 200);
      await waitFor(() => pool.healthyCount() === 0, 10_000, 'the stalled node to be marked unhealthy');
      const stalled = await rawRequest(url, { body: rpcBody('eth_chainId') });
      assert.equal(stalled.status, 503);
      assert.equal(errorOf(stalled.body).code, -32099);
      await rawRequest(node.httpUrl, { body: rpcBody('evm_mine') }); // straight to the node
      await waitFor(() => pool.healthyCount() === 1, 10_000, 'the moving node to be healthy again');
      assert.equal((await rawRequest(url, { body: rpcBody('eth_chainId') })).status, 200);
    } finally {
      await gw.close();
      await node.stop();
    }
  });

  it('fails reads over past an upstream that drops them, and never sends eth_sendRawTransaction twice', async () => {
    const node = await startAnvil({ chainId: 56 });
    // A faulty upstream: healthy to the probe (it relays eth_blockNumber to the real node), but it drops every
    // other request on the floor after reading it, and counts what it was sent.
    const seen: string[] = [];
    const faulty = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const method = (JSON.parse(body) as { method: string }).method;
        if (method === 'eth_blockNumber' && body.includes('"id":1,')) {
          void fetch(node.httpUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(async (r) => res.end(await r.text()));
          return;
        }
        seen.push(method);
        req.socket.destroy();
      });
    });
    await new Promise<void>((r) => faulty.listen(0, '127.0.0.1', r));
    const faultyUrl = `http://127.0.0.1:${(faulty.address() as AddressInfo).port}`;
    const gw = await startEvmGateway(gatewayConfig([{ http: faultyUrl }, { http: node.httpUrl, ws: node.wsUrl }]), { rentals, log, registry: new Registry() });
    const { http: url, pool } = { http: gw.chains[0]!.http, pool: gw.chains[0]!.pool };
    const direct = createPublicClient({ transport: viemHttp(node.httpUrl) });
    try {
      // Reads: whichever upstream is picked, every one is answered (the dropped ones again by the real node).
      for (let i = 0; i < 6; i++) {
        await waitFor(() => pool.healthyCount() === 2, 10_000, 'both upstreams healthy');
        const r = await rawRequest(url, { body: rpcBody('eth_getBalance', [DEV_ADDR_1, 'latest']) });
        assert.equal(r.status, 200, `read ${i}: ${r.body}`);
        assert.match((JSON.parse(r.body) as { result: string }).result, /^0x[0-9a-f]+$/);
      }
      assert.ok(seen.includes('eth_getBalance'), 'some reads reached the faulty upstream first');

      // A transaction that lands on the faulty upstream is not sent again anywhere.
      const account = privateKeyToAccount(DEV_KEY_0);
      let dropped: { hash: Hex; status: number; code: number } | undefined;
      for (let attempt = 0; attempt < 20 && dropped === undefined; attempt++) {
        await waitFor(() => pool.healthyCount() === 2, 10_000, 'both upstreams healthy');
        const nonce = await direct.getTransactionCount({ address: account.address });
        const raw = await account.signTransaction({ type: 'legacy', chainId: 56, to: DEV_ADDR_1, value: 1n, nonce, gas: 21_000n, gasPrice: 2_000_000_000n });
        const before = seen.filter((m) => m === 'eth_sendRawTransaction').length;
        const r = await rawRequest(url, { body: rpcBody('eth_sendRawTransaction', [raw]) });
        if (seen.filter((m) => m === 'eth_sendRawTransaction').length > before) {
          dropped = { hash: keccak256(raw), status: r.status, code: errorOf(r.body).code };
        } else {
          assert.equal(r.status, 200, r.body);
        }
      }
      assert.ok(dropped !== undefined, 'a transaction went to the faulty upstream');
      assert.equal(dropped.status, 503);
      assert.equal(dropped.code, -32099);
      assert.equal(seen.filter((m) => m === 'eth_sendRawTransaction').length, 1, 'the faulty upstream got it once');
      // …and the healthy node never got a second copy.
      assert.equal(await direct.getTransaction({ hash: dropped.hash }).catch(() => null), null);
    } finally {
      await gw.close();
      faulty.close();
      faulty.closeAllConnections();
      await node.stop();
    }
  });

  it('closes the upstream socket when the client closes, and disconnects a client that does not read', async () => {
    const node = await startAnvil({ chainId: 56 });
    const registry = new Registry();
    const gw = await startEvmGateway(gatewayConfig([node.httpUrl], { wsMaxBufferedBytes: 256 * 1024 }), { rentals, log, registry });
    const { http: url, ws } = gw.chains[0]!;
    try {
      const polite = await WsRpc.open(ws);
      assert.equal((await polite.call('eth_chainId')).result, '0x38');
      assert.equal(gaugeValue(registry, 'meridian_gateway_ws_connections'), 1);
      polite.close();
      await waitFor(() => gaugeValue(registry, 'meridian_gateway_ws_connections') === 0, 5_000, 'the proxied pair to close');

      // A 24,576-byte contract (EIP-170's maximum, all zero bytes): eth_getCode returns ~49 KB of hex each time.
      // Init code: PUSH2 0x6000, PUSH1 0, RETURN — returns 24,576 bytes of fresh (zero) memory as the runtime.
      const wallet = createWalletClient({ account: privateKeyToAccount(DEV_KEY_0), transport: viemHttp(url) });
      const client = createPublicClient({ transport: viemHttp(url) });
      const deployed = await client.waitForTransactionReceipt({ hash: await wallet.deployContract({ abi: [], bytecode: '0x6160006000f3', chain: null }), pollingInterval: 50 });
      const big = deployed.contractAddress!;
      assert.equal((await client.getCode({ address: big }))!.length, 2 + 2 * 24_576);

      const slow = await WsRpc.open(ws);
      const sock = (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
      sock.pause(); // reads nothing from now on
      for (let i = 0; i < 600; i++) slow.ws.send(rpcBody('eth_getCode', [big, 'latest'], i + 1));
      await waitFor(() => Number(/meridian_gateway_ws_slow_closed_total\{[^}]*\} (\d+)/.exec(registry.render())?.[1] ?? 0) === 1, 30_000, 'the slow client to be closed');
      await waitFor(() => gaugeValue(registry, 'meridian_gateway_ws_connections') === 0, 5_000, 'the slow pair to be gone');
      sock.resume();
      await waitFor(() => slow.closed !== null, 10_000, 'the client to see its socket closed');
      assert.ok(slow.messages.length < 600, `not everything was buffered for it (${slow.messages.length} replies)`);
      // Everyone else is still served.
      assert.equal((await rawRequest(url, { body: rpcBody('eth_chainId') })).status, 200);
    } finally {
      await gw.close();
      await node.stop();
    }
  });
});
