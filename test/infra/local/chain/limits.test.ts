import assert from 'node:assert/strict';
import WebSocket from 'ws';
import type { LocalChain } from '../../../../infra/local/chain';
import { waitFor } from '../../../support/wait';
import { rpc, startNode, WsClient } from './support';

// Bounds: open sockets (HTTP and WebSocket together), subscriptions per connection; and the node keeps
// serving once a client went over them.

describe('local chain: bounds', function () {
  let node: LocalChain;

  before(async () => {
    ({ node } = await startNode({ maxConnections: 3, maxSubscriptionsPerConnection: 3 }));
  });

  after(async () => {
    await node.close();
  });

  it('refuses sockets beyond maxConnections and serves again once one closes', async () => {
    const a = await WsClient.open(node.wsUrl);
    const b = await WsClient.open(node.wsUrl);
    const c = await WsClient.open(node.wsUrl);
    const third = new WebSocket(node.wsUrl);
    const outcome = await new Promise<string>((resolve) => {
      third.once('open', () => resolve('open'));
      third.once('error', () => resolve('error'));
      third.once('close', () => resolve('closed'));
    });
    assert.notEqual(outcome, 'open');
    a.close();
    await waitFor(() => node.stats().wsConnections === 2, 5_000, 'a socket freed');
    const r = await rpc(node.httpUrl, 'getHealth');
    assert.equal(r.result, 'ok');
    b.close();
    c.close();
  });

  it('caps subscriptions per connection', async () => {
    await waitFor(() => node.stats().wsConnections === 0, 5_000, 'sockets closed');
    const ws = await WsClient.open(node.wsUrl);
    for (let i = 0; i < 3; i++) assert.equal(typeof (await ws.call('slotSubscribe')).result, 'number');
    const over = await ws.call('slotSubscribe');
    assert.equal(over.error.code, -32603);
    const samples = await rpc(node.httpUrl, 'getRecentPerformanceSamples', [5]);
    assert.ok(samples.result.length >= 1);
    assert.ok(samples.result[0].numSlots >= 1);
    assert.equal((await rpc(node.httpUrl, 'getHighestSnapshotSlot')).error?.code, -32008);
    ws.close();
  });
});
