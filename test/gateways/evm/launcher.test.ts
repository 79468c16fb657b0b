import assert from 'node:assert/strict';
import { parseConfig } from '../../../infra/config';
import { launch } from '../../../infra/launcher';
import { quietLog } from '../../support/log-capture';
import { rawRequest, rpcBody, WsRpc } from './support';
import { waitFor } from '../../support/wait';

// `npm start`'s EVM part: the launcher starts a local anvil per chain that asks for one, the gateway in front,
// and reports the URLs under evm.<chain id>; stop() ends the anvil nodes too.

describe('launcher: EVM endpoints with local anvil nodes', () => {
  it('serves chains 56 and 137 from their own anvil and lists them under evm.56 and evm.137', async () => {
    const { log } = quietLog();
    const cfg = parseConfig({
      localchain: { enabled: false },
      ingest: { enabled: false },
      fanout: { enabled: false },
      metrics: { enabled: false },
      demo: { enabled: false },
      gateways: {
        evm: {
          enabled: true,
          serve: [56, 137],
          auth: { mode: 'none' },
          chains: {
            56: { http: '127.0.0.1:0', ws: '127.0.0.1:0', anvil: true },
            137: { http: '127.0.0.1:0', ws: '127.0.0.1:0', anvil: true, anvilBlockTime: 1 },
          },
        },
      },
    });
    const running = await launch(cfg, log);
    let stopped = false;
    try {
      const evm = running.endpoints.evm!;
      assert.deepEqual(Object.keys(evm).sort(), ['137', '56']);
      for (const [id, hex] of [['56', '0x38'], ['137', '0x89']] as const) {
        assert.match(evm[id]!.http, /^http:\/\/127\.0\.0\.1:\d+$/);
        assert.match(evm[id]!.ws, /^ws:\/\/127\.0\.0\.1:\d+$/);
        const r = await rawRequest(evm[id]!.http, { body: rpcBody('eth_chainId') });
        assert.equal(r.status, 200);
        assert.equal((r.json() as { result: string }).result, hex);
        const ws = await WsRpc.open(evm[id]!.ws);
        assert.equal((await ws.call('eth_chainId')).result, hex);
        ws.close();
      }
      const http137 = evm['137']!.http;
      await running.stop();
      stopped = true;
      await assert.rejects(rawRequest(http137, { body: rpcBody('eth_chainId') }));
    } finally {
      if (!stopped) await running.stop();
    }
  });

  it('anvilPruneHistory: that chain\'s anvil keeps no past state (what made it grow), the other answers at a past block', async () => {
    const { log } = quietLog();
    const cfg = parseConfig({
      localchain: { enabled: false },
      ingest: { enabled: false },
      fanout: { enabled: false },
      metrics: { enabled: false },
      demo: { enabled: false },
      gateways: {
        evm: {
          enabled: true,
          serve: [56, 137],
          auth: { mode: 'none' },
          chains: {
            56: { http: '127.0.0.1:0', ws: '127.0.0.1:0', anvil: true, anvilBlockTime: 1, anvilPruneHistory: true },
            137: { http: '127.0.0.1:0', ws: '127.0.0.1:0', anvil: true, anvilBlockTime: 1 },
          },
        },
      },
    });
    const running = await launch(cfg, log);
    try {
      const evm = running.endpoints.evm!;
      const call = async (id: string, method: string, params: unknown[]): Promise<{ result?: string; error?: { message: string } }> =>
        (await rawRequest(evm[id]!.http, { body: rpcBody(method, params) })).json() as { result?: string; error?: { message: string } };
      // anvil's first dev account, funded at genesis on both.
      const dev = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
      for (const id of ['56', '137']) await waitFor(async () => Number((await call(id, 'eth_blockNumber', [])).result) >= 3, 30_000, `chain ${id} at block 3`, 200);
      const pruned = await call('56', 'eth_getBalance', [dev, '0x1']);
      assert.match(pruned.error?.message ?? '', /out ?of ?range|BlockOutOfRange/i, JSON.stringify(pruned));
      const kept = await call('137', 'eth_getBalance', [dev, '0x1']);
      assert.ok(kept.result !== undefined && BigInt(kept.result) > 0n, JSON.stringify(kept));
      // The latest state answers on both.
      assert.ok((await call('56', 'eth_getBalance', [dev, 'latest'])).result !== undefined);
    } finally {
      await running.stop();
    }
  });
});
