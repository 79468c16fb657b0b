import bs58 from 'bs58';
import type { WebSocket } from 'ws';
import type { Chain } from './chain';
import { ACCOUNT_ENCODINGS, encodeAccount, type AccountEncoding, type AccountParser } from './encode';
import { tokenParser } from './methods/tokens';
import { compileFilters, type AccountFilter } from './methods/account-params';
import { encodeBlock } from './methods/blocks';
import type { Block, TxRecord } from './ledger';
import { invalidParams, RPC, RpcError } from './rpc/errors';
import { stringify } from './rpc/json';
import { commitment, config, isObj, oneOf, optBool, pubkey, required, signatureParam, type Commitment, type Raw } from './rpc/params';
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

type Kind = 'slot' | 'root' | 'signature' | 'account' | 'logs' | 'program' | 'slotsUpdates' | 'block' | 'vote';

interface Sub {
  id: number;
  conn: Conn;
  kind: Kind;
  commitment: Commitment;
  key?: string;
  encoding?: AccountEncoding;
  /** logs and block: null = every transaction; else the one mentioned address. */
  mentions?: string | null;
  /** signature: also notify "receivedSignature" when the transaction arrives. */
  received?: boolean;
  /** program: account filters (dataSize, memcmp). */
  filters?: AccountFilter[];
  /** block: the getBlock config the notification is encoded with. */
  blockConfig?: Raw;
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
const KINDS: readonly Kind[] = ['slot', 'root', 'signature', 'account', 'logs', 'program', 'slotsUpdates', 'block', 'vote'];

export class PubSub {
  private nextId = 0;
  private total = 0;
  private readonly byKind = new Map<Kind, Set<Sub>>(KINDS.map((k) => [k, new Set<Sub>()]));
  private readonly bySignature = new Map<string, Set<Sub>>();
  private readonly byAccount = new Map<string, Set<Sub>>();
  private readonly byProgram = new Map<string, Set<Sub>>();
  private readonly conns = new Set<Conn>();
  notificationsSent = 0;
  slowClosed = 0;
  private readonly parseAccount: AccountParser;

  constructor(
    private readonly chain: Chain,
    private readonly limits: PubSubLimits,
  ) {
    this.parseAccount = tokenParser(chain);
    chain.on('slot', (slot, parent, root) => {
      for (const s of this.byKind.get('slot')!) this.notify(s, { parent, root, slot });
      for (const s of this.byKind.get('root')!) this.notify(s, root);
      for (const s of this.byKind.get('slotsUpdates')!) this.notify(s, { parent, slot, timestamp: Date.now(), type: 'createdBank' });
    });
    chain.on('processed', (r) => {
      const sigSubs = this.bySignature.get(r.signature);
      if (sigSubs !== undefined) for (const s of sigSubs) if (s.received === true) this.notify(s, { context: { slot: r.slot }, value: 'receivedSignature' });
      this.onTransactions([r], 'processed', r.slot);
    });
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
    const m = /^(slotsUpdates|slot|root|signature|account|logs|program|block|vote)(Subscribe|Unsubscribe)$/.exec(method);
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
    if (kind === 'slot' || kind === 'root' || kind === 'slotsUpdates' || kind === 'vote') return { id, conn: c, kind, commitment: 'processed' };
    if (kind === 'signature') {
      const key = bs58.encode(signatureParam(required(params, 0, 'signature')));
      const cfg = config(params[1]);
      return { id, conn: c, kind, key, commitment: commitment(cfg), received: optBool(cfg, 'enableReceivedNotification', false) };
    }
    if (kind === 'program') {
      const key = bs58.encode(pubkey(required(params, 0, 'program_id')));
      const cfg = config(params[1]);
      const filters = cfg.filters ?? [];
      if (!Array.isArray(filters)) throw invalidParams('invalid type: expected a sequence of filters');
      return { id, conn: c, kind, key, commitment: commitment(cfg), encoding: oneOf(cfg, 'encoding', ACCOUNT_ENCODINGS, 'binary'), filters: compileFilters(filters) };
    }
    if (kind === 'block') {
      const filter = required(params, 0, 'filter');
      const cfg = config(params[1]);
      let mentions: string | null = null;
      if (isObj(filter) && typeof filter.mentionsAccountOrProgram === 'string') mentions = bs58.encode(pubkey(filter.mentionsAccountOrProgram));
      else if (filter !== 'all') throw invalidParams('unknown variant, expected `all` or {"mentionsAccountOrProgram": address}');
      const level = commitment(cfg);
      if (level === 'processed') throw invalidParams('Method does not support commitment below `confirmed`');
      encodeBlock(null, cfg); // validate encoding, details and version up front
      return { id, conn: c, kind, commitment: level, mentions, blockConfig: cfg };
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
    else if (s.kind === 'program') this.index(this.byProgram, s.key!).add(s);
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
    const m = s.kind === 'signature' ? this.bySignature : s.kind === 'account' ? this.byAccount : s.kind === 'program' ? this.byProgram : null;
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
    if (this.byAccount.size === 0 && this.byProgram.size === 0) return;
    const written = new Set<string>();
    for (const r of rs) r.keys.forEach((k, i) => { if (r.writable[i] === true) written.add(k); });
    for (const k of written) {
      const subs = this.byAccount.get(k);
      const wanted = subs === undefined ? [] : [...subs].filter((s) => this.wants(s, level));
      if (wanted.length === 0 && this.byProgram.size === 0) continue;
      const a = this.chain.bank.account(Buffer.from(bs58.decode(k))) ?? EMPTY_ACCOUNT;
      for (const s of wanted) this.notifyAccount(s, { context: { slot }, value: () => encodeAccount(a, s.encoding!, undefined, this.parseAccount) });
      const owners = this.byProgram.get(bs58.encode(a.owner));
      if (owners === undefined) continue;
      for (const s of owners) {
        if (this.wants(s, level) && s.filters!.every((f) => f(a))) this.notifyAccount(s, { context: { slot }, value: () => ({ account: encodeAccount(a, s.encoding!, undefined, this.parseAccount), pubkey: k }) });
      }
    }
  }

  /** An encoding this account cannot take (base58 over 128 bytes) skips the notification, as agave does. */
  private notifyAccount(s: Sub, r: { context: { slot: number }; value: () => unknown }): void {
    let value: unknown;
    try {
      value = r.value();
    } catch {
      return;
    }
    this.notify(s, { context: r.context, value });
  }

  private onFrozen(b: Block): void {
    this.onTransactions(b.txs, 'frozen', b.slot);
    const now = Date.now();
    for (const s of this.byKind.get('slotsUpdates')!) {
      this.notify(s, { slot: b.slot, stats: b.stats, timestamp: now, type: 'frozen' });
      this.notify(s, { slot: b.slot, timestamp: now, type: 'root' });
    }
    for (const s of this.byKind.get('block')!) {
      if (s.mentions !== null && !b.txs.some((r) => r.keys.includes(s.mentions!))) continue;
      let value: unknown;
      try {
        value = { block: encodeBlock(b, s.blockConfig!), err: null, slot: b.slot };
      } catch (e) {
        value = { block: null, err: e instanceof Error ? e.message : 'error', slot: b.slot };
      }
      this.notify(s, { context: { slot: b.slot }, value });
    }
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
