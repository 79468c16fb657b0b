import { Connection, Keypair } from '@solana/web3.js';
import WebSocket from 'ws';
import { startLocalChain, type LocalChain, type LocalChainOptions } from '../../../../infra/local/chain';
import { quietLog } from '../../../support/log-capture';

// A node per test file (port 0, loopback), a web3.js Connection on it, and raw JSON-RPC / WebSocket helpers
// for what a client library hides (error codes, notification shapes).

export async function startNode(o: LocalChainOptions = {}): Promise<{ node: LocalChain; lines: string[] }> {
  const { log, lines } = quietLog();
  const node = await startLocalChain({ host: '127.0.0.1', port: 0, slotMs: 100, log, ...o });
  return { node, lines };
}

export function connect(node: LocalChain): Connection {
  return new Connection(node.httpUrl, { commitment: 'confirmed', wsEndpoint: node.wsUrl, disableRetryOnRateLimit: true });
}

/** web3.js reconnects its WebSocket forever; close it before the node goes away. */
export function closeConnection(c: Connection): void {
  const ws = (c as unknown as { _rpcWebSocket?: { setAutoReconnect(on: boolean): void; close(): void } })._rpcWebSocket;
  ws?.setAutoReconnect(false);
  ws?.close();
}

export function payerOf(node: LocalChain): Keypair {
  return Keypair.fromSecretKey(node.payer);
}

export interface RpcReply {
  status: number;
  body: unknown;
  text: string;
}

export async function post(url: string, body: string | object): Promise<RpcReply> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text.length > 0 ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  return { status: res.status, body: parsed, text };
}

export async function rpc(url: string, method: string, params: unknown[] = []): Promise<{ result?: any; error?: { code: number; message: string; data?: any } }> {
  const r = await post(url, { jsonrpc: '2.0', id: 1, method, params });
  return r.body as { result?: unknown; error?: { code: number; message: string } };
}

/** A raw PubSub client: every message kept in order. */
export class WsClient {
  readonly messages: any[] = [];
  private constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => this.messages.push(JSON.parse(d.toString())));
  }

  static async open(url: string): Promise<WsClient> {
    const ws = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new WsClient(ws);
  }

  private nextId = 1;

  /** Sends a request and resolves with its response (matched by id). */
  async call(method: string, params: unknown[] = []): Promise<any> {
    const id = this.nextId++;
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    const deadline = Date.now() + 10_000;
    for (;;) {
      const m = this.messages.find((x) => x.id === id);
      if (m !== undefined) return m;
      if (Date.now() > deadline) throw new Error(`no response to ${method}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  notifications(method: string, subscription?: number): any[] {
    return this.messages.filter((m) => m.method === method && (subscription === undefined || m.params.subscription === subscription));
  }

  close(): void {
    this.ws.close();
  }
}
