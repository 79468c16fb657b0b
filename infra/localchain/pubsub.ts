import bs58 from 'bs58';
import type { WebSocket } from 'ws';
import type { Chain } from './chain';
import { ACCOUNT_ENCODINGS, encodeAccount, type AccountEncoding } from './encode';
import type { Block, TxRecord } from './ledger';
import { invalidParams, RPC, RpcError } from './rpc/errors';
import { stringify } from './rpc/json';
import { commitment, config, isObj, oneOf, optBool, pubkey, required, signatureParam, type Commitment } from './rpc/params';
import type { ChainAccount } from './svm';

// WebSocket PubSub as agave serves it: <kind>Subscribe answers a subscription id, notifications arrive as
// {"jsonrpc":"2.0","method":"<kind>Notification","params":{"result":…,"subscription":id}}, and
// <kind>Unsubscribe answers true. processed subscriptions fire when a transaction executes; confirmed and
// finalized ones when its block freezes. Bounded: subscriptions per connection and in all, and a connection
// whose unsent bytes pass maxBufferedBytes is closed (a slow reader never holds the node's memory).

export interface PubSubLimits {
  maxSubscriptionsPerConnection: number;
  maxSubscriptions: number;
  maxBufferedBytes: number;
}

type Kind = 'slot' | 'root' | 'signature' | 'account' | 'logs';

interface Sub {
  id: number;
  conn: Conn;
  kind: Kind;
  commitment: Commitment;
  key?: string;
  encoding?: AccountEncoding;
  /** logs: null = every transaction; else the one mentioned address. */
  mentions?: string | null;
}

interface Conn {
  ws: WebSocket;
  subs: Map<number, Sub>;
}

export interface CallResult {
  result: unknown;
  /** Runs after the response is written (a signature that already reached the commitment notifies at once). */
  after?: () => void;
}

const EMPTY_ACCOUNT: ChainAccount = { lamports: 0n, data: new Uint8Array(0), owner: new Uint8Array(32), executable: false, rentEpoch: 0n };
const KINDS: readonly Kind[] = ['slot', 'root', 'signature', 'account', 'logs'];

export class PubSub {
  private nextId = 0;
  private total = 0;
  private readonly byKind = new Map<Kind, Set<Sub>>(KINDS.map((k) => [k, new Set<Sub>()]));
  private readonly bySignature = new Map<string, Set<Sub>>();
  private readonly byAccount = new Map<string, Set<Sub>>();
  private readonly conns = new Set<Conn>();
  notificationsSent = 0;
  slowClosed = 0;

  constructor(
    private readonly chain: Chain,
    private readonly limits: PubSubLimits,
  ) {
    chain.on('slot', (slot, parent, root) => {
      for (const s of this.byKind.get('slot')!) this.notify(s, { parent, root, slot });
      for (const s of this.byKind.get('root')!) this.notify(s, root);
    });
    chain.on('processed', (r) => this.onTransactions([r], 'processed', r.slot));
    chain.on('frozen', (b) => this.onFrozen(b));
  }

  open(ws: WebSocket): Conn {
    const c: Conn = { ws, subs: new Map() };
    this.conns.add(c);
    return c;
  }

  closeConn(c: Conn): void {
    for (const s of c.subs.values()) this.remove(s);
    this.conns.delete(c);
  }

  connections(): number {
    return this.conns.size;
  }

  /** A subscribe/unsubscribe call; throws RpcError (-32601 for anything else, as the PubSub port does). */
  call(c: Conn, method: string, params: unknown[]): CallResult {
    const m = /^(slot|root|signature|account|logs)(Subscribe|Unsubscribe)$/.exec(method);
    if (m === null) throw new RpcError(RPC.methodNotFound.code, RPC.methodNotFound.message);
    const kind = m[1] as Kind;
    if (m[2] === 'Unsubscribe') {
      const id = required(params, 0, 'subscription_id');
      const s = typeof id === 'number' ? c.subs.get(id) : undefined;
      if (s === undefined || s.kind !== kind) throw new RpcError(RPC.invalidParams.code, 'Invalid subscription id.');
      this.remove(s);
      return { result: true };
    }
    if (c.subs.size >= this.limits.maxSubscriptionsPerConnection || this.total >= this.limits.maxSubscriptions) {
      throw new RpcError(RPC.internal.code, 'Internal error: subscription limit reached');
    }
    const sub = this.parse(c, kind, params);
    this.add(sub);
    const after = kind === 'signature' ? this.signatureNow(sub) : undefined;
    return { result: sub.id, after };
  }

