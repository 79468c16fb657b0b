import bs58 from 'bs58';
import WebSocket, { type RawData } from 'ws';
import { lookupMetrics } from './lookup-metrics';
import { parseAnswer, type FetchResult } from './table-fetcher';

// Account notifications for the tables the cache holds: one WebSocket to the chain node's PubSub port, an
// `accountSubscribe` (base64, `confirmed`) per watched table, `accountUnsubscribe` when the cache lets the table
// go. A notification carries the whole account, so it replaces the table's view (addresses, deactivation) the
// way a confirmed re-read does — including changes the stream cannot show (an extension made through CPI by
// another program). Confirmed, not processed: the stream already gives processed-level changes at once, and a
// confirmed answer is what may end a pending view (table-cache.ts).
//
// Bounds: at most maxSubscriptions tables are watched (a table beyond is kept current by the stream, the
// confirmed re-read and the re-read on an out-of-range index, as without notifications; a slot freed by an
// eviction goes to the next table taken in). Requests awaiting an answer: at most one subscribe per watched table,
// plus unsubscriptions; past twice the cap the connection is dropped and started again.
// The connection: reconnected with exponential backoff (RECONNECT_MIN_MS doubling to RECONNECT_MAX_MS, reset once
// a connection opens); on a reconnect each watched table is subscribed again and read once (`reread`), since
// nothing is notified for changes made while the connection was down. A connection that answers no ping
// within PING_MS is dropped and reconnected (a node can vanish without closing the socket).
// Agave's PubSub (rpc/src/rpc_pubsub.rs): accountSubscribe answers a subscription id; accountNotification's
// params are { result: { context: { slot }, value: UiAccount }, subscription }.

const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 10_000;
const PING_MS = 15_000;

export interface NotifierOptions {
  /** ws:// or wss:// of the node's PubSub (may hold a key: never logged). */
  url: string;
  maxSubscriptions: number;
  /** A notification (or the account's new state), in the fetcher's terms. */
  onAccount(id: string, r: FetchResult): void;
  /** After a (re)subscription: read the table once (changes made while unsubscribed were not notified). */
  reread(id: string): void;
}

interface Watched {
  key: Buffer;
  /** The node's subscription id once answered; -1: none (not connected, or the request is out). */
  sub: number;
  /** The id of the accountSubscribe request out; -1: none. */
  req: number;
}

type Pending = { kind: 'sub'; id: string; w: Watched } | { kind: 'unsub' };

export class TableNotifier {
  private readonly watched = new Map<string, Watched>();
  private readonly bySub = new Map<number, string>();
  private readonly pending = new Map<number, Pending>();
  private ws: WebSocket | null = null;
  private open = false;
  private nextId = 1;
  private backoff = RECONNECT_MIN_MS;
  private retry: NodeJS.Timeout | undefined;
  private pinger: NodeJS.Timeout | undefined;
  private awaitingPong = false;
  private closed = false;
  /** Connections opened, counting the first (tests and the reconnect metric). */
  connects = 0;
  /** Notifications applied. */
  notified = 0;

  constructor(private readonly o: NotifierOptions) {
    this.connect();
  }

  /** Tables with a live subscription. */
  get subscribed(): number {
    return this.bySub.size;
  }

  /** Tables watched (subscribed, or to be once connected). */
  get watching(): number {
    return this.watched.size;
  }

  /** Whether `id` is watched. */
  has(id: string): boolean {
    return this.watched.has(id);
  }

  /** Watches a table the cache took in; false past maxSubscriptions (then it is not watched). */
  watch(id: string, key: Buffer): boolean {
    if (this.closed) return false;
    if (this.watched.has(id)) return true;
    if (this.watched.size >= this.o.maxSubscriptions) {
      lookupMetrics.notifySkipped.inc();
      return false;
    }
    const w: Watched = { key, sub: -1, req: -1 };
    this.watched.set(id, w);
    if (this.open) this.subscribe(id, w);
    return true;
  }

