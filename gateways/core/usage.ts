import type { UsageProducer } from '../../bus/usage-producer';
import { newUsageEvent, type Surface } from '../../bus/topics/usage-events';
import type { UsageHook } from './policy';

// The usage hook most surfaces want: one usage event per call (a batch of ten is ten events, each with its own
// method and units), keyed by the caller's rental id, through the buffered UsageProducer (never blocks, never
// fails the request). Callers without a rental (an open local endpoint) produce no events.

export function usageEvents<C>(producer: UsageProducer, surface: Surface, rentalOf: (caller: C) => string | undefined, chain?: number): UsageHook<C> {
  return (caller, calls, units, outcome) => {
    const rental = rentalOf(caller);
    if (rental === undefined) return;
    for (let i = 0; i < calls.length; i++) {
      producer.emit(newUsageEvent({ rental, surface, method: calls[i]!.method, units: units[i] ?? 0, outcome, ...(chain === undefined ? {} : { chain }) }));
    }
  };
}
