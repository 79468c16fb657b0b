// The framing between Node and the TPU sender process (sender/src/main.rs has the Rust side). Frames, both
// ways: `u32 LE length ‖ u8 kind ‖ body` (length counts kind + body).
//
//   Node → sender   0x01 CONNECT  u8 n ‖ n × addr                 keep connections to these peers
//                   0x02 TX       u32 id ‖ u8 n ‖ n × addr ‖ tx     hand tx to these peers' workers
//                   addr = u8 len ‖ "ip:port" (ASCII)
//   sender → Node   0x81 HELLO    JSON {identity, ephemeral}
//                   0x82 RESULT   u32 id ‖ u8 n ‖ n × u8 code      per target, in TX order
//                   0x83 STATS    JSON [PeerStats…]               counters since the previous STATS
//                   0x84 ERROR    UTF-8 text

export const KIND = { connect: 0x01, tx: 0x02, hello: 0x81, result: 0x82, stats: 0x83, error: 0x84 } as const;

/** RESULT codes: what the sender did with a transaction for one target. */
export const DISPATCH = ['queued', 'full', 'gone', 'bad_address'] as const;
export type Dispatch = (typeof DISPATCH)[number];

/** One peer's counters since the previous STATS (from the crate's SendTransactionStats, one per peer). */
export interface PeerStats {
  peer: string;
  /** A worker (connection or reconnect attempts) exists for the peer. */
  active: boolean;
  sent: number;
  connect_error: number;
  connection_timed_out: number;
  connection_closed: number;
  application_closed: number;
  connection_reset: number;
  transport_error: number;
  write_error: number;
  congestion_events: number;
}

export const PEER_ERROR_KINDS = ['connect_error', 'connection_timed_out', 'connection_closed', 'application_closed', 'connection_reset', 'transport_error', 'write_error'] as const;
export type PeerErrorKind = (typeof PEER_ERROR_KINDS)[number];

export type SenderMessage =
  | { kind: 'hello'; identity: string; ephemeral: boolean }
  | { kind: 'result'; id: number; codes: Dispatch[] }
  | { kind: 'stats'; peers: PeerStats[] }
  | { kind: 'error'; text: string };

/** Longest frame either side sends (a 4 KiB v1 transaction and its targets fit many times over). */
export const MAX_FRAME = 64 * 1024;
export const MAX_TARGETS = 255;

function addrsLength(addrs: readonly string[]): number {
  let n = 1;
  for (const a of addrs) n += 1 + a.length;
  return n;
}

function putAddrs(b: Buffer, at: number, addrs: readonly string[]): number {
  b[at++] = addrs.length;
  for (const a of addrs) {
    b[at++] = a.length;
    at += b.write(a, at, 'latin1');
  }
  return at;
}

function checkAddrs(addrs: readonly string[]): void {
  if (addrs.length > MAX_TARGETS) throw new Error(`at most ${MAX_TARGETS} peers a frame`);
  for (const a of addrs) if (a.length === 0 || a.length > 64 || !/^[0-9A-Za-z.:[\]]+$/.test(a)) throw new Error('peer address must be ip:port');
}

export function encodeConnect(addrs: readonly string[]): Buffer {
  checkAddrs(addrs);
  const body = addrsLength(addrs);
  const b = Buffer.allocUnsafe(5 + body);
  b.writeUInt32LE(body + 1, 0);
  b[4] = KIND.connect;
  putAddrs(b, 5, addrs);
  return b;
}

export function encodeTx(id: number, targets: readonly string[], tx: Buffer): Buffer {
  checkAddrs(targets);
  const body = 4 + addrsLength(targets) + tx.length;
  if (body + 1 > MAX_FRAME) throw new Error('transaction frame too large');
  const b = Buffer.allocUnsafe(5 + body);
  b.writeUInt32LE(body + 1, 0);
  b[4] = KIND.tx;
  b.writeUInt32LE(id >>> 0, 5);
  const at = putAddrs(b, 9, targets);
  tx.copy(b, at);
  return b;
}

function isPeerStats(v: unknown): v is PeerStats {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  if (typeof o.peer !== 'string' || typeof o.active !== 'boolean') return false;
  for (const k of ['sent', 'congestion_events', ...PEER_ERROR_KINDS]) if (typeof o[k] !== 'number' || !Number.isFinite(o[k])) return false;
  return true;
}

function decodeOne(kind: number, body: Buffer): SenderMessage | string {
  switch (kind) {
    case KIND.result: {
      if (body.length < 5 || body.length !== 5 + body[4]!) return 'RESULT frame of the wrong length';
      const codes: Dispatch[] = [];
      for (let i = 0; i < body[4]!; i++) codes.push(DISPATCH[body[5 + i]!] ?? 'gone');
      return { kind: 'result', id: body.readUInt32LE(0), codes };
    }
    case KIND.hello: {
      try {
        const o = JSON.parse(body.toString('utf8')) as { identity?: unknown; ephemeral?: unknown };
        if (typeof o.identity === 'string' && typeof o.ephemeral === 'boolean') return { kind: 'hello', identity: o.identity, ephemeral: o.ephemeral };
      } catch {
        // fall through
      }
      return 'HELLO frame is not {identity, ephemeral}';
    }
    case KIND.stats: {
      try {
        const a = JSON.parse(body.toString('utf8')) as unknown;
        if (Array.isArray(a) && a.every(isPeerStats)) return { kind: 'stats', peers: a };
      } catch {
        // fall through
      }
      return 'STATS frame is not a list of peer counters';
    }
    case KIND.error:
      return { kind: 'error', text: body.toString('utf8') };
    default:
      return `unknown frame kind ${kind}`;
  }
}

/** Splits the sender's stdout into messages; a malformed frame is reported (string) and skipped. */
export class SenderDecoder {
  private buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer, out: (m: SenderMessage) => void, bad: (why: string) => void): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    let at = 0;
    while (this.buf.length - at >= 4) {
      const len = this.buf.readUInt32LE(at);
      if (len === 0 || len > MAX_FRAME) {
        bad(`frame length ${len}`);
        this.buf = Buffer.alloc(0);
        return;
      }
      if (this.buf.length - at < 4 + len) break;
      const kind = this.buf[at + 4]!;
      const m = decodeOne(kind, this.buf.subarray(at + 5, at + 4 + len));
      at += 4 + len;
      if (typeof m === 'string') bad(m);
      else out(m);
    }
    this.buf = at === this.buf.length ? Buffer.alloc(0) : this.buf.subarray(at);
  }
}
