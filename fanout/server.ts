import * as grpc from '@grpc/grpc-js';
import type { Bus, Consumer } from '../bus/bus';
import type { RentalRegistry } from '../bus/rental-registry';
import type { UsageSink } from '../bus/usage-producer';
import type { Log } from '../infra/log';
import { addSubscribeService } from '../proto/service';
import { authenticate, peerAddress } from './auth';
import { resetCall } from './call-reset';
import { FramedSink, http2StreamOf, setNoDelay } from './grpc-stream';
import type { FanoutConfig } from './config';
import { framedEncoder, GRPC_PREFIX_SZ, wireEncoder } from './encoder';
import { isStreamError, type StreamError } from './errors';
import { Fanout, type FanoutStats, type ResponseEncoder } from './fanout';
import type { SubscribeUpdate } from './request';
import { decodeSubscribeUpdate } from './request-wire';
import type { Session, SessionPort } from './session';
import type { Sink } from './subscriber-queue';

// The streaming endpoint: a plaintext HTTP/2 grpc-js server with one Subscribe handler registered under every
// service name of proto/service.ts, fed by an independent bus reader of the stream topics (no consumer group:
// every fanout instance sees every record, so subscribers scale by adding instances).

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

type Call = grpc.ServerDuplexStream<SubscribeUpdate, Buffer>;

/** Enough for the configured filter limits: every key of every list at its base58 length, plus names. */
function maxRequestBytes(cfg: FanoutConfig): number {
  const perKey = 48; // 44 base58 chars + tag + length, rounded up
  return Math.max(4 << 20, cfg.maxFilters * (3 * cfg.maxKeysPerList * perKey + cfg.maxFilterNameLen + 16) + 1024);
}

function hostForUrl(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

export async function startFanout(cfg: FanoutConfig, bus: Bus, rentals: RentalRegistry, log: Log, opts: FanoutOptions = {}): Promise<FanoutHandle> {
  // Responses carry their gRPC prefix from the encoder on (framedEncoder): one shared buffer per response.
  const hub = new Fanout(cfg, framedEncoder(opts.encoder ?? wireEncoder), log);
  if (opts.usage !== undefined) hub.meterUsage(opts.usage, opts.usagePeriodMs ?? 60_000);
  // Kept for re-checking open streams when rentals change.
  const calls = new Map<Session, Call>();

  /** Ends the RPC with a registry status; resets the HTTP/2 stream if the status cannot get through in time. */
  const endCall = (call: Call, e: StreamError): void => {
    call.emit('error', e);
    if (cfg.endGraceMs === 0) return;
    const timer = setTimeout(() => {
      if (!call.destroyed) resetCall(call);
    }, cfg.endGraceMs);
    timer.unref();
    call.once('close', () => clearTimeout(timer));
  };

  const handler = (call: Call): void => {
    // Some clients wait for response headers before their first write (compat.md).
    call.sendMetadata(new grpc.Metadata());
    const auth = authenticate(cfg.auth, rentals, call.getPeer(), call.metadata);
    if (!auth.ok) {
      hub.refused(auth.error);
      endCall(call, auth.error);
      return;
    }
    // Responses go straight to the HTTP/2 stream (grpc-stream.ts says why); grpc-js's own write path if the
    // stream cannot be reached.
    const h2 = cfg.directWrites ? http2StreamOf(call) : null;
    if (h2 !== null) setNoDelay(h2);
    const sink: Sink =
      h2 !== null
        ? new FramedSink(h2)
        : { write: (framed) => call.write(framed.subarray(GRPC_PREFIX_SZ)), once: (event, listener) => call.once(event, listener) };
    const port: SessionPort = {
      write: (chunk) => sink.write(chunk),
      once: (event, listener) => sink.once(event, listener),
      end: (e) => (e === undefined ? call.end() : endCall(call, e)),
    };
    const peer = call.getPeer();
    const session = hub.open(port, auth.rental, { connection: peer, ip: peerAddress(peer) });
    if (isStreamError(session)) {
      endCall(call, session);
      return;
    }
    calls.set(session, call);
    call.on('data', (req: SubscribeUpdate) => session.handle(req));
    // 'cancelled' comes when the client goes away, and also after our own status is sent; either way it is over.
    call.once('cancelled', () => session.clientGone());
    call.once('close', () => {
      calls.delete(session);
      session.clientGone();
    });
    // A half-close (the client ends its side) keeps the stream: filters stay and data keeps flowing until the
    // client cancels or the server ends it. Published clients half-close only when they are done anyway.
  };

  const server = new grpc.Server({
    'grpc.max_receive_message_length': maxRequestBytes(cfg),
    // Find peers that vanished without a FIN; heartbeats do the same at the application level.
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
  });
  // Requests are read by request-wire.ts (keys stay bytes until compiled), not by the generated classes.
  addSubscribeService(server, handler, decodeSubscribeUpdate);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${hostForUrl(cfg.host)}:${cfg.port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err === null ? resolve(p) : reject(err)));
  });

  let consumer: Consumer;
  try {
    consumer = await bus.consume({ topics: [cfg.topics.transactions, cfg.topics.slots], from: 'latest', onBatch: hub.onBatch });
    await consumer.ready;
  } catch (e) {
    hub.close();
    server.forceShutdown();
    throw e;
  }

  // A rental deleted or downgraded takes its open streams with it, with the status a new stream would get.
  const unwatch = rentals.onChange?.(() => {
    for (const [session, call] of calls) {
      const r = authenticate(cfg.auth, rentals, call.getPeer(), call.metadata);
      if (!r.ok) session.fail(r.error);
    }
  });

  const address = `${hostForUrl(cfg.host)}:${port}`;
  // Port only: addresses are endpoints, and the launcher publishes them where they belong.
  log.info({ port, auth: cfg.auth.mode, heartbeatMs: cfg.heartbeatMs }, 'fanout listening');

  let closing: Promise<void> | undefined;
  return {
    address,
    stats: () => hub.stats(),
    close: () =>
      (closing ??= (async () => {
        unwatch?.();
        await consumer.close();
        hub.close();
        await new Promise<void>((resolve) => {
          const force = setTimeout(() => {
            server.forceShutdown();
            resolve();
          }, opts.shutdownGraceMs ?? 2000);
          server.tryShutdown(() => {
            clearTimeout(force);
            resolve();
          });
        });
        log.info('fanout stopped');
      })()),
  };
}
