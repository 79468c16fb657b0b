import type { BudgetedQueue, QueueBudget } from './queue-budget';

// One subscriber's outbound queue. The pipeline never waits for a subscriber: messages are written straight to
// the call while it accepts them (write() returns true); once it pushes back, they wait here until 'drain'.
// The wait is bounded three ways — messages, bytes, and lag (age of the oldest waiting message) — and the sum
// over all queues is bounded by the process-wide QueueBudget. The push that would cross a bound drops the
// whole queue and reports overflow, and the owner ends that subscriber alone (DATA_LOSS). Nobody else is slowed.
//
// What sits below this queue is bounded by the transport, not by us: on the own HTTP/2 server (the default) the
// stream's send queue up to its high-water mark and the peer's window (h2/stream.ts); on grpc-js the Node
// Http2Stream the framed messages are written straight to (transport/grpc-stream.ts) and its send window.

/**
 * The part of a call's response stream this queue needs (h2/stream.ts, or transport/grpc-stream.ts's FramedSink).
 * A message may arrive as two chunks written back to back (a per-stream head, then a body shared by every stream it
 * goes to: v2 updates), so that the shared bytes are copied once, into the transport's output, rather than once
 * more per stream; the second write's answer is the one that counts.
 */
export interface Sink {
  write(chunk: Buffer): boolean;
  once(event: 'drain', listener: () => void): unknown;
}

export interface QueueLimits {
  maxBytes: number;
  maxMessages: number;
  /** Oldest waiting message older than this (ms) ends the subscriber; default: no lag bound. */
  maxLagMs?: number;
}

export type OverflowLimit = 'bytes' | 'messages' | 'lag' | 'budget';
export type Overflow = { limit: OverflowLimit; max: number };

export interface QueueHooks {
  /**
   * Called when a message is handed to the sink, just before; `tag` is what push() was given (e.g. observed-at),
   * `buf` its first chunk, `bytes` the whole message.
   */
  onWrite?: (bytes: number, tag: number, buf: Buffer) => void;
  /** A bound was crossed: everything waiting was dropped and the queue is closed (the owner ends the subscriber). */
  onOverflow: (o: Overflow) => void;
  /**
   * Asked first when a bound is crossed: true keeps the queue open and empty instead (a v2 stream whose lag policy
   * skips); onOverflow is then not called, and afterSkip is, once the queue takes pushes again (the gap notice).
   */
  skipOnOverflow?: (o: Overflow) => boolean;
  afterSkip?: () => void;
}

/** Compact the backing array once this many consumed slots sit at its head. */
const COMPACT_AT = 1024;

export class SubscriberQueue implements BudgetedQueue {
  private items: Buffer[] = [];
  /** The shared second chunk of each waiting message (EMPTY for a message in one piece). */
  private tails: Buffer[] = [];
  private tags: number[] = [];
  /** When each waiting message was queued (ms), for the lag bound and eviction order. */
  private times: number[] = [];
  private head = 0;
  private queuedBytes = 0;
  private blocked = false;
  private closed = false;
  private readonly maxLagMs: number;

  constructor(
    private readonly sink: Sink,
    private readonly limits: QueueLimits,
    private readonly hooks: QueueHooks,
    private readonly budget?: QueueBudget,
    private readonly now: () => number = Date.now,
  ) {
    this.maxLagMs = limits.maxLagMs ?? Number.POSITIVE_INFINITY;
  }

  /** Messages waiting (not yet handed to the sink). */
  get depth(): number {
    return this.items.length - this.head;
  }

