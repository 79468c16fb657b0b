import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { jsonRpc, JsonRpcError } from '../../infra/base/json-rpc';

// The one JSON-RPC client (the local chain's callers, the leader schedule): results, the node's errors, HTTP
// failures and timeouts, each an error naming the method and never the URL (it may carry a key).

describe('infra: JSON-RPC client', () => {
  let server: http.Server;
  let url: string;
  const seen: Array<{ id: unknown; method: unknown; params: unknown }> = [];

  before(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const { id, method, params } = JSON.parse(body) as { id: number; method: string; params: unknown[] };
        seen.push({ id, method, params });
        if (method === 'down') return void res.writeHead(503).end();
        if (method === 'slow') return void setTimeout(() => res.writeHead(200).end('{}'), 1_000);
        const answer = method === 'bad' ? { error: { code: -32602, message: 'Invalid params' } } : { result: { echo: params } };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, ...answer }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/secret-key-path`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const rejectsWith = async (p: Promise<unknown>, message: string, code: number | undefined): Promise<void> => {
    await assert.rejects(p, (e: unknown) => {
      assert.ok(e instanceof JsonRpcError);
      assert.equal(e.message, message);
      assert.equal(e.code, code);
      assert.doesNotMatch(e.message + String(e.stack), /127\.0\.0\.1|secret-key-path/);
      return true;
    });
  };

  it('posts JSON-RPC 2.0 with increasing ids and answers the result', async () => {
    const call = jsonRpc(url);
    assert.deepEqual(await call('echo', [1, 'a']), { echo: [1, 'a'] });
    assert.deepEqual(await call('echo'), { echo: [] });
    assert.deepEqual(seen.slice(-2).map((s) => s.id), [1, 2]);
  });

  it("a node's error carries its code and message; HTTP failures and timeouts their kind; never the URL", async () => {
    const call = jsonRpc(url, 200);
    await rejectsWith(call('bad'), 'bad: RPC error -32602 Invalid params', -32602);
    await rejectsWith(call('down'), 'down: HTTP 503', undefined);
    await rejectsWith(call('slow'), 'slow: request failed (TimeoutError)', undefined);
    await rejectsWith(jsonRpc('http://127.0.0.1:1/secret-key-path')('getSlot'), 'getSlot: request failed (TypeError)', undefined);
  });
});
