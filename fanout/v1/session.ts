import type { Rental } from '../../bus/topics/rentals';
import { streamError, type EndReason, type StreamError } from '../errors';
import { changedKeyCount, compileFilters, specKeyCount, type CompiledFilterSet, type FilterLimits } from '../filter/compile';
import type { FilterIndex } from '../filter/filter-index';
import type { SubscribeUpdate } from './request';
import type { QueueBudget } from '../queue-budget';
import type { StreamOrigin } from '../stream-limits';
import { SubscriberQueue, type OverflowLimit, type QueueLimits, type Sink } from '../subscriber-queue';
import { KeyRate, UpdateRate } from '../update-rate';

// One Subscribe stream and the rules of Endpoint A that belong to it:
//   - a new stream starts empty: no filters, no slots, no replay;
//   - a non-empty `transactions` map replaces the whole filter set; an empty map changes nothing;
//   - `new_seen_slots` is independent of the map and sticky (absent keeps the current value);
//   - no acknowledgement of a filter change; `ping_id` is echoed in a response carrying only that id;
//   - a bad filter ends the stream with INVALID_ARGUMENT before anything changes;
//   - more than maxFilterUpdatesPerSec filter updates within a second ends it with RESOURCE_EXHAUSTED
//     subscribe_rate_limit.
// "Filter-update message" (the contract's word) is read as a request with a non-empty transactions map: only
// those change state and cost index work. Pings and slot switches do not count (published clients send a ping
// timer's worth of them), and an empty map cannot be told from an absent one on the wire.

/** The call as the session drives it: serve.ts makes it from a SubscribeCall of either transport (transport/). */
export interface SessionPort extends Sink {
  /** Ends the RPC: OK without an error, else with the error's status and trailers. Called once. */
  end(error?: StreamError): void;
}

export interface SessionOptions {
  limits: FilterLimits &
    QueueLimits & {
      maxFilterUpdatesPerSec: number;
      /** Keys one stream may hold, may send per second, and all streams may hold together (default: no cap). */
      maxKeysPerStream?: number;
      maxFilterKeysPerSec?: number;
      maxKeysTotal?: number;
    };
  index: FilterIndex<Session>;
  /** Encoded response carrying only this ping_id. */
  pingResponse: (id: number) => Buffer;
  now?: () => number;
  /** A message was handed to the call (`observedAtMs` is NaN for pings and slots). */
  onWrite?: (bytes: number, observedAtMs: number) => void;
  /** The queue crossed a bound (the session then ends with DATA_LOSS). */
  onOverflow?: (limit: OverflowLimit) => void;
  /** A filter-update message was applied: server time (ms), keys it carried. */
  onFilterUpdate?: (ms: number, keys: number) => void;
  /** Keys per second all streams together may make the server compile (shared by every session). */
  compileBudget?: KeyRate;
  /** The process-wide bound on queued bytes this session's queue charges. */
  budget?: QueueBudget;
  /** The session is over (exactly once); the owner forgets it. */
  onEnd: (s: Session, reason: EndReason) => void;
}

export class Session {
  newSeenSlots = false;
  filters: CompiledFilterSet | null = null;
  /** The hub's cache of this subscriber's last matched filter names (set, mask → encoded names field). */
  namesSet: CompiledFilterSet | null = null;
  namesMask = 0;
  names: { bytes: Buffer; key: string } | null = null;
  private readonly queue: SubscriberQueue;
  private readonly rate: UpdateRate;
  private readonly keyRate: KeyRate | undefined;
  private ended = false;
  /** Transactions written to the client since the last takeDelivered() (usage metering). */
  private delivered = 0;

