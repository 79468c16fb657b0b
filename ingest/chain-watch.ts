import WebSocket from 'ws';
import { jsonRpc, type JsonRpcCall } from '../infra/base/json-rpc';
import type { Log } from '../infra/base/log';
import { ChainSlotStatuses, type ChainStatusEvent } from './chain-slots';

// The chain node's slot notifications → slot statuses (chain-slots.ts says what each input means). One WebSocket
// with slotSubscribe, reconnected with backoff when it drops; and, when an HTTP URL is configured, getSlot at
// `confirmed` polled every confirmedPollMs. Logs name the failure, never the URL (it may carry a key).

export interface ChainWatchOptions {
  /** The node's PubSub WebSocket (slotSubscribe). */
  wsUrl: string;
  /** The node's JSON-RPC over HTTP for the confirmed poll; '' = no poll (CONFIRMED only when rooted). */
  rpcUrl: string;
  confirmedPollMs: number;
  emit: (e: ChainStatusEvent) => void;
  log?: Log;
  now?: () => number;
  /** Tests: another JSON-RPC transport. */
  rpc?: JsonRpcCall;
}

export interface ChainWatch {
  /** Resolves once the first subscription is acknowledged (or rejects with why, the URL left out). */
  readonly ready: Promise<void>;
  stats(): { notifications: number; reconnects: number; polls: number; pollErrors: number; connected: boolean };
  close(): void;
}

const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 10_000;
/** A notification bigger than this is not a slot notification: the connection is dropped. */
const MAX_MESSAGE_BYTES = 64 * 1024;

function slotNotification(raw: unknown): { slot: number; parent: number; root: number } | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const m = raw as { method?: unknown; params?: { result?: { slot?: unknown; parent?: unknown; root?: unknown } } };
  if (m.method !== 'slotNotification') return null;
  const r = m.params?.result;
  if (r === undefined || !Number.isSafeInteger(r.slot) || !Number.isSafeInteger(r.parent) || !Number.isSafeInteger(r.root)) return null;
  return { slot: r.slot as number, parent: r.parent as number, root: r.root as number };
}

export function watchChainSlots(o: ChainWatchOptions): ChainWatch {
  const now = o.now ?? Date.now;
  const derive = new ChainSlotStatuses(o.emit);
  const counts = { notifications: 0, reconnects: 0, polls: 0, pollErrors: 0 };
  let ws: WebSocket | null = null;
  let connected = false;
  let closed = false;
  let backoff = BACKOFF_MIN_MS;
  let retry: NodeJS.Timeout | undefined;
  let lastWarnMs = -Infinity;
  let settle: { resolve: () => void; reject: (e: Error) => void } | null = null;
  const ready = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
  ready.catch(() => {}); // a caller that does not wait must not see an unhandled rejection

  const warn = (obj: Record<string, unknown>, msg: string): void => {
    const t = now();
    if (t - lastWarnMs < 10_000) return;
    lastWarnMs = t;
    o.log?.warn(obj, msg);
  };

  const connect = (): void => {
    if (closed) return;
    const sock = new WebSocket(o.wsUrl, { maxPayload: MAX_MESSAGE_BYTES, handshakeTimeout: 10_000 });
    ws = sock;
    sock.on('open', () => sock.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'slotSubscribe' })));
    sock.on('message', (data: WebSocket.RawData) => {
      let msg: unknown;
      try {
        msg = JSON.parse(data.toString());
      } catch {
        return;
      }
      const n = slotNotification(msg);
      if (n !== null) {
        counts.notifications++;
        derive.slotNotification(n.slot, n.parent, n.root, now());
        return;
      }
      const ack = msg as { id?: unknown; result?: unknown; error?: { message?: unknown } };
      if (ack.id !== 1) return;
      if (typeof ack.result === 'number') {
        connected = true;
        backoff = BACKOFF_MIN_MS;
        settle?.resolve();
        settle = null;
      } else {
        const why = `slotSubscribe refused: ${typeof ack.error?.message === 'string' ? ack.error.message : 'no subscription id'}`;
        settle?.reject(new Error(why));
        settle = null;
        warn({ why }, 'chain slot statuses: the node refused the subscription; retrying');
        sock.terminate();
      }
    });
    sock.on('error', (e) => warn({ err: e.message }, 'chain slot statuses: WebSocket error; reconnecting'));
    sock.on('close', () => {
      connected = false;
      if (ws === sock) ws = null;
      if (closed) return;
      counts.reconnects++;
      retry = setTimeout(connect, backoff);
      retry.unref();
      backoff = Math.min(BACKOFF_MAX_MS, backoff * 2);
    });
  };
  connect();

  let poll: NodeJS.Timeout | undefined;
  if (o.rpcUrl !== '' || o.rpc !== undefined) {
    const rpc = o.rpc ?? jsonRpc(o.rpcUrl, Math.max(1000, o.confirmedPollMs * 4));
    let busy = false;
    poll = setInterval(() => {
      if (busy || closed) return;
      busy = true;
      counts.polls++;
      rpc<unknown>('getSlot', [{ commitment: 'confirmed' }]).then(
        (v) => {
          busy = false;
          if (!closed && Number.isSafeInteger(v)) derive.confirmedSlot(v as number, now());
        },
        (e: unknown) => {
          busy = false;
          counts.pollErrors++;
          warn({ err: e instanceof Error ? e.message : String(e) }, 'chain slot statuses: getSlot (confirmed) failed');
        },
      );
    }, o.confirmedPollMs);
    poll.unref();
  }

  return {
    ready,
    stats: () => ({ ...counts, connected }),
    close() {
      if (closed) return;
      closed = true;
      clearTimeout(retry);
      clearInterval(poll);
      settle?.reject(new Error('closed'));
      settle = null;
      ws?.terminate();
      ws = null;
    },
  };
}
