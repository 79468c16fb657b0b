import http2 from 'node:http2';
import { FilterAdd, Start, SubscribeRequest, TransactionFilter } from '../../../proto/gen/stream_v2_pb';
import { V2_SUBSCRIBE_PATH } from '../../../proto/service-v2';

// A v2 Subscribe client for load tests: a real gRPC client on bare node:http2 over loopback that sends the same
// requests as V2Client (encoded with the generated classes), but on the receiving side scans each SubscribeUpdate
// for only the fields a reconnect test compares — seq, cursor, which update it is, and a transaction's slot and
// signature — instead of building google-protobuf objects. grpc-js plus google-protobuf keeps up with ~1,600–2,000
// updates/s in all on the loaded 2-core development machine; this scan is a small fraction of that cost.
//
// SubscribeUpdate fields read (proto/stream_v2.proto; the server's layout is drawn in proto/wire-v2.ts, but any
// field order is accepted here, and unknown fields are skipped by wire type):
//   1 seq fixed64 · 2 cursor bytes · 5 transaction {1 slot varint, 2 signature bytes} · 7 gap · 10 filter_ack

const PREFIX_SZ = 5;
/** Field numbers of SubscribeUpdate. */
const F_SEQ = 1;
const F_CURSOR = 2;
const F_TRANSACTION = 5;
const F_GAP = 7;
const F_FILTER_ACK = 10;
/** Field numbers of Transaction. */
const F_TX_SLOT = 1;
const F_TX_SIGNATURE = 2;

/** A transaction update as the test compares it. */
export interface LightTx {
  seq: number;
  slot: number;
  /** hex */
  signature: string;
  /** hex */
  cursor: string;
}

export interface LightStatus {
  code: number;
  details: string;
}

/** A receive window far above what arrives between two reads, so flow control never holds the server back. */
const WINDOW = 16 * 1024 * 1024;

function frame(r: SubscribeRequest): Buffer {
  const body = r.serializeBinary();
  const b = Buffer.allocUnsafe(PREFIX_SZ + body.length);
  b[0] = 0;
  b.writeUInt32BE(body.length, 1);
  b.set(body, PREFIX_SZ);
  return b;
}

/** Reads a varint at `o`; returns [value (as a number, exact below 2^53), next offset]. */
function varint(b: Buffer, o: number): [number, number] {
  let v = 0;
  let mul = 1;
  for (;;) {
    if (o >= b.length) throw new Error('truncated varint');
    const x = b[o++]!;
    v += (x & 0x7f) * mul;
    if (x < 0x80) return [v, o];
    mul *= 128;
  }
}

/** The offset after a field of wire type `wt` whose value starts at `o`. */
function skip(b: Buffer, o: number, wt: number): number {
  switch (wt) {
    case 0:
      return varint(b, o)[1];
    case 1:
      return o + 8;
    case 2: {
      const [len, p] = varint(b, o);
      return p + len;
    }
    case 5:
      return o + 4;
    default:
      throw new Error(`wire type ${wt} unexpected in a SubscribeUpdate`);
  }
}

export class V2LightClient {
  /** Every update's seq, in arrival order (they must be 1, 2, 3, …). */
  readonly seqs: number[] = [];
  readonly txs: LightTx[] = [];
  acks = 0;
  gaps = 0;
  /** The cursor of the newest update that had one (hex), or undefined. */
  lastCursorHex: string | undefined;
  status: LightStatus | undefined;
  /** A malformed update (the test fails on it). */
  error: Error | undefined;
  private readonly session: http2.ClientHttp2Session;
  private readonly req: http2.ClientHttp2Stream;
  private pending: Buffer | null = null;

