import type { Bus, Consumer } from '../bus/bus';
import { endOffsetsIfPresent } from '../bus/topic-ends';
import type { RentalRegistry } from '../bus/rental-registry';
import type { UsageSink } from '../bus/usage-producer';
import type { Log } from '../infra/base/log';
import { STREAM_SERVICE_NAMES, subscribePath } from '../proto/service';
import type { FanoutConfig } from './config';
import { framedEncoder, wireEncoder } from './v1/encoder';
import { Fanout, type FanoutStats, type ResponseEncoder } from './v1/hub';
import { openLookupTables } from './lookup-tables/lookup-tables';
import { startGrpcJsTransport } from './transport/grpc-js';
import { startH2Transport } from './transport/h2';
import { recheckCallers, serveSubscribe, type OpenCalls, type SubscribeCall } from './v1/serve';
import type { LoadedAddressResolver } from './filter/loaded-addresses';
import { V2Hub } from './v2/hub';
import { StreamFeed } from './stream-feed';
import { streamResources } from './stream-resources';
import { recheckV2Callers, serveV2, type OpenV2Calls, type V2Call } from './v2/serve';

// The streaming endpoint: a plaintext HTTP/2 gRPC server (the own one in fanout/h2/, or grpc-js) with one
// Subscribe handler under every service name of proto/service.ts, fed by an independent bus reader of the stream
// topics (no consumer group: every fanout instance sees every record, so subscribers scale by adding instances).
// The server owns what both stream versions share: the queue budget and stream caps (stream-resources.ts), the
// lookup-table cache, and the reader whose records both hubs get decoded once (stream-feed.ts).

export interface FanoutHandle {
  /** host:port actually bound (port 0 in the config picks a free one). */
  address: string;
  stats(): FanoutStats;
  /** v2 streams open, replays running, counts (undefined with fanout.v2.enabled false). */
  v2Stats(): { streams: number; replays: number; delivered: number; replaysStarted: number; outOfRange: number; deliveredTransactions: number; bytes: number; compressed: number } | undefined;
  /** Stops reading, ends every stream (UNAVAILABLE, retriable) and stops the server. */
  close(): Promise<void>;
}

export interface FanoutOptions {
  /** Response bytes; the default is proto/wire.ts. Benchmarks swap in alternatives. */
  encoder?: ResponseEncoder;
  /** How long close() lets streams finish before the server is forced down. */
  shutdownGraceMs?: number;
  /** Usage events of the stream surface (one per rental per period, and at a stream's end). */
  usage?: UsageSink;
  /** The billing period of stream usage; default 60 s. */
  usagePeriodMs?: number;
  /** Lookup-table resolution for v2 (fanout/filter/loaded-addresses.ts); default: the process's table cache, else noResolution. */
  resolver?: LoadedAddressResolver;
}

/** Enough for the configured filter limits: every key of every list at its base58 length, plus names. */
function maxRequestBytes(cfg: FanoutConfig): number {
  const perKey = 48; // 44 base58 chars + tag + length, rounded up
  return Math.max(4 << 20, cfg.maxFilters * (3 * cfg.maxKeysPerList * perKey + cfg.maxFilterNameLen + 16) + 1024);
}

/**
 * The end offsets of `topic` when it is named and exists on the bus, else null, logged with `without` (what v2
 * does without it): a bus set up before the topic existed still serves v2.
 */
async function readableEnds(bus: Bus, topic: string, log: Log, without: string): Promise<Map<number, string> | null> {
  if (topic === '') return null;
  const r = await endOffsetsIfPresent(bus, topic);
  if (r.ok) return r.ends;
  log.warn({ topic, err: r.reason }, `${topic} not readable: ${without}`);
  return null;
}

