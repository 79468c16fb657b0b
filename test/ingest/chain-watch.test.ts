import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { SlotStatusCode } from '../../bus/topics/stream-slot-status';
import type { ChainStatusEvent } from '../../ingest/chain-slots';
import { watchChainSlots, type ChainWatch } from '../../ingest/chain-watch';
import { waitFor } from '../support/wait';

// The chain watcher against a PubSub server of the test's own over loopback: it subscribes, turns notifications into
// statuses, comes back after the node drops the connection (statuses neither repeated nor lost across it), polls
// getSlot at confirmed, and says why when the node refuses the subscription.

const S = SlotStatusCode;

interface Node {
  url: string;
  conns: WebSocket[];
  subscribes: number;
  close(): Promise<void>;
}

async function node(refuse = false): Promise<Node> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const n: Node = {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    conns: [],
    subscribes: 0,
    close: () => new Promise<void>((r) => {
      for (const c of wss.clients) c.terminate();
      wss.close(() => r());
    }),
  };
  wss.on('connection', (ws) => {
    n.conns.push(ws);
    ws.on('message', (d: Buffer) => {
      const m = JSON.parse(d.toString()) as { id: number; method: string };
      if (m.method !== 'slotSubscribe') return;
      n.subscribes++;
      ws.send(JSON.stringify(refuse ? { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } } : { jsonrpc: '2.0', id: m.id, result: 7 }));
    });
  });
  return n;
}

function notify(ws: WebSocket, slot: number, parent: number, root: number): void {
  ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'slotNotification', params: { result: { slot, parent, root }, subscription: 7 } }));
}

describe('ingest chain watcher (slotSubscribe over a real WebSocket)', function () {
  this.timeout(30_000);
  let n: Node | undefined;
  let w: ChainWatch | undefined;
  afterEach(async () => {
    w?.close();
    await n?.close();
  });

  it('subscribes, derives statuses, reconnects after the node drops it, and polls the confirmed slot', async () => {
    n = await node();
    const got: ChainStatusEvent[] = [];
    let confirmed = 0;
    w = watchChainSlots({
      wsUrl: n.url,
      rpcUrl: '',
      confirmedPollMs: 50,
      emit: (e) => void got.push(e),
      rpc: async <T>(method: string) => {
        assert.equal(method, 'getSlot');
        return confirmed as T;
      },
    });
    await w.ready;
    notify(n.conns[0]!, 101, 100, 90);
    await waitFor(() => got.length >= 4, 5000, 'first statuses');
    n.conns[0]!.terminate(); // the node drops the connection
    await waitFor(() => n!.subscribes === 2, 10_000, 'resubscribed');
    notify(n.conns[1]!, 102, 101, 100);
    confirmed = 102;
    await waitFor(() => got.some((e) => e.slot === 102n && e.status === S.confirmed), 5000, 'confirmed by the poll');
    const bySlot = (s: number): number[] => got.filter((e) => e.slot === BigInt(s)).map((e) => e.status);
    assert.deepEqual(bySlot(90), [S.processed, S.confirmed, S.finalized]);
    assert.deepEqual(bySlot(100), [S.processed, S.confirmed, S.finalized]);
    assert.deepEqual(bySlot(101), [S.processed, S.confirmed]);
    assert.deepEqual(bySlot(102), [S.processed, S.confirmed]); // a confirmed slot was processed by the node
    assert.equal(w.stats().reconnects, 1);
  });

  it('a node that refuses slotSubscribe: ready rejects with its reason, and the URL is not in it', async () => {
    n = await node(true);
    w = watchChainSlots({ wsUrl: n.url, rpcUrl: '', confirmedPollMs: 1000, emit: () => {} });
    await assert.rejects(w.ready, (e: Error) => /slotSubscribe refused: Method not found/.test(e.message) && !e.message.includes('127.0.0.1'));
  });
});
