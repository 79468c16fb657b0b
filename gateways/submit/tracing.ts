import type { Bus } from '../../bus/bus';
import { EventProducer } from '../../bus/event-producer';
import { encodeTraceEvent, type TraceEvent } from '../../bus/topics/submit-traces';
import type { Log } from '../../infra/base/log';
import type { Registry } from '../../infra/base/metrics';
import type { TracesConfig } from './config';
import { KeySummaries } from './key-summary';
import type { SubmitMetrics } from './metrics';
import { StatusPoller } from './status-poller';
import { RpcStatusSource, type StatusSource } from './status-source';
import { TraceMetrics } from './trace-metrics';
import { TraceStore } from './trace-store';

// Traces as one unit: the store, the submit.traces producer it emits to, the status poller that settles traces
// from the chain node, and the per-key summaries GET /trace reads.

export interface Tracing {
  store: TraceStore;
  summaries: KeySummaries;
  poller: StatusPoller;
  producer: EventProducer<TraceEvent>;
  close(): Promise<void>;
}

export interface TracingDeps {
  bus: Bus;
  topic: string;
  /** Where statuses are asked when cfg.statusUrl is unset. */
  defaultStatusUrl: string | undefined;
  log: Log;
  registry: Registry;
  submitMetrics: SubmitMetrics;
  /** Tests: replace the chain node's status answers. */
  statusSource?: StatusSource;
}

export function startTracing(cfg: TracesConfig, deps: TracingDeps): Tracing {
  const url = cfg.statusUrl ?? deps.defaultStatusUrl;
  const source = deps.statusSource ?? (url === undefined ? undefined : new RpcStatusSource(url, cfg.statusTimeoutMs));
  if (source === undefined) throw new Error('submission traces: no status URL (gateways.submit.traces.statusUrl) and no forward target');
  const producer = new EventProducer<TraceEvent>(deps.bus, { topic: deps.topic, encode: encodeTraceEvent, metricPrefix: 'meridian_submit_trace_events', registry: deps.registry, log: deps.log, maxBuffered: cfg.maxBufferedEvents });
  const summaries = new KeySummaries();
  let store: TraceStore | undefined;
  const metrics = new TraceMetrics(deps.registry, () => store?.size ?? 0);
  store = new TraceStore({ holdMs: cfg.holdMs, maxTraces: cfg.maxTraces, sink: producer, metrics, submitMetrics: deps.submitMetrics, summaries });
  const poller = new StatusPoller(store, source, metrics, { intervalMs: cfg.pollIntervalMs, maxStatusCallsPerTick: cfg.maxStatusCallsPerTick, maxBlockhashChecksPerTick: cfg.maxBlockhashChecksPerTick, expiryCheckAfterMs: cfg.expiryCheckAfterMs, blockhashRecheckMs: cfg.blockhashRecheckMs, commitment: cfg.commitment, log: deps.log });
  poller.start();
  const s = store;
  return {
    store: s,
    summaries,
    poller,
    producer,
    close: async () => {
      await poller.close();
      await source.close();
      await producer.close();
    },
  };
}
