// The process-wide bound on bytes waiting in subscriber queues. Each queue is bounded on its own (messages,
// bytes, lag), but hundreds of subscribers that stop reading, each under its own bound, would still add up to
// gigabytes. Every queue charges its waiting bytes here; a push that would take the sum over `maxBytes`
// first ends the most-lagged subscribers (oldest waiting message first) until the sum is back under the low
// water mark, so eviction runs in bursts, not on every push. What an evicted subscriber held is released at
// once (its queue is dropped), and it is ended with DATA_LOSS like any slow consumer.
//
// Bytes are counted per queue: a response shared by several subscribers counts once per queue holding it,
// which over-counts what is really held (the budget errs on the safe side).

/** What the budget needs from a queue. */
export interface BudgetedQueue {
  /** Bytes this queue is charged for. */
  readonly bytes: number;
  /** When the oldest waiting message was queued (ms); +Infinity when nothing waits. */
  readonly oldestQueuedAt: number;
  /** Drops the queue and ends its subscriber (DATA_LOSS, limit 'budget'). */
  evict(max: number): void;
  /** Ends the subscriber if its oldest waiting message is older than its lag bound. */
  checkLag(now: number): void;
}

/** Fraction of the budget an eviction burst brings the sum down to. */
const LOW_WATER = 0.9;

export class QueueBudget {
  /** Bytes waiting in all queues. */
  bytes = 0;
  /** Highest `bytes` seen (for tests and the figure in the README). */
  peak = 0;
  /** Subscribers ended to keep the sum under the budget. */
  evictions = 0;
  /** Queues with something waiting: the only candidates for eviction and for the lag sweep. */
  readonly backlogged = new Set<BudgetedQueue>();

  constructor(readonly maxBytes: number) {}

  /** Makes room for `n` more bytes, evicting the most lagged queues if needed (the caller's may be one of them). */
  makeRoom(n: number): void {
    if (this.bytes + n > this.maxBytes) this.evict(n);
  }

  charge(n: number): void {
    this.bytes += n;
    if (this.bytes > this.peak) this.peak = this.bytes;
  }

  release(n: number): void {
    this.bytes -= n;
  }

  /** Age of the oldest waiting message in any queue, ms (0 when nothing waits). */
  maxLagMs(now: number): number {
    let oldest = now;
    for (const q of this.backlogged) if (q.oldestQueuedAt < oldest) oldest = q.oldestQueuedAt;
    return now - oldest;
  }

  private evict(incoming: number): void {
    // Rare (bursts down to the low water mark), so sorting the backlogged queues here is fine.
    const target = this.maxBytes * LOW_WATER - incoming;
    const byLag = [...this.backlogged].sort((a, b) => a.oldestQueuedAt - b.oldestQueuedAt);
    for (const q of byLag) {
      if (this.bytes <= target) break;
      this.evictions++;
      q.evict(this.maxBytes); // releases its bytes and leaves `backlogged`
    }
  }
}
