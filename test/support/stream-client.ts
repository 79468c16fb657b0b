// A v1 stream client for tests: collects every response (decoded and as a plain object), waits for one that
// matches, and records how the stream ended.
import * as grpc from '@grpc/grpc-js';
import bs58 from 'bs58';
import type { SubscribeResponse, SubscribeResponseTransaction } from '../../proto/gen/arpc_pb';
import { openSubscribeStream, type OpenSubscribeOptions, type SubscribeRequestLike, type SubscribeStream } from '../../proto/service';

export interface PlainInstruction {
  programIdIndex: number;
  accounts: number[];
  /** base58 */
  data: string;
}

export interface PlainLookup {
  /** base58 */
  accountKey: string;
  writableIndexes: number[];
  readonlyIndexes: number[];
}

export interface PlainTransaction {
  slot: number;
  /** signatures[0], base58 ('' when there is none). */
  signature: string;
  signatures: string[];
  accountKeys: string[];
  recentBlockhash: string;
  numRequiredSignatures: number;
  numReadonlySignedAccounts: number;
  numReadonlyUnsignedAccounts: number;
  instructions: PlainInstruction[];
  addressTableLookups: PlainLookup[];
  /** undefined when the wrapper is absent. */
  versioned: boolean | undefined;
}

/** A response with presence kept: absent optional fields are undefined. */
export interface PlainResponse {
  /** created_at as epoch milliseconds (nanos rounded down to ms). */
  createdAtMs?: number;
  filters: string[];
  transaction?: PlainTransaction;
  pingId?: number;
  newSlot?: number;
}

export interface StreamStatus {
  code: grpc.status;
  /** The name of the code, e.g. INVALID_ARGUMENT. */
  codeName: string;
  details: string;
  metadata: grpc.Metadata;
}

const b58 = (b: Uint8Array): string => bs58.encode(b);

export function plainTransaction(t: SubscribeResponseTransaction): PlainTransaction {
  const signatures = t.getSignaturesList_asU8().map(b58);
  return {
    slot: t.getSlot(),
    signature: signatures[0] ?? '',
    signatures,
    accountKeys: t.getAccountKeysList_asU8().map(b58),
    recentBlockhash: b58(t.getRecentBlockhash_asU8()),
    numRequiredSignatures: t.getNumRequiredSignatures(),
    numReadonlySignedAccounts: t.getNumReadonlySignedAccounts(),
    numReadonlyUnsignedAccounts: t.getNumReadonlyUnsignedAccounts(),
    instructions: t.getInstructionsList().map((ix) => ({
      programIdIndex: ix.getProgramIdIndex(),
      accounts: [...ix.getAccounts_asU8()],
      data: b58(ix.getData_asU8()),
    })),
    addressTableLookups: t.getAddressTableLookupsList().map((l) => ({
      accountKey: b58(l.getAccountKey_asU8()),
      writableIndexes: [...l.getWritableIndexes_asU8()],
      readonlyIndexes: [...l.getReadonlyIndexes_asU8()],
    })),
    versioned: t.hasVersioned() ? t.getVersioned()!.getValue() : undefined,
  };
}

export function plainResponse(r: SubscribeResponse): PlainResponse {
  const out: PlainResponse = { filters: r.getFiltersList() };
  const ts = r.getCreatedAt();
  if (ts !== undefined) out.createdAtMs = ts.getSeconds() * 1000 + Math.floor(ts.getNanos() / 1e6);
  const tx = r.getTransaction();
  if (tx !== undefined) out.transaction = plainTransaction(tx);
  if (r.hasPingId()) out.pingId = r.getPingId();
  if (r.hasNewSlot()) out.newSlot = r.getNewSlot();
  return out;
}

const CODE_NAMES = new Map<number, string>(
  Object.entries(grpc.status)
    .filter((e): e is [string, number] => typeof e[1] === 'number')
    .map(([k, v]) => [v, k]),
);

export function statusName(code: number): string {
  return CODE_NAMES.get(code) ?? `CODE_${code}`;
}

