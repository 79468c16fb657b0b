import http from 'node:http';
import type { AddressInfo } from 'node:net';

// A controllable chain RPC upstream on loopback (port 0): records every sendTransaction it receives and
// answers simulateTransaction as told — for the preflight rows the local chain node cannot be made to
// produce on demand (an RPC error, a hang past the timeout), and for counting forwards exactly.

export type SimulateMode = 'pass' | 'rpc-error' | 'http-500' | 'hang' | 'garbage';

export interface Upstream {
  url: string;
  /** Every sendTransaction: the decoded transaction bytes and the options object it came with. */
  sends: Array<{ tx: Buffer; options: Record<string, unknown> }>;
  simulations: Array<{ tx: Buffer; options: Record<string, unknown> }>;
  simulate: SimulateMode;
  close(): Promise<void>;
}

export async function startUpstream(): Promise<Upstream> {
  const hung: http.ServerResponse[] = [];
  const up: Upstream = {
    url: '',
    sends: [],
    simulations: [],
    simulate: 'pass',
    close: async () => {
      for (const r of hung) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: number; method: string; params: [string, Record<string, unknown>] };
      const [txText, options] = body.params;
      const tx = Buffer.from(txText, 'base64');
      const reply = (o: unknown): void => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, ...(o as object) }));
      };
      if (body.method === 'sendTransaction') {
        up.sends.push({ tx, options });
        return reply({ result: 'sig' });
      }
      if (body.method !== 'simulateTransaction') return reply({ error: { code: -32601, message: 'Method not found' } });
      up.simulations.push({ tx, options });
      switch (up.simulate) {
        case 'pass':
          return reply({ result: { context: { slot: 5 }, value: { err: null, logs: ['Program 11111111111111111111111111111111 success'], unitsConsumed: 150, accounts: null, returnData: null } } });
        case 'rpc-error':
          return reply({ error: { code: -32016, message: 'Minimum context slot has not been reached' } });
        case 'http-500':
          res.writeHead(500).end('boom');
          return;
        case 'garbage':
          res.writeHead(200).end('<html>');
          return;
        case 'hang':
          hung.push(res);
          return;
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  up.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return up;
}