  /** Stops watching (the table was evicted, or is no more). */
  unwatch(id: string): void {
    const w = this.watched.get(id);
    if (w === undefined) return;
    this.watched.delete(id);
    if (w.sub >= 0) {
      this.bySub.delete(w.sub);
      if (this.open) this.send('accountUnsubscribe', [w.sub], { kind: 'unsub' });
    }
    // A subscribe still out is undone when its answer comes (the answer finds the table no longer watched).
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    clearInterval(this.pinger);
    this.watched.clear();
    this.bySub.clear();
    this.pending.clear();
    this.ws?.terminate();
    this.ws = null;
  }

  private connect(): void {
    if (this.closed) return;
    const ws = new WebSocket(this.o.url, { maxPayload: 1 << 20 });
    this.ws = ws;
    ws.on('open', () => {
      if (this.ws !== ws) return;
      this.open = true;
      this.backoff = RECONNECT_MIN_MS;
      if (this.connects++ > 0) lookupMetrics.notifyReconnects.inc();
      for (const [id, w] of this.watched) this.subscribe(id, w);
      this.awaitingPong = false;
      this.pinger = setInterval(() => {
        if (this.awaitingPong) return void ws.terminate(); // no pong since the last ping: gone
        this.awaitingPong = true;
        ws.ping();
      }, PING_MS);
      this.pinger.unref();
    });
    ws.on('pong', () => (this.awaitingPong = false));
    ws.on('message', (data: RawData) => this.onMessage(data));
    ws.on('error', () => {}); // followed by 'close'
    ws.on('close', () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.open = false;
      clearInterval(this.pinger);
      this.pending.clear();
      this.bySub.clear();
      for (const w of this.watched.values()) {
        w.sub = -1;
        w.req = -1;
      }
      if (this.closed) return;
      this.retry = setTimeout(() => this.connect(), this.backoff);
      this.retry.unref();
      this.backoff = Math.min(this.backoff * 2, RECONNECT_MAX_MS);
    });
  }

  private subscribe(id: string, w: Watched): void {
    if (w.req >= 0 || w.sub >= 0) return;
    w.req = this.send('accountSubscribe', [bs58.encode(w.key), { encoding: 'base64', commitment: 'confirmed' }], { kind: 'sub', id, w });
  }

  private send(method: string, params: unknown[], p: Pending): number {
    // Answers owed: one per watched table plus unsubscriptions. A node that stops answering while tables churn
    // would grow this without end: past twice the cap the connection is dropped (the reconnect starts clean).
    if (this.pending.size >= 2 * this.o.maxSubscriptions + 64) this.ws!.terminate();
    const id = this.nextId++;
    this.pending.set(id, p);
    this.ws!.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return id;
  }

  private onMessage(data: RawData): void {
    let m: { id?: unknown; result?: unknown; error?: unknown; method?: unknown; params?: { result?: { context?: { slot?: unknown }; value?: unknown }; subscription?: unknown } };
    try {
      m = JSON.parse(data.toString()) as typeof m;
    } catch {
      return;
    }
    if (typeof m.id === 'number') return this.onAnswer(m.id, m.result, m.error !== undefined);
    if (m.method !== 'accountNotification' || typeof m.params?.subscription !== 'number') return;
    const id = this.bySub.get(m.params.subscription);
    if (id === undefined) return; // unsubscribed since
    const r = m.params.result;
    const [res] = parseAnswer({ context: r?.context, value: [r?.value ?? null] }, 1);
    if (res === undefined || res.kind === 'failed') return;
    this.notified++;
    lookupMetrics.notifications.inc();
    this.o.onAccount(id, res);
  }

  private onAnswer(reqId: number, result: unknown, failed: boolean): void {
    const p = this.pending.get(reqId);
    if (p === undefined) return;
    this.pending.delete(reqId);
    if (p.kind === 'unsub') return;
    const w = p.w;
    if (w.req === reqId) w.req = -1;
    if (failed || typeof result !== 'number') return; // refused: kept current without notifications
    if (this.watched.get(p.id) !== w) {
      // No longer watched: undo.
      if (this.open) this.send('accountUnsubscribe', [result], { kind: 'unsub' });
      return;
    }
    w.sub = result;
    this.bySub.set(result, p.id);
    // After a reconnect, changes made while the connection was down were not notified: read the table once. (A
    // first subscription follows the fetch that took the table in; the confirmed re-read covers that gap.)
    if (this.connects > 1) this.o.reread(p.id);
  }
}
