import { newUsageEvent } from '../bus/topics/usage-events';
import type { UsageSink } from '../bus/usage-producer';

// Usage of the stream surface, for billing: one event per rental per period (and one when a stream ends) with
// the messages its streams were written in that period. Sessions count their own writes (a field increment on
// the write path); this reads and resets the counts on a timer, so nothing here runs per message.

export const STREAM_USAGE_METHOD = 'Subscribe';

export interface MeteredStream {
  readonly rental?: { id: string };
  /** Messages written to the client since the last take. */
  takeDelivered(): number;
}

export class StreamUsage {
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly sink: UsageSink,
    private readonly streams: () => Iterable<MeteredStream>,
    periodMs: number,
  ) {
    this.timer = setInterval(() => this.flush(), periodMs);
    this.timer.unref();
  }

  /** Bills every open stream's writes since the last period, one event per rental. */
  flush(): void {
    const byRental = new Map<string, number>();
    for (const s of this.streams()) {
      if (s.rental === undefined) continue;
      const n = s.takeDelivered();
      if (n > 0) byRental.set(s.rental.id, (byRental.get(s.rental.id) ?? 0) + n);
    }
    for (const [rental, units] of byRental) this.emit(rental, units);
  }

  /** A stream ended: what it was written since the last period is billed now. */
  ended(s: MeteredStream): void {
    if (s.rental === undefined) return;
    const n = s.takeDelivered();
    if (n > 0) this.emit(s.rental.id, n);
  }

  close(): void {
    clearInterval(this.timer);
    this.flush();
  }

  private emit(rental: string, units: number): void {
    this.sink.emit(newUsageEvent({ rental, surface: 'stream', method: STREAM_USAGE_METHOD, units, outcome: 'ok' }));
  }
}
