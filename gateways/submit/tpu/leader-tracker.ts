import { request } from 'undici';
import WebSocket from 'ws';
import type { Log } from '../../../infra/base/log';
import { LeaderSchedule, parseTpuAddress } from './leader-schedule';
import type { TpuMetrics } from './tpu-metrics';

// Keeps the leader schedule current from our own data first: the slot estimate from ingest's slot events on
// the bus (noteSlot(), fed by the submission service's bus reader: ingest sees a slot's shreds before the chain
// node announces it), else from the chain node's slot notifications (`slotSubscribe` over its WebSocket); the
// schedule from `getSlotLeaders`, fetched again before the estimate runs past it; TPU QUIC addresses from
// `getClusterNodes` (`tpuQuic`), refreshed every `nodesRefreshMs` and on a miss (a leader without a usable
// address, at most once per MISS_REFRESH_MS). Nothing here is on a transaction's path: the route reads the
// schedule synchronously.

export interface LeaderTrackerOptions {
  /** Chain node JSON-RPC (never logged: it may hold a credential). */
  rpcUrl: string;
  /** Its PubSub WebSocket; null = slots come only from noteSlot(). */
  wsUrl: string | null;
  /** Slots of schedule fetched at a time (getSlotLeaders' limit; ≤ 5,000). */
  scheduleSlots: number;
  nodesRefreshMs: number;
  timeoutMs: number;
  log: Log;
  metrics: TpuMetrics;
  /** Called when the leaders of the next windows may have changed (a new slot, schedule or address book). */
  onChange: () => void;
}

const MISS_REFRESH_MS = 5_000;
const RETRY_MS = 1_000;

export class LeaderTracker {
  readonly schedule = new LeaderSchedule();
  private closed = false;
  private ws: WebSocket | null = null;
  private wsRetry: NodeJS.Timeout | null = null;
  private nodesTimer: NodeJS.Timeout | null = null;
  private fetchingLeaders = false;
  private fetchingNodes = false;
  private lastNodesAt = 0;
  private leadersFailedAt = 0;

  constructor(private readonly o: LeaderTrackerOptions) {}

  async start(): Promise<void> {
    if (this.o.wsUrl !== null) this.connectWs();
    // A first slot from getSlot, so the route can work before the first notification.
    const slot = await this.rpc<number>('getSlot', [{ commitment: 'processed' }]).catch(() => null);
    if (typeof slot === 'number') this.noteSlot(slot);
    await this.refreshNodes();
    this.nodesTimer = setInterval(() => void this.refreshNodes(), this.o.nodesRefreshMs);
    this.nodesTimer.unref();
  }

  /** A slot from any source; the highest wins. */
  noteSlot(slot: number): void {
    if (this.closed || !this.schedule.noteSlot(slot)) return;
    if (this.schedule.knownAhead() < this.o.scheduleSlots / 2) void this.refreshLeaders();
    this.o.onChange();
  }

  /** The route found a leader without a usable address: refresh the address book soon (rate-limited). */
  missed(): void {
    if (Date.now() - this.lastNodesAt >= MISS_REFRESH_MS) void this.refreshNodes();
  }

  private async refreshLeaders(): Promise<void> {
    const slot = this.schedule.currentSlot();
    if (slot === null || this.fetchingLeaders || Date.now() - this.leadersFailedAt < RETRY_MS) return;
    this.fetchingLeaders = true;
    try {
      const leaders = await this.rpc<unknown>('getSlotLeaders', [slot, this.o.scheduleSlots]);
      if (!Array.isArray(leaders) || !leaders.every((l) => typeof l === 'string')) throw new Error('getSlotLeaders: not a list of identities');
      this.schedule.setLeaders(slot, leaders as string[]);
      this.o.metrics.refresh('schedule', 'ok');
      this.o.onChange();
    } catch (e) {
      this.leadersFailedAt = Date.now();
      this.o.metrics.refresh('schedule', 'error');
      this.o.log.warn({ error: (e as Error).name, detail: errorText(e) }, 'tpu route: getSlotLeaders failed (retried)');
    } finally {
      this.fetchingLeaders = false;
    }
  }

  private async refreshNodes(): Promise<void> {
    if (this.fetchingNodes || this.closed) return;
    this.fetchingNodes = true;
    this.lastNodesAt = Date.now();
    try {
      const nodes = await this.rpc<unknown>('getClusterNodes', []);
      if (!Array.isArray(nodes)) throw new Error('getClusterNodes: not a list');
      const book = new Map<string, string | null>();
      let bad = 0;
      for (const n of nodes as Array<Record<string, unknown>>) {
        if (typeof n !== 'object' || n === null || typeof n.pubkey !== 'string') {
          bad++;
          continue;
        }
        const addr = parseTpuAddress(n.tpuQuic);
        if (addr === null) bad++;
        book.set(n.pubkey, addr);
      }
      this.schedule.setNodes(book);
      this.o.metrics.refresh('nodes', 'ok');
      this.o.metrics.unusableContacts.set(bad);
      this.o.onChange();
    } catch (e) {
      this.o.metrics.refresh('nodes', 'error');
      this.o.log.warn({ detail: errorText(e) }, 'tpu route: getClusterNodes failed (retried)');
    } finally {
      this.fetchingNodes = false;
    }
  }

  private connectWs(): void {
    if (this.closed || this.o.wsUrl === null) return;
    const ws = new WebSocket(this.o.wsUrl, { handshakeTimeout: this.o.timeoutMs });
    this.ws = ws;
    ws.on('open', () => ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'slotSubscribe' })));
    ws.on('message', (data: Buffer) => {
      const m = /"slot"\s*:\s*(\d+)/.exec(data.toString('utf8'));
      if (m !== null && data.includes('slotNotification')) this.noteSlot(Number(m[1]));
    });
    ws.on('error', () => undefined);
    ws.on('close', () => {
      if (this.ws === ws) this.ws = null;
      if (this.closed) return;
      this.wsRetry = setTimeout(() => this.connectWs(), RETRY_MS);
      this.wsRetry.unref();
    });
  }

  private async rpc<T>(method: string, params: unknown[]): Promise<T> {
    const res = await request(this.o.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      headersTimeout: this.o.timeoutMs,
      bodyTimeout: this.o.timeoutMs,
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`${method}: http ${res.statusCode}`);
    const j = JSON.parse(text) as { result?: T; error?: { code?: number } };
    if (j.error !== undefined) throw new Error(`${method}: rpc error ${j.error.code ?? ''}`);
    return j.result as T;
  }

  close(): void {
    this.closed = true;
    if (this.nodesTimer !== null) clearInterval(this.nodesTimer);
    if (this.wsRetry !== null) clearTimeout(this.wsRetry);
    this.ws?.terminate();
  }
}

/** An error's message without any URL (undici's messages can name the host). */
function errorText(e: unknown): string {
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  return (e instanceof Error ? e.message : String(e)).replace(/\b[a-z]+:\/\/\S+/gi, '<url>').slice(0, 120);
}