  get bytes(): number {
    return this.queuedBytes;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  get oldestQueuedAt(): number {
    return this.head < this.times.length ? this.times[this.head]! : Number.POSITIVE_INFINITY;
  }

  /**
   * false when the queue is closed or this push overflowed it (the queue is then closed and empty). `tail`: a
   * second chunk of the same message, shared with other queues (counted here in full all the same: the bounds
   * stay what one copy per stream would take).
   */
  push(buf: Buffer, tag = Number.NaN, tail: Buffer = EMPTY): boolean {
    if (this.closed) return false;
    if (!this.blocked && this.depth === 0) {
      this.writeOne(buf, tag, tail);
      return true;
    }
    const size = buf.length + tail.length;
    if (this.depth + 1 > this.limits.maxMessages) return this.overflow({ limit: 'messages', max: this.limits.maxMessages });
    if (this.queuedBytes + size > this.limits.maxBytes) return this.overflow({ limit: 'bytes', max: this.limits.maxBytes });
    const now = this.now();
    if (now - this.oldestQueuedAt > this.maxLagMs) return this.overflow({ limit: 'lag', max: this.maxLagMs });
    if (this.budget !== undefined) {
      this.budget.makeRoom(size);
      if (this.closed) return false; // this queue was the most lagged one
      this.budget.charge(size);
      if (this.depth === 0) this.budget.backlogged.add(this);
    }
    this.items.push(buf);
    this.tails.push(tail);
    this.tags.push(tag);
    this.times.push(now);
    this.queuedBytes += size;
    return true;
  }

  /** Ends the subscriber if its oldest waiting message is older than the lag bound (the periodic sweep). */
  checkLag(now: number): void {
    if (!this.closed && now - this.oldestQueuedAt > this.maxLagMs) this.overflow({ limit: 'lag', max: this.maxLagMs });
  }

  /** The process budget needs room: drop everything and end the subscriber. */
  evict(max: number): void {
    if (!this.closed) this.overflow({ limit: 'budget', max });
  }

  /** Drops everything waiting; later pushes are refused. */
  close(): void {
    this.closed = true;
    this.reset();
  }

  private reset(): void {
    if (this.budget !== undefined && this.queuedBytes > 0) this.budget.release(this.queuedBytes);
    this.budget?.backlogged.delete(this);
    // Fresh arrays: the old ones (and the Buffers they reference) become garbage at once.
    this.items = [];
    this.tails = [];
    this.tags = [];
    this.times = [];
    this.head = 0;
    this.queuedBytes = 0;
  }

  private overflow(o: Overflow): false {
    // Reset first: the hook may push (a gap notice) into the emptied queue when it continues.
    this.reset();
    if (this.hooks.skipOnOverflow?.(o) === true) {
      this.hooks.afterSkip?.();
      return false;
    }
    this.closed = true;
    this.hooks.onOverflow(o);
    return false;
  }

  private writeOne(buf: Buffer, tag: number, tail: Buffer): void {
    this.hooks.onWrite?.(buf.length + tail.length, tag, buf);
    let ok = this.sink.write(buf);
    if (tail.length > 0) ok = this.sink.write(tail);
    if (!ok) {
      this.blocked = true;
      this.sink.once('drain', this.onDrain);
    }
  }

  private readonly onDrain = (): void => {
    this.blocked = false;
    while (!this.closed && !this.blocked && this.head < this.items.length) {
      const buf = this.items[this.head]!;
      const tail = this.tails[this.head]!;
      const tag = this.tags[this.head]!;
      this.items[this.head] = EMPTY; // the sink holds it now; do not keep it alive here too
      this.tails[this.head] = EMPTY;
      this.head++;
      const size = buf.length + tail.length;
      this.queuedBytes -= size;
      this.budget?.release(size);
      this.writeOne(buf, tag, tail);
    }
    if (this.closed) return; // close() released the rest
    if (this.head === this.items.length) {
      this.reset();
    } else if (this.head >= COMPACT_AT) {
      this.items = this.items.slice(this.head);
      this.tails = this.tails.slice(this.head);
      this.tags = this.tags.slice(this.head);
      this.times = this.times.slice(this.head);
      this.head = 0;
    }
  };
}

const EMPTY = Buffer.alloc(0);
