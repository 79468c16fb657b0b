import type { Bus, ProduceRecord } from './bus';
import type { Counter, Gauge, Registry } from '../infra/base/metrics';
import type { Log } from '../infra/base/log';

// Produces events of one topic without ever slowing or failing the code that emits them — the pattern of
// usage-producer.ts, for any topic and codec (submit.traces uses it). emit() encodes, appends to a bounded FIFO
// and returns; one loop produces from its head in batches and, while the bus refuses, retries the same batch
// with capped, jittered exponential backoff. Full buffer: the oldest waiting event is dropped and counted.
// At-least-once: a batch whose answer was lost may have been written, so events carry ids for consumers to
// dedupe (and an idempotent Kafka producer makes such duplicates rare).

export interface EventProducerOptions<T> {
  topic: string;
  encode: (event: T) => ProduceRecord;
  /** Metric name prefix: `<prefix>_produced_total`, `<prefix>_dropped_total{reason}`, `<prefix>_buffered`. */
  metricPrefix: string;
  registry: Registry;
  log: Log;
  maxBuffered?: number;
  maxBatch?: number;
  retryMinMs?: number;
  retryMaxMs?: number;
  closeTimeoutMs?: number;
}

type DropReason = 'buffer_full' | 'closed' | 'invalid';
const DROP_WARN_EVERY_MS = 10_000;

export class EventProducer<T> {
  private ring: ProduceRecord[] = [];
  /** Index of the oldest waiting record in `ring` (the array is compacted when half of it is consumed). */
  private head = 0;
  private inflight: ProduceRecord[] = [];
  private closed = false;
  private stopping = false;
  private wake: (() => void) | null = null;
  private idleWaiters: Array<() => void> = [];
  private readonly loop: Promise<void>;
  private readonly maxBuffered: number;
  private readonly maxBatch: number;
  private readonly retryMinMs: number;
  private readonly retryMaxMs: number;
  private readonly closeTimeoutMs: number;
  private readonly produced: Counter;
  private readonly dropped: Record<DropReason, Counter>;
  private readonly buffered: Gauge;
  private lastDropWarn = 0;
  private failingSince: number | null = null;

  constructor(private readonly bus: Bus, private readonly opts: EventProducerOptions<T>) {
    this.maxBuffered = opts.maxBuffered ?? 100_000;
    this.maxBatch = opts.maxBatch ?? 500;
    this.retryMinMs = opts.retryMinMs ?? 100;
    this.retryMaxMs = opts.retryMaxMs ?? 5_000;
    this.closeTimeoutMs = opts.closeTimeoutMs ?? 10_000;
    if (!(this.maxBuffered >= 1 && this.maxBatch >= 1)) throw new RangeError('maxBuffered and maxBatch must be at least 1');
    const r = opts.registry;
    const p = opts.metricPrefix;
    this.produced = r.counter(`${p}_produced_total`, `Events produced to ${opts.topic}`);
    const help = `Events never produced to ${opts.topic}: buffer full (oldest first), closed, or not encodable`;
    this.dropped = {
      buffer_full: r.counter(`${p}_dropped_total`, help, { reason: 'buffer_full' }),
      closed: r.counter(`${p}_dropped_total`, help, { reason: 'closed' }),
      invalid: r.counter(`${p}_dropped_total`, help, { reason: 'invalid' }),
    };
    this.buffered = r.gauge(`${p}_buffered`, `Events accepted for ${opts.topic} and not yet produced`, undefined, () => this.waiting + this.inflight.length);
    this.loop = this.run();
  }

  private get waiting(): number {
    return this.ring.length - this.head;
  }

  /** Accepts an event; never throws, never waits. */
  emit(event: T): void {
    if (this.closed) return this.drop('closed', 1);
    let rec: ProduceRecord;
    try {
      rec = this.opts.encode(event);
    } catch {
      return this.drop('invalid', 1);
    }
    if (this.waiting >= this.maxBuffered) {
      this.head++;
      this.drop('buffer_full', 1);
    }
    this.ring.push(rec);
    this.wake?.();
  }

  /** Resolves once nothing is waiting or in flight (everything emitted before was produced or dropped). */
  flush(): Promise<void> {
    if (this.waiting === 0 && this.inflight.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /** Stops accepting, delivers what is buffered for up to closeTimeoutMs, then stops (close the bus after). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    const flushed = await Promise.race([this.flush().then(() => true), new Promise<false>((r) => (timer = setTimeout(() => r(false), this.closeTimeoutMs)))]);
    clearTimeout(timer);
    this.stopping = true;
    this.wake?.();
    this.opts.registry.remove(this.buffered);
    if (!flushed) {
      const lost = this.waiting + this.inflight.length;
      this.opts.log.error({ lost, topic: this.opts.topic }, 'events not produced before close');
      this.dropped.closed.inc(lost);
      this.ring = [];
      this.head = 0;
      this.inflight = [];
      for (const w of this.idleWaiters.splice(0)) w();
      return;
    }
    await this.loop;
  }

  private drop(reason: DropReason, n: number): void {
    this.dropped[reason].inc(n);
    const now = Date.now();
    if (now - this.lastDropWarn >= DROP_WARN_EVERY_MS) {
      this.lastDropWarn = now;
      this.opts.log.warn({ topic: this.opts.topic, reason, maxBuffered: this.maxBuffered }, 'events dropped');
    }
  }

  private async run(): Promise<void> {
    let delay = this.retryMinMs;
    for (;;) {
      if (this.stopping) return;
      if (this.inflight.length === 0) {
        if (this.waiting === 0) {
          for (const w of this.idleWaiters.splice(0)) w();
          await new Promise<void>((r) => (this.wake = r));
          this.wake = null;
          continue;
        }
        const n = Math.min(this.waiting, this.maxBatch);
        this.inflight = this.ring.slice(this.head, this.head + n);
        // Let go of what is now in flight: a consumed slot kept its record (and whatever pool slab its buffers
        // are views of) until the next compaction, up to 4,096 records per producer.
        this.ring.fill(undefined as unknown as ProduceRecord, this.head, this.head + n);
        this.head += n;
        if (this.head >= 4096 && this.head * 2 >= this.ring.length) {
          this.ring = this.ring.slice(this.head);
          this.head = 0;
        }
      }
      try {
        await this.bus.produce(this.opts.topic, this.inflight);
        this.produced.inc(this.inflight.length);
        this.inflight = [];
        delay = this.retryMinMs;
        if (this.failingSince !== null) this.opts.log.info({ topic: this.opts.topic, afterMs: Date.now() - this.failingSince }, 'events flowing again');
        this.failingSince = null;
      } catch (e) {
        if (this.failingSince === null) {
          this.failingSince = Date.now();
          this.opts.log.warn({ err: e, topic: this.opts.topic, buffered: this.waiting + this.inflight.length }, 'events not produced; retrying with backoff');
        }
        await new Promise((r) => setTimeout(r, delay * (0.5 + Math.random() / 2)));
        delay = Math.min(delay * 2, this.retryMaxMs);
      }
    }
  }
}