interface Waiter {
  pred: (r: PlainResponse) => boolean;
  from: number;
  resolve: (r: PlainResponse) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

export class StreamClient {
  readonly call: SubscribeStream;
  /** Every response so far, in order, decoded. */
  readonly raw: SubscribeResponse[] = [];
  /** The same responses as plain objects. */
  readonly responses: PlainResponse[] = [];
  /** Resolves with the response headers (initial metadata) once they arrive; rejects if the stream ends first. */
  readonly headers: Promise<grpc.Metadata>;
  /** Resolves when the stream ends, whatever the status. Never rejects. */
  readonly ended: Promise<StreamStatus>;
  status: StreamStatus | undefined;
  private readonly waiters = new Set<Waiter>();

  constructor(address: string, opts: OpenSubscribeOptions) {
    this.call = openSubscribeStream(address, opts);
    this.headers = new Promise((resolve, reject) => {
      this.call.once('metadata', resolve);
      this.call.once('status', (s: grpc.StatusObject) => reject(new Error(`stream ended (${statusName(s.code)}) before response headers`)));
    });
    this.headers.catch(() => {}); // awaiting it still rejects; not awaiting it is fine
    this.call.on('error', () => {}); // the status event below carries the same information
    this.call.on('data', (r: SubscribeResponse) => {
      const plain = plainResponse(r);
      this.raw.push(r);
      const index = this.responses.push(plain) - 1;
      for (const w of this.waiters) if (index >= w.from && w.pred(plain)) this.settle(w, plain);
    });
    this.ended = new Promise((resolve) => {
      this.call.once('status', (s: grpc.StatusObject) => {
        this.status = { code: s.code, codeName: statusName(s.code), details: s.details, metadata: s.metadata };
        for (const w of this.waiters) this.settle(w, new Error(`stream ended (${this.describeStatus()}) before a matching response; got ${this.responses.length}`));
        resolve(this.status);
      });
    });
  }

  /** Opens a stream to address ('host:port'); opts.service defaults to StreamService. */
  static open(address: string, opts: Partial<OpenSubscribeOptions> = {}): StreamClient {
    return new StreamClient(address, { service: 'StreamService', ...opts });
  }

  send(req: SubscribeRequestLike): void {
    this.call.write(req);
  }

  /** Transactions received so far. */
  get transactions(): PlainTransaction[] {
    return this.responses.flatMap((r) => (r.transaction === undefined ? [] : [r.transaction]));
  }

  /**
   * The first response at index ≥ from (default 0: including those already received) for which pred holds.
   * Rejects on timeout or when the stream ends first.
   */
  waitFor(pred: (r: PlainResponse) => boolean, timeoutMs = 5000, from = 0): Promise<PlainResponse> {
    for (let i = from; i < this.responses.length; i++) if (pred(this.responses[i]!)) return Promise.resolve(this.responses[i]!);
    if (this.status !== undefined) return Promise.reject(new Error(`stream already ended (${this.describeStatus()})`));
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        pred,
        from,
        resolve,
        reject,
        timer: setTimeout(() => this.settle(w, new Error(`no matching response within ${timeoutMs} ms; got ${this.responses.length}`)), timeoutMs),
      };
      this.waiters.add(w);
    });
  }

  /** Waits for the stream to end (within timeoutMs) and returns its status. */
  async waitForEnd(timeoutMs = 5000): Promise<StreamStatus> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`stream still open after ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      return await Promise.race([this.ended, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Half-closes the request side; the server decides when the stream ends. */
  end(): void {
    this.call.end();
  }

  /** Cancels the call (the status becomes CANCELLED) and waits for it to end. */
  async close(): Promise<StreamStatus> {
    if (this.status === undefined) this.call.cancel();
    return this.ended;
  }

  private describeStatus(): string {
    const s = this.status;
    return s === undefined ? 'open' : `${s.codeName} ${JSON.stringify(s.details)}`;
  }

  private settle(w: Waiter, result: PlainResponse | Error): void {
    if (!this.waiters.delete(w)) return;
    clearTimeout(w.timer);
    if (result instanceof Error) w.reject(result);
    else w.resolve(result);
  }
}
