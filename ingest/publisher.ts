import type { Bus, ProduceRecord } from '../bus/bus';
import type { Log } from '../infra/base/log';

// The publish side of ingest: a bounded FIFO of produce calls drained by one loop, one bus.produce per item
// (an item = one entry batch's transactions, or one slot record). One produce in flight keeps publish order
// equal to completion order on the single-partition stream topics. offer() never blocks and never throws:
// when the queue is full the item is dropped and counted, so a slow broker cannot stall packet processing.

export interface PublishItem {
  topic: string;
  records: ProduceRecord[];
  /** Called once the produce resolved (latency measurement); not called on failure or drop. */
  onPublished?: (doneMs: number) => void;
}

export interface PublisherStats {
  offered: number;
  published: number;
  records: number;
  /** Dropped at offer() because the queue was full. */
  queueDrops: number;
  failed: number;
  queued: number;
}

export interface PublisherOptions {
  maxItems: number;
  log?: Log;
  /** Minimum gap between two "produce failed" warnings. */
  warnEveryMs?: number;
  now?: () => number;
}

export class Publisher {
  private readonly queue: Array<PublishItem | undefined> = []; // consumed slots are cleared to release records
  private head = 0;
  private running = false;
  private closed = false;
  private lastWarnMs = -Infinity;
  private idleWaiters: Array<() => void> = [];
  private readonly counts = { offered: 0, published: 0, records: 0, queueDrops: 0, failed: 0 };
  private readonly now: () => number;

  constructor(
    private readonly bus: Bus,
    private readonly opts: PublisherOptions,
  ) {
    this.now = opts.now ?? (() => performance.timeOrigin + performance.now());
  }

  get length(): number {
    return this.queue.length - this.head;
  }

  stats(): PublisherStats {
    return { ...this.counts, queued: this.length };
  }

  /** Queues one produce; false when it was dropped (queue full or closed). */
  offer(item: PublishItem): boolean {
    this.counts.offered++;
    if (this.closed || this.length >= this.opts.maxItems) {
      this.counts.queueDrops++;
      return false;
    }
    this.queue.push(item);
    if (!this.running) void this.drain();
    return true;
  }

  /** Resolves once everything offered so far has been produced (or failed). */
  idle(): Promise<void> {
    if (!this.running && this.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops taking items; waits up to `timeoutMs` for the queue to drain. */
  async close(timeoutMs = 5000): Promise<void> {
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.idle(), new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
  }

  private async drain(): Promise<void> {
    this.running = true;
    while (this.length > 0) {
      const item = this.queue[this.head]!;
      this.queue[this.head++] = undefined;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue.splice(0, this.head);
        this.head = 0;
      }
      try {
        await this.bus.produce(item.topic, item.records);
        this.counts.published++;
        this.counts.records += item.records.length;
        item.onPublished?.(this.now());
      } catch (e) {
        this.counts.failed++;
        const t = this.now();
        if (t - this.lastWarnMs >= (this.opts.warnEveryMs ?? 10_000)) {
          this.lastWarnMs = t;
          this.opts.log?.warn({ err: e, topic: item.topic, failed: this.counts.failed }, 'produce failed; batch dropped');
        }
      }
    }
    this.queue.length = 0;
    this.head = 0;
    this.running = false;
    for (const w of this.idleWaiters.splice(0)) w();
  }
}