  constructor(address: string) {
    this.session = http2.connect(`http://${address}`, { settings: { initialWindowSize: WINDOW } });
    this.session.on('error', () => undefined); // surfaces on the stream as a status
    this.session.once('connect', () => {
      if (!this.session.destroyed) this.session.setLocalWindowSize(WINDOW);
    });
    this.req = this.session.request({ ':method': 'POST', ':path': V2_SUBSCRIBE_PATH, 'content-type': 'application/grpc', te: 'trailers' }, { endStream: false });
    let headers: http2.IncomingHttpHeaders = {};
    const finish = (t: http2.IncomingHttpHeaders): void => {
      if (this.status !== undefined) return;
      const all = { ...headers, ...t };
      this.status = { code: all['grpc-status'] === undefined ? -1 : Number(all['grpc-status']), details: decodeURIComponent(String(all['grpc-message'] ?? '')) };
    };
    this.req.on('response', (h) => (headers = h));
    this.req.on('trailers', finish);
    this.req.on('close', () => finish({}));
    this.req.on('error', () => undefined);
    this.req.on('data', (chunk: Buffer) => this.onData(chunk));
  }

  add(id: string, include: string[]): void {
    const f = new TransactionFilter();
    f.setAccountIncludeList(include);
    const a = new FilterAdd();
    a.setId(id);
    a.setFilter(f);
    const r = new SubscribeRequest();
    r.setAddFilter(a);
    this.req.write(frame(r));
  }

  /** Starts live, or from `cursor` (lag policy close, the default). */
  start(cursor?: Uint8Array): void {
    const s = new Start();
    if (cursor !== undefined) s.setCursor(cursor);
    const r = new SubscribeRequest();
    r.setStart(s);
    this.req.write(frame(r));
  }

  /** Dies the way a killed process does: the connection is dropped, whatever was in flight is lost. */
  kill(): void {
    this.session.destroy();
  }

  private onData(chunk: Buffer): void {
    let b = chunk;
    if (this.pending !== null) {
      b = Buffer.concat([this.pending, chunk]);
      this.pending = null;
    }
    let o = 0;
    while (b.length - o >= PREFIX_SZ) {
      const len = b.readUInt32BE(o + 1);
      if (b.length - o - PREFIX_SZ < len) break;
      if (b[o] !== 0) this.error ??= new Error('a compressed update, though none was announced');
      else this.onUpdate(b, o + PREFIX_SZ, o + PREFIX_SZ + len);
      o += PREFIX_SZ + len;
    }
    if (o < b.length) this.pending = Buffer.from(b.subarray(o));
  }

  private onUpdate(b: Buffer, start: number, end: number): void {
    try {
      let seq = 0;
      let cursorAt = -1;
      let cursorEnd = -1;
      let txAt = -1;
      let txEnd = -1;
      let o = start;
      while (o < end) {
        const [tag, p] = varint(b, o);
        const field = Math.floor(tag / 8);
        const wt = tag & 7;
        if (field === F_SEQ && wt === 1) {
          seq = b.readUInt32LE(p) + b.readUInt32LE(p + 4) * 0x1_0000_0000;
          o = p + 8;
        } else if (wt === 2 && (field === F_CURSOR || field === F_TRANSACTION)) {
          const [len, q] = varint(b, p);
          if (field === F_CURSOR) [cursorAt, cursorEnd] = [q, q + len];
          else [txAt, txEnd] = [q, q + len];
          o = q + len;
        } else {
          if (field === F_GAP) this.gaps++;
          if (field === F_FILTER_ACK) this.acks++;
          o = skip(b, p, wt);
        }
      }
      if (o !== end) throw new Error('a field runs past the update');
      this.seqs.push(seq);
      const cursor = cursorAt < 0 ? undefined : b.toString('hex', cursorAt, cursorEnd);
      if (cursor !== undefined) this.lastCursorHex = cursor;
      if (txAt < 0) return;
      let slot = 0;
      let signature = '';
      for (let t = txAt; t < txEnd; ) {
        const [tag, p] = varint(b, t);
        const field = Math.floor(tag / 8);
        const wt = tag & 7;
        if (field === F_TX_SLOT && wt === 0) {
          // A slot fits a double exactly far beyond any test's slots.
          const [v, q] = varint(b, p);
          slot = v;
          t = q;
        } else if (field === F_TX_SIGNATURE && wt === 2) {
          const [len, q] = varint(b, p);
          signature = b.toString('hex', q, q + len);
          t = q + len;
        } else t = skip(b, p, wt);
      }
      this.txs.push({ seq, slot, signature, cursor: cursor ?? '' });
    } catch (e) {
      this.error ??= e instanceof Error ? e : new Error(String(e));
    }
  }
}
