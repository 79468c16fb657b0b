import type { Bus, ProduceRecord } from './bus';
import { TOPIC } from './topics';
import { encodeUsageEvent, type UsageEvent } from './topics/usage-events';
import { metrics as defaultRegistry, type Counter, type Gauge, type Registry } from '../infra/base/metrics';
import { rootLogger, type Log } from '../infra/base/log';

// Meters requests without ever slowing or failing them. emit() appends to a bounded FIFO and returns; one
// loop produces from its head in batches (lingering lingerMs for a batch to fill) and, while the bus refuses (broker down), retries the same batch
// with capped exponential backoff. Nothing accepted is lost while the buffer has room; when it is full the
// oldest waiting event is dropped, counted and warned about. Delivery is at-least-once (a batch whose answer
// was lost may have been written), and every event carries a unique id for consumers to dedupe. With Kafka,
// open the bus with { idempotent: true }: a retry resends the very same records, so the broker recognises a
// batch it already has and the duplicates mostly never happen.

/** Where a surface's usage events go: the UsageProducer, or anything that takes events the same way. */
export interface UsageSink {
  emit(event: UsageEvent): void;
}

export interface UsageProducerOptions {
  /** Events waiting to be produced at most; default 100,000 (about 30 MB). */
  maxBuffered?: number;
  /** Events per produce() call at most. */
  maxBatch?: number;
  /**
   * How long the loop waits, once an event arrives at an empty buffer, for more to join its batch (unless maxBatch
   * fill up first); default 5 ms, Kafka's own producer default for linger.ms since Kafka 4.0 (KIP-1030). Without
   * it a gateway serving one request at a time produced a batch per request: a bus call, a record batch and a
   * reader's wake-up per event, three times the cost of the event itself.
   */
  lingerMs?: number;
  retryMinMs?: number;
  retryMaxMs?: number;
  /** How long close() keeps trying to deliver what is buffered. */
  closeTimeoutMs?: number;
  topic?: string;
  log?: Log;
  registry?: Registry;
}

interface Entry {
  seq: number;
  record: ProduceRecord;
}

const DROP_WARN_EVERY_MS = 10_000;
/** buffer_full: the oldest made room; closed: emitted after close, or undelivered at close; invalid: not encodable. */
type DropReason = 'buffer_full' | 'closed' | 'invalid';

export class UsageProducer implements UsageSink {
  private readonly ring: Array<Entry | undefined>;
  private head = 0;
  private size = 0;
  private inflight: Entry[] = [];
  private accepted = 0;
  private closed = false;
  /** Set by close(): the loop exits at its next turn, delivered or not. */
  private stopping = false;
  private wake: (() => void) | null = null;
  /** Set while the loop lingers for a fuller batch: emit() ends the wait early once maxBatch events wait. */
  private lingerEnd: (() => void) | null = null;
  private readonly waiters: Array<{ seq: number; resolve: () => void }> = [];
  private readonly loop: Promise<void>;
  private readonly opts: Required<Omit<UsageProducerOptions, 'log' | 'registry'>>;
  private readonly log: Log;
  private readonly registry: Registry;
  private readonly buffered: Gauge;
  private readonly dropped: Record<DropReason, Counter>;
  private readonly produced: Counter;
  private dropsSinceWarn = 0;
  private lastDropWarn = 0;
  private failingSince: number | null = null;

  constructor(private readonly bus: Bus, options: UsageProducerOptions = {}) {
    this.opts = {
      maxBuffered: options.maxBuffered ?? 100_000,
      maxBatch: options.maxBatch ?? 500,
      lingerMs: options.lingerMs ?? 5,
      retryMinMs: options.retryMinMs ?? 100,
      retryMaxMs: options.retryMaxMs ?? 5_000,
      closeTimeoutMs: options.closeTimeoutMs ?? 30_000,
      topic: options.topic ?? TOPIC.usageEvents,
    };
    if (!(this.opts.maxBuffered >= 1 && this.opts.maxBatch >= 1)) throw new RangeError('maxBuffered and maxBatch must be at least 1');
    this.ring = new Array<Entry | undefined>(this.opts.maxBuffered);
    this.log = options.log ?? rootLogger().child({ component: 'usage' });
    this.registry = options.registry ?? defaultRegistry;
    this.buffered = this.registry.gauge('meridian_usage_buffered_events', 'Usage events accepted and not yet produced', undefined, () => this.size + this.inflight.length);
    const droppedHelp = 'Usage events never produced: buffer full (oldest first), closed, or not encodable';
    this.dropped = {
      buffer_full: this.registry.counter('meridian_usage_events_dropped_total', droppedHelp, { reason: 'buffer_full' }),
      closed: this.registry.counter('meridian_usage_events_dropped_total', droppedHelp, { reason: 'closed' }),
      invalid: this.registry.counter('meridian_usage_events_dropped_total', droppedHelp, { reason: 'invalid' }),
    };
    this.produced = this.registry.counter('meridian_usage_events_produced_total', 'Usage events produced to the bus');
    this.loop = this.run();
  }

