import assert from 'node:assert/strict';
import path from 'node:path';
import { Connection } from '@solana/web3.js';
import { applyEnv, parseConfig } from '../../../infra/config';
import { ConfigError } from '../../../infra/base/config-read';
import { launch } from '../../../infra/launcher';
import { parseRpcGatewayConfig } from '../../../gateways/rpc/config';
import { quietLog } from '../../support/log-capture';
import { projectRoot } from '../../support/paths';
import { closeConnection } from '../../infra/local/chain/support';
import { waitFor } from '../../support/wait';
import { post } from '../fake-node';

// The chain gateway in `meridian start`: config section gateways.rpc, upstream = the local chain node the
// launcher runs, endpoints keys rpc.http / rpc.ws, the local rentals file admitting this machine.

describe('chain gateway: configuration', () => {
  it('defaults', () => {
    const c = parseRpcGatewayConfig({});
    assert.equal(c.port, 8899);
    assert.equal(c.wsPort, 8900);
    assert.equal(c.rpsWindowMs, 10_000);
    assert.equal(c.weights.getTransaction, 10);
    assert.equal(c.weights.getProgramAccounts, 30);
    assert.ok(c.scanMethods.includes('getProgramAccounts'));
    assert.deepEqual(c.neverRetry, ['sendTransaction', 'requestAirdrop']);
    assert.equal(c.auth.mode, 'rentals');
  });

  it('weights and upstreams from the file and the environment; clear errors that never echo a URL', () => {
    const raw = applyEnv({ gateways: { rpc: { weights: { getSlot: 3 } } } }, {
      MERIDIAN__GATEWAYS__RPC__UPSTREAMS: '[{"http":"http://node-a:8899/secret-key","ws":"ws://node-a:8900/secret-key"}]',
      MERIDIAN__GATEWAYS__RPC__REGION: 'FRA',
      MERIDIAN__GATEWAYS__RPC__ENABLED: 'true',
    });
    const c = parseConfig(raw).gateways.rpc;
    assert.equal(c.enabled, true);
    assert.equal(c.weights.getSlot, 3);
    assert.equal(c.weights.getTransaction, 10);
    assert.equal(c.upstreams.length, 1);
    assert.equal(c.region, 'fra');
    assert.throws(() => parseRpcGatewayConfig({ upstreams: [{ http: 'ftp://x/secret-key' }] }), (e: Error) => e instanceof ConfigError && /upstreams\[0\]\.http/.test(e.message) && !e.message.includes('secret-key'));
    assert.throws(() => parseRpcGatewayConfig({ weights: { getSlot: -1 } }), /gateways\.rpc\.weights\.getSlot/);
    assert.throws(() => parseRpcGatewayConfig({ auth: { mode: 'open' } }), /gateways\.rpc\.auth\.mode/);
  });
});

describe('chain gateway: in the launcher', function () {
  this.timeout(120_000);

  it('serves rpc.http and rpc.ws in front of the local chain node, admitting this machine by its rental', async () => {
    const { log, lines } = quietLog();
    const rentalsFile = path.join(projectRoot(), 'infra', 'config', 'local-rentals.json');
    const cfg = parseConfig({
      localchain: { enabled: true, listen: '127.0.0.1:0', slotMs: 100 },
      ingest: { enabled: false },
      fanout: { enabled: false },
      rentals: { file: rentalsFile },
      metrics: { enabled: false },
      demo: { enabled: false },
      gateways: { rpc: { enabled: true, listen: '127.0.0.1:0', wsListen: '127.0.0.1:0', region: 'local' } },
    });
    const running = await launch(cfg, log);
    try {
      const e = running.endpoints;
      assert.match(e.rpc!.http, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.match(e.rpc!.ws, /^ws:\/\/127\.0\.0\.1:\d+$/);
      assert.notEqual(e.rpc!.http, e.chain!.http);
      const conn = new Connection(e.rpc!.http, { commitment: 'confirmed', wsEndpoint: e.rpc!.ws });
      assert.equal(typeof (await conn.getSlot()), 'number');
      const slots: number[] = [];
      const id = conn.onSlotChange((s) => slots.push(s.slot));
      await waitFor(() => slots.length >= 2, 20_000, 'slot notifications through rpc.ws');
      await conn.removeSlotChangeListener(id);
      closeConnection(conn);
      // Another address is not this machine's rental.
      assert.equal((await post(e.rpc!.http, '{"jsonrpc":"2.0","id":1,"method":"getSlot"}', { localAddress: '127.0.0.2' })).status, 403);
    } finally {
      await running.stop();
    }
    // The lines that describe the node and the gateway's upstreams were logged (so the check below has them to
    // read); none of the lines holds a URL.
    const msgs = lines.map((l) => (JSON.parse(l) as { msg: string }).msg);
    for (const m of ['local chain node started', 'chain JSON-RPC gateway listening']) assert.ok(msgs.includes(m), `"${m}" among the log lines: ${msgs.join(' | ')}`);
    for (const l of lines) assert.ok(!/(https?|wss?):\/\//.test(l), `a URL in a log line: ${l}`);
  });
});