/** A host as it goes before `:port` (IPv6 in brackets). */
function hostForUrl(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

export async function startFanout(cfg: FanoutConfig, bus: Bus, rentals: RentalRegistry, log: Log, opts: FanoutOptions = {}): Promise<FanoutHandle> {
  // Responses carry their gRPC prefix from the encoder on (framedEncoder): one shared buffer per response.
  if (cfg.lookupTables.matchV1 && cfg.lookupTables.rpcUrl === '') {
    throw new Error('fanout.lookupTables.matchV1 needs a chain node to fetch tables from: set fanout.lookupTables.rpcUrl (or run the local chain)');
  }
  const tables = openLookupTables(cfg.lookupTables);
  const resources = streamResources(cfg);
  const hub = new Fanout(cfg, framedEncoder(opts.encoder ?? wireEncoder), log, Date.now, tables, resources);
  // v2 resolves through the same per-process table cache as v1's matchV1 (none without fanout.lookupTables.rpcUrl).
  const resolver = opts.resolver ?? tables?.resolver;
  if (opts.usage !== undefined) hub.meterUsage(opts.usage, opts.usagePeriodMs ?? 60_000);
  // Kept for re-checking open streams when rentals change.
  const calls: OpenCalls = new Map();
  const onCall = (call: SubscribeCall): void => serveSubscribe(call, cfg, hub, rentals, calls);
  const v2 = cfg.v2.enabled
    ? new V2Hub(cfg, {
        bus,
        ...resources,
        log,
        ...(resolver === undefined ? {} : { resolver }),
        // Matching against the cache's tables only when resolution goes through that same cache.
        ...(opts.resolver === undefined && tables !== undefined ? { tables } : {}),
        ...(opts.usage === undefined ? {} : { usage: { sink: opts.usage, periodMs: opts.usagePeriodMs ?? 60_000 } }),
      })
    : undefined;
  const v2Calls: OpenV2Calls = new Map();
  const onV2Call = v2 === undefined ? undefined : (call: V2Call): void => serveV2(call, cfg, v2, rentals, v2Calls);
  const maxMessage = maxRequestBytes(cfg);
  const server =
    cfg.transport === 'h2'
      ? await startH2Transport(cfg, STREAM_SERVICE_NAMES.map(subscribePath), maxMessage, onCall, onV2Call, log)
      : await startGrpcJsTransport(cfg, `${hostForUrl(cfg.host)}:${cfg.port}`, maxMessage, onCall, onV2Call);
  const port = server.port;

  let consumer: Consumer;
  try {
    // Explicit start offsets rather than 'latest': v2 cursors are these positions, so the hub must know exactly
    // where its reader begins. v2 also reads the retained slot records first (its slot timeline); v1 sees none.
    const { transactions: txTopic, slots: slotsTopic } = cfg.topics;
    const txEnds = await bus.endOffsets(txTopic);
    const slotEnds = await bus.endOffsets(slotsTopic);
    const slotStarts = v2 === undefined ? slotEnds : await bus.startOffsets(slotsTopic);
    // v2 also reads the slot statuses (stream.slot-status) when configured and the topic exists; without it v2
    // serves first-shred statuses only, as before the topic existed.
    const statusEnds = v2 === undefined ? null : await readableEnds(bus, cfg.topics.slotStatus, log, 'v2 serves first-shred slot statuses only');
    const statusTopic = statusEnds === null ? '' : cfg.topics.slotStatus;
    // stream.entries is v2's alone (Entry updates, RAW transactions); without it, streams asking for them are
    // refused with the reason.
    const entryEnds = v2 === undefined ? null : await readableEnds(bus, cfg.topics.entries, log, 'v2 serves no entries and no RAW transactions');
    const entriesTopic = entryEnds === null ? '' : cfg.topics.entries;
    v2?.initEntries(entryEnds);
    v2?.init(txEnds, slotStarts, slotEnds, statusEnds ?? undefined);
    await v2?.initLogs(); // the log of each topic, which v2 cursors name
    const { onBatch } = new StreamFeed(cfg.topics, cfg.dedupeWindow, hub, v2, tables, { slotStatus: statusTopic, entries: entriesTopic });
    const offsets = new Map([[txTopic, txEnds], [slotsTopic, slotStarts]]);
    if (statusEnds !== null) offsets.set(statusTopic, statusEnds);
    if (entryEnds !== null) offsets.set(entriesTopic, entryEnds);
    consumer = await bus.consume({ topics: [...offsets.keys()], from: { offsets }, onBatch });
    await consumer.ready;
  } catch (e) {
    hub.close();
    tables?.close();
    v2?.close();
    await server.close(0);
    throw e;
  }

  // A rental deleted or downgraded takes its open streams with it, with the status a new stream would get.
  const unwatch = rentals.onChange?.(() => {
    recheckCallers(cfg, rentals, calls);
    recheckV2Callers(cfg, rentals, v2Calls);
  });

  const address = `${hostForUrl(cfg.host)}:${port}`;
  // Port only: addresses are endpoints, and the launcher publishes them where they belong.
  log.info({ port, auth: cfg.auth.mode, heartbeatMs: cfg.heartbeatMs, transport: cfg.transport }, 'fanout listening');
  // The node's URL may carry a key: only whether there is one is logged.
  if (tables !== undefined) log.info({ matchV1: cfg.lookupTables.matchV1, waitMs: cfg.lookupTables.waitMs, maxAddresses: cfg.lookupTables.maxAddresses }, 'lookup-table cache on');

  let closing: Promise<void> | undefined;
  return {
    address,
    stats: () => hub.stats(),
    v2Stats: () => (v2 === undefined ? undefined : { streams: v2.streams, replays: v2.activeReplays, delivered: v2.counts.delivered, replaysStarted: v2.counts.replaysStarted, outOfRange: v2.counts.outOfRange, deliveredTransactions: v2.counts.deliveredTransactions, bytes: v2.counts.bytes, compressed: v2.compression.counts.compressed }),
    close: () =>
      (closing ??= (async () => {
        unwatch?.();
        await consumer.close();
        hub.close();
        tables?.close();
        v2?.close();
        await server.close(opts.shutdownGraceMs ?? 2000);
        log.info('fanout stopped');
      })()),
  };
}
