import type { BusMessage } from './bus';
import type { PartitionLog } from './embedded-log';

// A reading position in one partition of the embedded bus and its delivery loop. One batch at a time per
// cursor: the next batch waits for the handler's promise, so a partition's messages reach a handler in order.
// The position only moves past a batch once its handler resolved (that is the "commit"); a handler that throws
// gets the same position again after retryDelayMs, so delivery is at-least-once and the bus survives.

/**
 * Deliveries run as microtasks, which starve timers and I/O for as long as they keep coming. A handler that
 * produces to a topic it reads (or two that feed each other) would never yield, so after BURST_LIMIT
 * deliveries within one turn of the event loop the rest wait for setImmediate.
 */
const BURST_LIMIT = 10_000;
let burst = 0;
let burstReset = false;

function schedule(run: () => void): void {
  if (!burstReset) {
    burstReset = true;
    setImmediate(() => {
      burst = 0;
      burstReset = false;
    });
  }
  if (burst++ < BURST_LIMIT) queueMicrotask(run);
  else setImmediate(run);
}

export type BatchHandler = (messages: BusMessage[]) => Promise<void> | void;

export interface CursorHooks {
  maxBatch: number;
  retryDelayMs: number;
  onSkip(log: PartitionLog, skipped: number): void;
  onHandlerError(log: PartitionLog, batch: BusMessage[], err: unknown): void;
}

export class Cursor {
  /** Who receives batches now; null = nobody (a group partition without a member). */
  handler: BatchHandler | null = null;
  /** A batch has completed at least once, so a group keeps this position after its members leave. */
  committed = false;
  private scheduled = false;
  private inFlight = false;
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;
  private settled: Promise<void> = Promise.resolve();
  private readonly drainNow = (): void => this.drain();

  constructor(readonly log: PartitionLog, public next: number, private readonly hooks: CursorHooks) {
    log.readers.add(this);
  }

  /** Neither committed nor handling a batch: dropping it loses nothing. */
  get pristine(): boolean {
    return !this.committed && !this.inFlight;
  }

  /**
   * Called on every append. A microtask, not setImmediate: the consumer runs right after the producer's
   * synchronous code, which is what keeps produce→consume well under a millisecond; whatever the producer
   * appended in the meantime is one batch.
   */
  wake(): void {
    if (this.scheduled || this.inFlight || this.stopped || this.handler === null) return;
    this.scheduled = true;
    schedule(this.drainNow);
  }

  /** Resolves once the handler running now (if any) has finished; later batches are not waited for. */
  idle(): Promise<void> {
    return this.settled;
  }

  /** No more deliveries; resolves once the batch being handled (if any) is done. */
  stop(): Promise<void> {
    this.stopped = true;
    this.log.readers.delete(this);
    if (this.retry !== null) clearTimeout(this.retry);
    this.retry = null;
    return this.settled;
  }

  private drain(): void {
    this.scheduled = false;
    const handler = this.handler;
    if (this.inFlight || this.stopped || handler === null) return;
    const { batch, from, next, skipped } = this.log.read(this.next, this.hooks.maxBatch);
    if (skipped > 0) this.hooks.onSkip(this.log, skipped);
    this.next = from; // so a retried batch does not count the same skip twice
    if (batch.length === 0) {
      this.next = next;
      return;
    }
    this.inFlight = true;
    let result: Promise<void> | void;
    try {
      result = handler(batch);
    } catch (err) {
      this.fail(batch, err);
      return;
    }
    if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
      this.settled = Promise.resolve(result).then(
        () => this.done(next),
        (err: unknown) => this.fail(batch, err),
      );
    } else {
      this.done(next);
    }
  }

  private done(next: number): void {
    this.inFlight = false;
    this.next = next;
    this.committed = true;
    if (next < this.log.end) this.wake();
  }

  private fail(batch: BusMessage[], err: unknown): void {
    this.hooks.onHandlerError(this.log, batch, err);
    if (this.stopped) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.inFlight = false;
      this.wake();
    }, this.hooks.retryDelayMs);
  }
}
