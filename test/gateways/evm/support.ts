import http from 'node:http';
import WebSocket from 'ws';
import { keccak256, toHex, type Hex } from 'viem';
import { startAnvil, type Anvil } from '../../../infra/local/anvil/anvil';

// Shared by the EVM gateway tests and the EVM bench: real anvil nodes, anvil's funded dev accounts, a tiny
// contract written as bytecode by hand, and raw HTTP/WebSocket clients that can bind a chosen local address.

/** anvil's first two dev accounts (from its default mnemonic "test test ... junk"), funded with 10,000 ETH each. */
export const DEV_KEY_0: Hex = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
export const DEV_ADDR_1: Hex = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

/** topic0 of the contract's only event. */
export const PING_TOPIC: Hex = keccak256(toHex('Ping(bytes)'));

/**
 * Creation code of a contract whose runtime, on any call, copies the calldata to memory and emits it as
 * LOG1(topic0 = PING_TOPIC, data = calldata). Hand-assembled:
 *
 *   runtime (44 bytes):
 *     36          CALLDATASIZE          size
 *     6000        PUSH1 0               offset in calldata
 *     6000        PUSH1 0               memory destination
 *     37          CALLDATACOPY          mem[0..size) = calldata
 *     7f <32 B>   PUSH32 PING_TOPIC     topic0
 *     36          CALLDATASIZE          size
 *     6000        PUSH1 0               memory offset
 *     a1          LOG1                  log(mem[0..size), topic0)
 *     00          STOP
 *   init (12 bytes): copy the runtime that follows it to memory and return it
 *     602c 600c 6000 39   CODECOPY(dest 0, offset 12, size 44)
 *     602c 6000 f3        RETURN(offset 0, size 44)
 */
export function pingContractCode(): Hex {
  const runtime = `3660006000377f${PING_TOPIC.slice(2)}366000a100`;
  if (runtime.length !== 44 * 2) throw new Error(`runtime is ${runtime.length / 2} bytes, expected 44`);
  return `0x602c600c600039602c6000f3${runtime}`;
}

export interface TwoChains {
  bsc: Anvil;
  polygon: Anvil;
  stop(): Promise<void>;
}

export async function startTwoAnvils(): Promise<TwoChains> {
  const [bsc, polygon] = await Promise.all([startAnvil({ chainId: 56 }), startAnvil({ chainId: 137 })]);
  return { bsc, polygon, stop: async () => void (await Promise.all([bsc.stop(), polygon.stop()])) };
}

export interface RawReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  json(): unknown;
}

/** One HTTP request with a chosen local address (127.0.0.2 stands in for an unregistered egress IP). */
export function rawRequest(url: string, opts: { method?: string; path?: string; body?: string; contentType?: string | null; localAddress?: string } = {}): Promise<RawReply> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (opts.contentType !== null) headers['content-type'] = opts.contentType ?? 'application/json';
    const req = http.request(
      { host: u.hostname, port: u.port, method: opts.method ?? 'POST', path: opts.path ?? '/', headers, localAddress: opts.localAddress, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body) as unknown });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

export function rpcBody(method: string, params: unknown[] = [], id: number | string = 1): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method, params });
}

/** The refusal of a WebSocket upgrade: its HTTP status and body, or 101 when the upgrade was accepted. */
export function wsUpgrade(url: string, localAddress?: string): Promise<{ status: number; body: string; ws?: WebSocket }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { localAddress });
    ws.once('open', () => resolve({ status: 101, body: '', ws }));
    ws.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    ws.once('error', reject);
  });
}

/** A JSON-RPC client over one WebSocket that keeps every message in arrival order. */
export class WsRpc {
  readonly messages: Array<Record<string, unknown>> = [];
  closed: { code: number; reason: string } | null = null;
  private nextId = 1;

  constructor(readonly ws: WebSocket) {
    ws.on('message', (d: Buffer) => this.messages.push(JSON.parse(d.toString('utf8')) as Record<string, unknown>));
    ws.on('close', (code, reason) => (this.closed = { code, reason: reason.toString('utf8') }));
  }

  static open(url: string): Promise<WsRpc> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      ws.once('open', () => resolve(new WsRpc(ws)));
      ws.once('error', reject);
    });
  }

  async call(method: string, params: unknown[] = [], timeoutMs = 10_000): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    this.ws.send(rpcBody(method, params, id));
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = this.messages.find((x) => x.id === id);
      if (m !== undefined) return m;
      if (this.closed !== null) throw new Error(`socket closed (${this.closed.code}) before the reply to ${method}`);
      if (Date.now() > deadline) throw new Error(`no reply to ${method} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  notifications(subscription: string): Array<Record<string, unknown>> {
    return this.messages.filter((m) => m.method === 'eth_subscription' && (m.params as { subscription?: string }).subscription === subscription).map((m) => (m.params as { result: Record<string, unknown> }).result);
  }

  close(): void {
    this.ws.close();
  }
}
