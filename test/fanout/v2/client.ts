import type * as grpc from '@grpc/grpc-js';
import { Timestamp } from 'google-protobuf/google/protobuf/timestamp_pb';
import { FilterAdd, FilterRemove, LagPolicy, Ping, Start, SubscribeRequest, TransactionEncoding, TransactionFilter, type SubscribeUpdate } from '../../../proto/gen/stream_v2_pb';
import { openV2Stream, type V2Stream } from '../../../proto/service-v2';
import { waitFor } from '../../support/wait';

// A v2 test client over grpc-js and the generated messages: what a client author would write.

export interface StartOpts {
  cursor?: Uint8Array;
  slot?: number;
  timeMs?: number;
  skip?: boolean;
  slots?: boolean;
  entries?: boolean;
  /** The stream's encoding: RAW. */
  raw?: boolean;
}

export class V2Client {
  readonly updates: SubscribeUpdate[] = [];
  status: grpc.StatusObject | undefined;
  readonly stream: V2Stream;

  /** `channelOptions`: e.g. `grpc.use_local_subchannel_pool` for a connection of its own. */
  constructor(address: string, channelOptions?: Partial<grpc.ChannelOptions>) {
    this.stream = openV2Stream(address, channelOptions === undefined ? {} : { channelOptions });
    this.stream.on('data', (u: SubscribeUpdate) => this.updates.push(u));
    this.stream.on('error', () => undefined); // the status event carries it
    this.stream.on('status', (s: grpc.StatusObject) => (this.status = s));
  }

  add(id: string, include: string[], more: { exclude?: string[]; required?: string[]; matchLoaded?: boolean; encoding?: 'raw' | 'decoded' } = {}): void {
    const f = new TransactionFilter();
    f.setAccountIncludeList(include);
    f.setAccountExcludeList(more.exclude ?? []);
    f.setAccountRequiredList(more.required ?? []);
    f.setMatchLoadedAddresses(more.matchLoaded ?? false);
    if (more.encoding !== undefined) f.setEncoding(more.encoding === 'raw' ? TransactionEncoding.TRANSACTION_ENCODING_RAW : TransactionEncoding.TRANSACTION_ENCODING_DECODED);
    const a = new FilterAdd();
    a.setId(id);
    a.setFilter(f);
    const r = new SubscribeRequest();
    r.setAddFilter(a);
    this.stream.write(r);
  }

  /** Adds a filter as built (every TransactionFilter field). */
  addFilter(id: string, f: TransactionFilter): void {
    const a = new FilterAdd();
    a.setId(id);
    a.setFilter(f);
    const r = new SubscribeRequest();
    r.setAddFilter(a);
    this.stream.write(r);
  }

  remove(id: string): void {
    const rm = new FilterRemove();
    rm.setId(id);
    const r = new SubscribeRequest();
    r.setRemoveFilter(rm);
    this.stream.write(r);
  }

  ping(id: number): void {
    const p = new Ping();
    p.setId(id);
    const r = new SubscribeRequest();
    r.setPing(p);
    this.stream.write(r);
  }

  start(o: StartOpts = {}): void {
    const s = new Start();
    if (o.cursor !== undefined) s.setCursor(o.cursor);
    if (o.slot !== undefined) s.setSlot(o.slot);
    if (o.timeMs !== undefined) {
      const t = new Timestamp();
      t.setSeconds(Math.floor(o.timeMs / 1000));
      t.setNanos((o.timeMs % 1000) * 1e6);
      s.setTime(t);
    }
    if (o.skip === true) s.setLagPolicy(LagPolicy.LAG_POLICY_SKIP);
    s.setSlots(o.slots ?? false);
    s.setEntries(o.entries ?? false);
    if (o.raw === true) s.setEncoding(TransactionEncoding.TRANSACTION_ENCODING_RAW);
    const r = new SubscribeRequest();
    r.setStart(s);
    this.stream.write(r);
  }

  txs(): SubscribeUpdate[] {
    return this.updates.filter((u) => u.hasTransaction());
  }

  /** Signatures (hex) of the transactions received, in order. */
  sigs(): string[] {
    return this.txs().map((u) => Buffer.from(u.getTransaction()!.getSignature_asU8()).toString('hex'));
  }

  lastCursor(): Uint8Array | undefined {
    for (let i = this.updates.length - 1; i >= 0; i--) {
      const c = this.updates[i]!.getCursor_asU8();
      if (c.length > 0) return c;
    }
    return undefined;
  }

  waitUpdates(pred: (u: SubscribeUpdate[]) => boolean, what: string, timeoutMs = 20_000): Promise<void> {
    return waitFor(() => pred(this.updates), timeoutMs, what);
  }

  async waitStatus(timeoutMs = 20_000): Promise<grpc.StatusObject> {
    await waitFor(() => this.status !== undefined, timeoutMs, 'stream status');
    return this.status!;
  }

  cancel(): void {
    this.stream.cancel();
  }
}

/** seq of every update is 1, 2, 3, … */
export function seqsContiguous(us: SubscribeUpdate[]): boolean {
  return us.every((u, i) => u.getSeq() === i + 1);
}