  /** Accepts an event; never throws, never waits. */
  emit(event: UsageEvent): void {
    if (this.closed) return this.noteDrop('closed', 1);
    let record: ProduceRecord;
    try {
      record = encodeUsageEvent(event);
    } catch {
      return this.noteDrop('invalid', 1);
    }
    if (this.size === this.opts.maxBuffered) {
      this.shift();
      this.noteDrop('buffer_full', 1);
    }
    this.ring[(this.head + this.size) % this.opts.maxBuffered] = { seq: ++this.accepted, record };
    this.size++;
    this.wake?.();
    if (this.lingerEnd !== null && this.size >= this.opts.maxBatch) this.lingerEnd();
  }

  /** Resolves once every event accepted before this call is produced (or was dropped for room). */
  flush(): Promise<void> {
    const seq = this.accepted;
    if (this.oldestPending() > seq) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ seq, resolve }));
  }

  /**
   * Stops accepting, delivers what is buffered (for up to closeTimeoutMs), then stops. Close the bus after
   * this. Events still undelivered at the deadline are counted as dropped (reason closed) and logged.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), this.opts.closeTimeoutMs)));
    const outcome = await Promise.race([this.flush().then(() => 'flushed' as const), deadline]);
    clearTimeout(timer);
    this.stopping = true;
    this.wake?.();
    this.registry.remove(this.buffered);
    if (outcome === 'flushed') return this.loop;
    const lost = this.size + this.inflight.length;
    this.log.error({ lost }, 'usage events not produced before close');
    this.dropped.closed.inc(lost);
    this.ring.fill(undefined);
    this.size = 0;
    this.inflight = [];
    for (const w of this.waiters.splice(0)) w.resolve();
    // A produce() may still be pending inside the bus (and may yet deliver some of these); it ends when the
    // caller closes the bus.
  }

  private shift(): Entry {
    const e = this.ring[this.head]!;
    this.ring[this.head] = undefined;
    this.head = (this.head + 1) % this.opts.maxBuffered;
    this.size--;
    return e;
  }

  private oldestPending(): number {
    return this.inflight[0]?.seq ?? (this.size > 0 ? this.ring[this.head]!.seq : Infinity);
  }

  private settleWaiters(): void {
    const oldest = this.oldestPending();
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      if (this.waiters[i]!.seq < oldest) this.waiters.splice(i, 1)[0]!.resolve();
    }
  }

  /** Counted always; warned about at most once per DROP_WARN_EVERY_MS so a full buffer cannot flood the log. */
  private noteDrop(reason: DropReason, n: number): void {
    this.dropped[reason].inc(n);
    this.dropsSinceWarn += n;
    const now = Date.now();
    if (now - this.lastDropWarn >= DROP_WARN_EVERY_MS) {
      this.log.warn({ dropped: this.dropsSinceWarn, reason, maxBuffered: this.opts.maxBuffered }, 'usage events dropped');
      this.dropsSinceWarn = 0;
      this.lastDropWarn = now;
    }
    if (reason === 'buffer_full') this.settleWaiters(); // a dropped event no longer holds back flush()
  }

  private async run(): Promise<void> {
    let delay = this.opts.retryMinMs;
    for (;;) {
      if (this.stopping) return;
      if (this.inflight.length === 0) {
        if (this.size === 0) {
          await new Promise<void>((r) => (this.wake = r));
          this.wake = null;
          if (this.opts.lingerMs > 0 && this.size < this.opts.maxBatch && !this.stopping) await this.linger();
          continue;
        }
        const n = Math.min(this.size, this.opts.maxBatch);
        for (let i = 0; i < n; i++) this.inflight.push(this.shift());
      }
      try {
        await this.bus.produce(this.opts.topic, this.inflight.map((e) => e.record));
        this.produced.inc(this.inflight.length);
        this.inflight = [];
        delay = this.opts.retryMinMs;
        if (this.failingSince !== null) this.log.info({ afterMs: Date.now() - this.failingSince }, 'usage events flowing again');
        this.failingSince = null;
        this.settleWaiters();
      } catch (e) {
        if (this.failingSince === null) {
          this.failingSince = Date.now();
          this.log.warn({ err: e, buffered: this.size + this.inflight.length }, 'usage events not produced; retrying with backoff');
        }
        await this.sleep(delay);
        delay = Math.min(delay * 2, this.opts.retryMaxMs);
      }
    }
  }

  private linger(): Promise<void> {
    return new Promise<void>((resolve) => {
      const t = setTimeout(() => this.lingerEnd?.(), this.opts.lingerMs);
      this.lingerEnd = () => {
        clearTimeout(t);
        this.lingerEnd = null;
        resolve();
      };
    });
  }

  private sleep(ms: number): Promise<void> {
    // Jitter, so many producers recovering from the same outage do not retry in step.
    return new Promise((r) => setTimeout(r, ms * (0.5 + Math.random() / 2)));
  }
}
