import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import bs58 from 'bs58';
import { leaderKeysFor, RpcLeaderSchedule } from '../../ingest/leader-schedule';
import { jsonRpc } from '../../infra/base/json-rpc';
import { createLogger } from '../../infra/base/log';

// Leader keys per configured mode; the rpc mode against a local JSON-RPC server over real HTTP.

const A = Buffer.alloc(32, 1);
const B = Buffer.alloc(32, 2);
const SLOTS_PER_EPOCH = 32;

interface FakeNode {
  url: string;
  calls: Array<{ method: string; params: unknown[] }>;
  state: { absoluteSlot: number; fail: boolean };
  close(): Promise<void>;
}

/** Epoch e = slots [32e, 32e + 32): A leads even 4-slot groups, B odd ones; epoch 3's schedule is unknown. */
async function fakeNode(): Promise<FakeNode> {
  const calls: FakeNode['calls'] = [];
  const state = { absoluteSlot: 40, fail: false };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const { id, method, params } = JSON.parse(body) as { id: number; method: string; params: unknown[] };
      calls.push({ method, params });
      if (state.fail) {
        res.writeHead(503).end();
        return;
      }
      let result: unknown;
      if (method === 'getEpochInfo') {
        const epoch = Math.floor(state.absoluteSlot / SLOTS_PER_EPOCH);
        result = { epoch, absoluteSlot: state.absoluteSlot, slotIndex: state.absoluteSlot % SLOTS_PER_EPOCH, slotsInEpoch: SLOTS_PER_EPOCH, blockHeight: 1, transactionCount: 1 };
      } else if (method === 'getLeaderSchedule') {
        const first = params[0] as number;
        const epoch = first / SLOTS_PER_EPOCH;
        if (epoch >= 3) result = null;
        else {
          const a: number[] = [];
          const b: number[] = [];
          for (let i = 0; i < SLOTS_PER_EPOCH; i++) (Math.floor(i / 4) % 2 === 0 ? a : b).push(i);
          result = { [bs58.encode(A)]: a, [bs58.encode(B)]: b, notakey: [0], [bs58.encode(Buffer.alloc(5))]: [1] };
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/secret-key-path`, calls, state, close: () => new Promise((r) => server.close(() => r())) };
}

describe('ingest: leader keys', () => {
  it('off answers null; fixed answers the key for every slot', () => {
    assert.equal(leaderKeysFor({ mode: 'off' }).leaderFor(5), null);
    const fixed = leaderKeysFor({ mode: 'fixed', key: bs58.encode(A) });
    assert.ok((fixed.leaderFor(0) as Buffer).equals(A));
    assert.ok((fixed.leaderFor(123_456_789) as Buffer).equals(A));
    assert.throws(() => leaderKeysFor({ mode: 'fixed', key: bs58.encode(Buffer.alloc(31)) }), RangeError);
  });

  it('rpc: maps slots of the current and next epoch to their leaders over JSON-RPC', async () => {
    const node = await fakeNode();
    const lines: string[] = [];
    const log = createLogger({ level: 'info', destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) }) });
    const s = leaderKeysFor({ mode: 'rpc', rpcUrl: node.url, refreshMs: 60_000 }, log);
    try {
      await s.ready;
      assert.deepEqual(s.epochs(), [1, 2]);
      assert.ok((s.leaderFor(32) as Buffer).equals(A));
      assert.ok((s.leaderFor(36) as Buffer).equals(B));
      assert.ok((s.leaderFor(64 + 8) as Buffer).equals(A)); // next epoch
      assert.equal(s.leaderFor(31), 'unknown'); // previous epoch never fetched
      assert.equal(s.leaderFor(96), 'unknown'); // epoch 3 not published yet
      assert.deepEqual(node.calls.map((c) => c.method), ['getEpochInfo', 'getLeaderSchedule', 'getLeaderSchedule']);
      assert.deepEqual(node.calls.filter((c) => c.method === 'getLeaderSchedule').map((c) => c.params[0]), [32, 64]);

      // The chain moves into epoch 2: epoch 3 is asked for (still null), 1 is kept as the previous epoch.
      node.state.absoluteSlot = 70;
      await (s as RpcLeaderSchedule).refresh();
      assert.deepEqual(s.epochs(), [1, 2]);
      // Node down: schedules held are kept, the failure is logged without the URL.
      node.state.fail = true;
      await (s as RpcLeaderSchedule).refresh();
      assert.ok((s.leaderFor(72) as Buffer).equals(A));
      const warn = lines.join('');
      assert.match(warn, /leader schedule refresh failed/);
      assert.match(warn, /HTTP 503/);
      assert.doesNotMatch(warn, /127\.0\.0\.1|secret-key-path/);
    } finally {
      s.close();
      await node.close();
    }
  });

  it('rpc: an unreachable node leaves every slot unknown (and start does not fail)', async () => {
    const rpc = jsonRpc('http://127.0.0.1:1/', 2000);
    const s = new RpcLeaderSchedule(rpc, 60_000);
    try {
      await s.ready;
      assert.equal(s.leaderFor(1), 'unknown');
      assert.deepEqual(s.epochs(), []);
    } finally {
      s.close();
    }
  });

  it('rpc: rejects implausible answers instead of allocating for them', async () => {
    const s = new RpcLeaderSchedule(async (method) => (method === 'getEpochInfo' ? { epoch: 1, absoluteSlot: 5, slotIndex: 1, slotsInEpoch: 2 ** 40 } : {}), 60_000);
    try {
      await s.ready;
      assert.deepEqual(s.epochs(), []);
    } finally {
      s.close();
    }
  });
});