  private parse(c: Conn, kind: Kind, params: unknown[]): Sub {
    const id = this.nextId++;
    if (kind === 'slot' || kind === 'root') return { id, conn: c, kind, commitment: 'processed' };
    if (kind === 'signature') {
      const key = bs58.encode(signatureParam(required(params, 0, 'signature')));
      const cfg = config(params[1]);
      optBool(cfg, 'enableReceivedNotification', false);
      return { id, conn: c, kind, key, commitment: commitment(cfg) };
    }
    if (kind === 'account') {
      const key = bs58.encode(pubkey(required(params, 0, 'pubkey')));
      const cfg = config(params[1]);
      return { id, conn: c, kind, key, commitment: commitment(cfg), encoding: oneOf(cfg, 'encoding', ACCOUNT_ENCODINGS, 'binary') };
    }
    const filter = required(params, 0, 'filter');
    const cfg = config(params[1]);
    let mentions: string | null = null;
    if (isObj(filter) && Array.isArray(filter.mentions)) {
      if (filter.mentions.length !== 1) throw invalidParams('Invalid Request: Only 1 address supported');
      mentions = bs58.encode(pubkey(filter.mentions[0]));
    } else if (filter !== 'all' && filter !== 'allWithVotes') {
      throw invalidParams('unknown variant, expected `all`, `allWithVotes` or {"mentions": [address]}');
    }
    return { id, conn: c, kind, commitment: commitment(cfg), mentions };
  }

  private add(s: Sub): void {
    s.conn.subs.set(s.id, s);
    this.total++;
    if (s.kind === 'signature') this.index(this.bySignature, s.key!).add(s);
    else if (s.kind === 'account') this.index(this.byAccount, s.key!).add(s);
    else this.byKind.get(s.kind)!.add(s);
  }

  private index(m: Map<string, Set<Sub>>, key: string): Set<Sub> {
    let set = m.get(key);
    if (set === undefined) m.set(key, (set = new Set()));
    return set;
  }

  private remove(s: Sub): void {
    if (!s.conn.subs.delete(s.id)) return;
    this.total--;
    const m = s.kind === 'signature' ? this.bySignature : s.kind === 'account' ? this.byAccount : null;
    if (m === null) {
      this.byKind.get(s.kind)!.delete(s);
      return;
    }
    const set = m.get(s.key!);
    set?.delete(s);
    if (set !== undefined && set.size === 0) m.delete(s.key!);
  }

  private signatureNow(s: Sub): (() => void) | undefined {
    const r = this.chain.ledger.tx(s.key!);
    if (r === undefined || (!r.frozen && s.commitment !== 'processed')) return undefined;
    return () => this.signatureDone(s, r);
  }

  private signatureDone(s: Sub, r: TxRecord): void {
    this.notify(s, { context: { slot: r.slot }, value: { err: r.meta.err === null ? null : r.meta.err.json } });
    this.remove(s);
  }

  private wants(s: Sub, level: 'processed' | 'frozen'): boolean {
    return (s.commitment === 'processed') === (level === 'processed');
  }

  private onTransactions(rs: TxRecord[], level: 'processed' | 'frozen', slot: number): void {
    const logs = this.byKind.get('logs')!;
    for (const r of rs) {
      const sigSubs = this.bySignature.get(r.signature);
      if (sigSubs !== undefined) for (const s of [...sigSubs]) if (this.wants(s, level)) this.signatureDone(s, r);
      if (logs.size > 0) {
        const value = { err: r.meta.err === null ? null : r.meta.err.json, logs: r.meta.logs, signature: r.signature };
        for (const s of logs) if (this.wants(s, level) && (s.mentions === null || r.keys.includes(s.mentions!))) this.notify(s, { context: { slot }, value });
      }
    }
    if (this.byAccount.size === 0) return;
    const written = new Set<string>();
    for (const r of rs) r.keys.forEach((k, i) => { if (r.writable[i] === true && this.byAccount.has(k)) written.add(k); });
    for (const k of written) {
      const subs = [...this.byAccount.get(k)!].filter((s) => this.wants(s, level));
      if (subs.length === 0) continue;
      const a = this.chain.bank.account(Buffer.from(bs58.decode(k))) ?? EMPTY_ACCOUNT;
      for (const s of subs) {
        try {
          this.notify(s, { context: { slot }, value: encodeAccount(a, s.encoding!) });
        } catch {
          // An encoding this account cannot take (base58 over 128 bytes): agave skips the notification too.
        }
      }
    }
  }

  private onFrozen(b: Block): void {
    this.onTransactions(b.txs, 'frozen', b.slot);
  }

  private notify(s: Sub, result: unknown): void {
    const ws = s.conn.ws;
    if (ws.readyState !== ws.OPEN) return;
    if (ws.bufferedAmount > this.limits.maxBufferedBytes) {
      this.slowClosed++;
      this.closeConn(s.conn);
      ws.terminate();
      return;
    }
    const method = `${s.kind}Notification`;
    ws.send(stringify({ jsonrpc: '2.0', method, params: { result, subscription: s.id } }));
    this.notificationsSent++;
  }

  close(): void {
    for (const c of this.conns) c.ws.terminate();
    this.conns.clear();
  }
}
