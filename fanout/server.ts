import type { Bus, Consumer } from '../bus/bus';
import type { RentalRegistry } from '../bus/rental-registry';
import type { UsageSink } from '../bus/usage-producer';
import type { Log } from '../infra/base/log';
import { STREAM_SERVICE_NAMES, subscribePath } from '../proto/service';
import type { FanoutConfig } from './config';
import { framedEncoder, wireEncoder } from './encoder';
import { Fanout, type FanoutStats, type ResponseEncoder } from './fanout';
import { openLookupTables } from './lookup-tables/lookup-tables';
import { startGrpcJsTransport } from './grpc-js-transport';
import { startH2Transport } from './h2-transport';
import { recheckCallers, serveSubscribe, type OpenCalls, type SubscribeCall } from './subscribe-call';

// The streaming endpoint: a plaintext HTTP/2 gRPC server (the own one in fanout/h2/, or grpc-js) with one
// Subscribe handler under every service name of proto/service.ts, fed by an independent bus reader of the stream
// topics (no consumer group: every fanout instance sees every record, so subscribers scale by adding instances).

export interface FanoutHandle {
  /** host:port actually bound (port 0 in the config picks a free one). */
  address: string;
  stats(): FanoutStats;
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
}

/** Enough for the configured filter limits: every key of every list at its base58 length, plus names. */
function maxRequestBytes(cfg: FanoutConfig): number {
  const perKey = 48; // 44 base58 chars + tag + length, rounded up
  return Math.max(4 << 20, cfg.maxFilters * (3 * cfg.maxKeysPerList * perKey + cfg.maxFilterNameLen + 16) + 1024);
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
  const hub = new Fanout(cfg, framedEncoder(opts.encoder ?? wireEncoder), log, Date.now, tables);
  if (opts.usage !== undefined) hub.meterUsage(opts.usage, opts.usagePeriodMs ?? 60_000);
  // Kept for re-checking open streams when rentals change.
  const calls: OpenCalls = new Map();
  const onCall = (call: SubscribeCall): void => serveSubscribe(call, cfg, hub, rentals, calls);
  const maxMessage = maxRequestBytes(cfg);
  const server =
    cfg.transport === 'h2'
      ? await startH2Transport(cfg, STREAM_SERVICE_NAMES.map(subscribePath), maxMessage, onCall)
      : await startGrpcJsTransport(cfg, `${hostForUrl(cfg.host)}:${cfg.port}`, maxMessage, onCall);
  const port = server.port;

  let consumer: Consumer;
  try {
    consumer = await bus.consume({ topics: [cfg.topics.transactions, cfg.topics.slots], from: 'latest', onBatch: hub.onBatch });
    await consumer.ready;
  } catch (e) {
    hub.close();
    tables?.close();
    await server.close(0);
    throw e;
  }

  // A rental deleted or downgraded takes its open streams with it, with the status a new stream would get.
  const unwatch = rentals.onChange?.(() => recheckCallers(cfg, rentals, calls));

  const address = `${hostForUrl(cfg.host)}:${port}`;
  // Port only: addresses are endpoints, and the launcher publishes them where they belong.
  log.info({ port, auth: cfg.auth.mode, heartbeatMs: cfg.heartbeatMs, transport: cfg.transport }, 'fanout listening');
  // The node's URL may carry a key: only whether there is one is logged.
  if (tables !== undefined) log.info({ matchV1: cfg.lookupTables.matchV1, waitMs: cfg.lookupTables.waitMs, maxAddresses: cfg.lookupTables.maxAddresses }, 'lookup-table cache on');

  let closing: Promise<void> | undefined;
  return {
    address,
    stats: () => hub.stats(),
    close: () =>
      (closing ??= (async () => {
        unwatch?.();
        await consumer.close();
        hub.close();
        tables?.close();
        await server.close(opts.shutdownGraceMs ?? 2000);
        log.info('fanout stopped');
      })()),
  };
}
