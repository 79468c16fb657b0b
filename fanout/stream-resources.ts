import type { FanoutConfig } from './config';
import { QueueBudget } from './queue-budget';
import { StreamLimits } from './stream-limits';

// What every stream of a process counts against, whatever its version: the bytes all subscriber queues may hold
// together (fanout.queueBudgetBytes) and the stream caps per connection, per IP and in all (stream-limits.ts).
// The server makes one of each and hands them to the v1 and v2 hubs, so neither owns what both spend.

export interface StreamResources {
  budget: QueueBudget;
  streamLimits: StreamLimits;
}

export function streamResources(cfg: FanoutConfig): StreamResources {
  return { budget: new QueueBudget(cfg.queueBudgetBytes), streamLimits: new StreamLimits(cfg) };
}
