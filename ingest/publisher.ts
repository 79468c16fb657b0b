import type { Bus, ProduceRecord } from '../bus/bus';
import type { Log } from '../infra/base/log';

// The publish side of ingest: a bounded queue of produce calls, one lane per topic, each lane drained by one loop
// with one produce in flight (publish order = completion order on each single-partition stream topic; Kafka keeps
// no order across topics, so neither do we). A lane's produce takes every item queued behind it at once (up to
// MAX_RECORDS / MAX_BYTES), as Kafka's own producer batches what waits: with replication 3 and acks=all a produce
// costs 100–400 ms on a loaded machine (the multi-host test), so one item per round trip fell behind a feed of
// 50 items/s and queued for minutes. offer() never blocks and never throws: when the queue is full the item is
// dropped and counted, so a slow broker cannot stall packet processing.

export interface PublishItem {
  topic: string;
  records: ProduceRecord[];
  /** Called once the produce resolved (latency measurement); not called on failure or drop. */
  onPublished?: (doneMs: number) => void;
}

export interface PublisherStats {
  offered: number;
  /** Items whose produce resolved (an item counts once, whatever produce carried it). */
  published: number;
  records: number;
  /** Dropped at offer() because the queue was full. */
  queueDrops: number;
  /** Items whose produce failed. */
  failed: number;
  queued: number;
}

export interface PublisherOptions {
  /** Items queued over all topics, in flight excluded. */
  maxItems: number;
  log?: Log;
  /** Minimum gap between two "produce failed" warnings. */
  warnEveryMs?: number;
  now?: () => number;
  /**
   * false: one produce per item, never several items in one (tests that check what each item carried, with a bus
   * that answers at once). Default true.
   */
  coalesce?: boolean;
}

/** The most records, and record bytes (key + value), one produce carries: well under Kafka's default 1 MiB batch. */
export const MAX_RECORDS = 2000;
export const MAX_BYTES = 512 * 1024;

interface Lane {
  readonly topic: string;
  items: PublishItem[];
  running: boolean;
}

export class Publisher {
  private readonly lanes = new Map<string, Lane>();
  private queued = 0;
  private running = 0;
  private closed = false;
  private lastWarnMs = -Infinity;
  private idleWaiters: Array<() => void> = [];
  private readonly counts = { offered: 0, published: 0, records: 0, queueDrops: 0, failed: 0 };
  private readonly now: () => number;
  private readonly coalesce: boolean;

  constructor(
    private readonly bus: Bus,
    private readonly opts: PublisherOptions,
  ) {
    this.now = opts.now ?? (() => performance.timeOrigin + performance.now());
    this.coalesce = opts.coalesce ?? true;
  }

  get length(): number {
    return this.queued;
  }

  stats(): PublisherStats {
    return { ...this.counts, queued: this.queued };
  }

  /** Queues one produce; false when it was dropped (queue full or closed). */
  offer(item: PublishItem): boolean {
    this.counts.offered++;
    if (this.closed || this.queued >= this.opts.maxItems) {
      this.counts.queueDrops++;
      return false;
    }
    let lane = this.lanes.get(item.topic);
    if (lane === undefined) {
      lane = { topic: item.topic, items: [], running: false };
      this.lanes.set(item.topic, lane);
    }
    lane.items.push(item);
    this.queued++;
    if (!lane.running) void this.drain(lane);
    return true;
  }

  /** Resolves once everything offered so far has been produced (or failed). */
  idle(): Promise<void> {
    if (this.running === 0 && this.queued === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops taking items; waits up to `timeoutMs` for the queue to drain. */
  async close(timeoutMs = 5000): Promise<void> {
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.idle(), new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
  }

  /** The items one produce carries: the lane's head, and what waits behind it within the bounds. */
  private take(lane: Lane): PublishItem[] {
    const items = lane.items;
    let n = 1;
    if (this.coalesce) {
      let records = items[0]!.records.length;
      let bytes = recordBytes(items[0]!.records);
      while (n < items.length) {
        const next = items[n]!.records;
        const b = recordBytes(next);
        if (records + next.length > MAX_RECORDS || bytes + b > MAX_BYTES) break;
        records += next.length;
        bytes += b;
        n++;
      }
    }
    return items.splice(0, n);
  }

  private async drain(lane: Lane): Promise<void> {
    lane.running = true;
    this.running++;
    while (lane.items.length > 0) {
      const taken = this.take(lane);
      this.queued -= taken.length;
      const records = taken.length === 1 ? taken[0]!.records : taken.flatMap((i) => i.records);
      try {
        await this.bus.produce(lane.topic, records);
        this.counts.published += taken.length;
        this.counts.records += records.length;
        const t = this.now();
        for (const i of taken) i.onPublished?.(t);
      } catch (e) {
        this.counts.failed += taken.length;
        const t = this.now();
        if (t - this.lastWarnMs >= (this.opts.warnEveryMs ?? 10_000)) {
          this.lastWarnMs = t;
          this.opts.log?.warn({ err: e, topic: lane.topic, failed: this.counts.failed }, 'produce failed; batch dropped');
        }
      }
    }
    lane.running = false;
    this.running--;
    if (this.running === 0 && this.queued === 0) for (const w of this.idleWaiters.splice(0)) w();
  }
}

function recordBytes(records: ProduceRecord[]): number {
  let n = 0;
  for (const r of records) n += (r.key?.length ?? 0) + (r.value?.length ?? 0);
  return n;
}