  constructor(
    readonly id: number,
    private readonly port: SessionPort,
    private readonly opts: SessionOptions,
    readonly rental?: Rental,
    /** Where the stream came from (connection, IP), for the stream caps. */
    readonly origin?: StreamOrigin,
  ) {
    this.rate = new UpdateRate(opts.limits.maxFilterUpdatesPerSec);
    this.keyRate = opts.limits.maxFilterKeysPerSec === undefined ? undefined : new KeyRate(opts.limits.maxFilterKeysPerSec);
    this.queue = new SubscriberQueue(
      port,
      opts.limits,
      {
        onWrite: (bytes, observedAtMs) => {
          if (!Number.isNaN(observedAtMs)) this.delivered++; // transactions; pings and slots are not billed
          opts.onWrite?.(bytes, observedAtMs);
        },
        onOverflow: (o) => {
          opts.onOverflow?.(o.limit);
          this.fail(streamError('slowConsumer', o));
        },
      },
      opts.budget,
      opts.now,
    );
  }

  takeDelivered(): number {
    const n = this.delivered;
    this.delivered = 0;
    return n;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  get queueDepth(): number {
    return this.queue.depth;
  }

  get queueBytes(): number {
    return this.queue.bytes;
  }

  handle(u: SubscribeUpdate): void {
    if (this.ended) return;
    if (u.filters.length > 0) {
      const t0 = performance.now();
      const lim = this.opts.limits;
      const now = (this.opts.now ?? Date.now)();
      if (!this.rate.allow(now)) return this.fail(streamError('subscribeRateLimit', { max: lim.maxFilterUpdatesPerSec }));
      // Charged by size too, before any decoding: the cost of an update grows with its keys.
      const keys = specKeyCount(u.filters);
      if (lim.maxKeysPerStream !== undefined && keys > lim.maxKeysPerStream) return this.fail(streamError('tooManyKeysTotal', { count: keys, max: lim.maxKeysPerStream }));
      // What the server must decode: keys of new or changed filters (a re-sent map costs little and is charged so).
      const changed = changedKeyCount(u.filters, this.filters);
      if (this.keyRate !== undefined && !this.keyRate.allow(now, changed)) return this.fail(streamError('subscribeRateLimit', { max: lim.maxFilterKeysPerSec!, unit: 'keys' }));
      if (this.opts.compileBudget !== undefined && !this.opts.compileBudget.allow(now, changed)) {
        return this.fail(streamError('filterCapacity', { max: lim.maxKeysTotal ?? 0, busy: true }));
      }
      if (lim.maxKeysTotal !== undefined && this.opts.index.totalKeys - this.opts.index.keysOf(this) + keys > lim.maxKeysTotal) {
        return this.fail(streamError('filterCapacity', { max: lim.maxKeysTotal }));
      }
      const compiled = compileFilters(u.filters, lim, this.filters);
      if (!compiled.ok) return this.fail(compiled.error);
      this.filters = compiled.set;
      this.opts.index.replace(this, compiled.set);
      this.opts.onFilterUpdate?.(performance.now() - t0, keys);
    }
    if (u.newSeenSlots !== undefined) this.newSeenSlots = u.newSeenSlots;
    if (u.pingId !== undefined) this.send(this.opts.pingResponse(u.pingId));
  }

  /** Queues an encoded response; `observedAtMs` feeds the end-to-end latency measure. */
  send(buf: Buffer, observedAtMs = Number.NaN): void {
    if (!this.ended) this.queue.push(buf, observedAtMs);
  }

  /** Ends the stream with a registry error. */
  fail(e: StreamError): void {
    this.finish(e.kind, e);
  }

  /** The server is closing: end with the given status (UNAVAILABLE by default). */
  shutdown(e: StreamError = streamError('shuttingDown', {})): void {
    this.finish('server_close', e);
  }

  /** The client went away (cancelled, or half-closed its side): stop, without writing anything. */
  clientGone(): void {
    if (this.ended) return;
    this.release();
    this.opts.onEnd(this, 'client');
  }

  private finish(reason: EndReason, e: StreamError): void {
    if (this.ended) return;
    this.release();
    this.port.end(e);
    this.opts.onEnd(this, reason);
  }

  private release(): void {
    this.ended = true;
    this.queue.close();
    this.opts.index.remove(this);
    this.filters = null;
  }
}
