import type { UsageSink } from '../../bus/usage-producer';
import { newUsageEvent, usageTimeNow, type Outcome, type Surface } from '../../bus/topics/usage-events';
import type { RpcCall } from './jsonrpc';
import type { UsageHook } from './policy';

// Usage events of a request: one per method in it (a batch of ten getHealth is one event with calls 10 and the
// ten calls' units summed; a batch of getSlot and getBalance is two), keyed by the caller's rental id, through
// the buffered UsageProducer (never blocks, never fails the request). Billing sums units and calls per rental ×
// surface × method × hour, so an event per method and request bills exactly what an event per call did, at a
// tenth of the events for a batch of ten (each event is a UUID, a JSON text, two buffers and a bus record: it was
// over half of a batch's cost in the gateway). Callers without a rental (an open local endpoint) produce none.

/** Up to this many calls, methods are grouped by scanning the batch (no allocation); above it, by a Map. */
const SCAN_UP_TO = 16;

/**
 * Emits the usage of one request: one event per distinct method of `calls` (in the order each first appears), its
 * calls counted and their units (`units[i]` for `calls[i]`) summed. All events of the request share one time.
 */
export function emitRequestUsage(sink: UsageSink, rental: string, surface: Surface, calls: readonly RpcCall[], units: readonly number[], outcome: Outcome, chain?: number): void {
  const n = calls.length;
  if (n === 0) return;
  const time = usageTimeNow();
  if (n === 1) return emitOne(sink, rental, surface, calls[0]!.method, 1, units[0] ?? 0, outcome, time, chain);
  if (n <= SCAN_UP_TO) {
    outer: for (let i = 0; i < n; i++) {
      const m = calls[i]!.method;
      for (let j = 0; j < i; j++) if (calls[j]!.method === m) continue outer; // counted with its first appearance
      let count = 1;
      let sum = units[i] ?? 0;
      for (let j = i + 1; j < n; j++) {
        if (calls[j]!.method === m) {
          count++;
          sum += units[j] ?? 0;
        }
      }
      emitOne(sink, rental, surface, m, count, sum, outcome, time, chain);
    }
    return;
  }
  const groups = new Map<string, { calls: number; units: number }>();
  for (let i = 0; i < n; i++) {
    const m = calls[i]!.method;
    const g = groups.get(m);
    if (g === undefined) groups.set(m, { calls: 1, units: units[i] ?? 0 });
    else {
      g.calls++;
      g.units += units[i] ?? 0;
    }
  }
  for (const [m, g] of groups) emitOne(sink, rental, surface, m, g.calls, g.units, outcome, time, chain);
}

function emitOne(sink: UsageSink, rental: string, surface: Surface, method: string, calls: number, units: number, outcome: Outcome, time: string, chain: number | undefined): void {
  sink.emit(chain === undefined ? newUsageEvent({ rental, surface, method, calls, units, outcome, time }) : newUsageEvent({ rental, surface, method, calls, units, outcome, time, chain }));
}

/** The usage hook most surfaces want: emitRequestUsage for callers with a rental. */
export function usageEvents<C>(producer: UsageSink, surface: Surface, rentalOf: (caller: C) => string | undefined, chain?: number): UsageHook<C> {
  return (caller, calls, units, outcome) => {
    const rental = rentalOf(caller);
    if (rental === undefined) return;
    emitRequestUsage(producer, rental, surface, calls, units, outcome, chain);
  };
}
