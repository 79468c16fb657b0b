// One subscriber's outbound queue. The pipeline never waits for a subscriber: messages are written straight to
// the call while it accepts them (write() returns true); once it pushes back, they wait here until 'drain'.
// The wait is bounded in messages and in bytes; the push that would cross either bound drops the whole queue
// and reports overflow, and the owner ends that subscriber alone (DATA_LOSS). Nobody else is slowed.
//
// What sits below this queue is bounded by the transport, not by us: grpc-js's object-mode writable buffer
// (16 messages) plus the HTTP/2 stream's send window and buffer.

/** The part of a grpc-js ServerDuplexStream this queue needs. */
export interface Sink {
  write(chunk: Buffer): boolean;
  once(event: 'drain', listener: () => void): unknown;
}

export interface QueueLimits {
  maxBytes: number;
  maxMessages: number;
}

export type Overflow = { limit: 'bytes' | 'messages'; max: number };

export interface QueueHooks {
  /** Called when a message is handed to the sink; `tag` is what push() was given (e.g. observed-at). */
  onWrite?: (bytes: number, tag: number) => void;
  onOverflow: (o: Overflow) => void;
}

/** Compact the backing array once this many consumed slots sit at its head. */
const COMPACT_AT = 1024;

export class SubscriberQueue {
  private items: Buffer[] = [];
  private tags: number[] = [];
  private head = 0;
  private queuedBytes = 0;
  private blocked = false;
  private closed = false;

  constructor(
    private readonly sink: Sink,
    private readonly limits: QueueLimits,
    private readonly hooks: QueueHooks,
  ) {}

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

  /** false when the queue is closed or this push overflowed it (the queue is then closed and empty). */
  push(buf: Buffer, tag = Number.NaN): boolean {
    if (this.closed) return false;
    if (!this.blocked && this.depth === 0) {
      this.writeOne(buf, tag);
      return true;
    }
    if (this.depth + 1 > this.limits.maxMessages) return this.overflow({ limit: 'messages', max: this.limits.maxMessages });
    if (this.queuedBytes + buf.length > this.limits.maxBytes) return this.overflow({ limit: 'bytes', max: this.limits.maxBytes });
    this.items.push(buf);
    this.tags.push(tag);
    this.queuedBytes += buf.length;
    return true;
  }

  /** Drops everything waiting; later pushes are refused. */
  close(): void {
    this.closed = true;
    this.items = [];
    this.tags = [];
    this.head = 0;
    this.queuedBytes = 0;
  }

  private overflow(o: Overflow): false {
    this.close();
    this.hooks.onOverflow(o);
    return false;
  }

  private writeOne(buf: Buffer, tag: number): void {
    this.hooks.onWrite?.(buf.length, tag);
    if (!this.sink.write(buf)) {
      this.blocked = true;
      this.sink.once('drain', this.onDrain);
    }
  }

  private readonly onDrain = (): void => {
    this.blocked = false;
    while (!this.closed && !this.blocked && this.head < this.items.length) {
      const buf = this.items[this.head]!;
      const tag = this.tags[this.head]!;
      this.head++;
      this.queuedBytes -= buf.length;
      this.writeOne(buf, tag);
    }
    if (this.closed) return;
    if (this.head === this.items.length) {
      this.items = [];
      this.tags = [];
      this.head = 0;
    } else if (this.head >= COMPACT_AT) {
      this.items = this.items.slice(this.head);
      this.tags = this.tags.slice(this.head);
      this.head = 0;
    }
  };
}
