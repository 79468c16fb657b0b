import { submitLimits } from './limits';
import type { Bus } from '../../bus/bus';
import type { RentalRegistry } from '../../bus/rental-registry';
import type { Log } from '../../infra/base/log';
import { metrics as defaultRegistry, type Registry } from '../../infra/base/metrics';
import type { SubmitConfig } from './config';
import { followDeliveries } from './delivered-feed';
import { RouteForwarder, type Forwarder } from './forwarder';
import { startSubmitHttp } from './http';
import { SubmitMetrics } from './metrics';
import { SubmitPipeline, type UsageSink } from './pipeline';
import { RpcPreflight, type Preflight } from './preflight';
import type { Route } from './route';
import { RpcRoute } from './rpc-route';
import { ensureTpuBinary } from './tpu/sender-build';
import { TpuMetrics } from './tpu/tpu-metrics';
import { TpuRoute } from './tpu/tpu-route';
import { RejectedRepeats } from './rejected-repeats';
import { SignatureCache } from './signature-cache';
import { tipRule } from './tip';
import { startTracing, type Tracing } from './tracing';
import type { StatusSource } from './status-source';
import { startSubmitUdp } from './udp';
import { FleetBudget, startFleetExchange } from '../core';
import { FLEET_TPS_WINDOW_MS, RateLimiter } from './rate-limit';

// The submission service as one unit: pipeline + HTTP + UDP + the delivery feed that tells the signature
// cache what landed. QUIC (another transport) takes `pipeline` from here.

export interface SubmitDeps {
  bus: Bus;
  rentals: RentalRegistry;
  usage?: UsageSink;
  log: Log;
  /** Upstream chain RPC URLs when the config names none (the launcher's local chain node). */
  defaultUpstreams?: string[];
  /** Tests and benches: replace the RPC forwarder / preflight. */
  forwarder?: Forwarder;
  preflight?: Preflight;
  registry?: Registry;
  /** Tests: replace the chain node's status answers for traces. */
  statusSource?: StatusSource;
  /** The bus the instances of a fleet exchange their submissions on (gateways.submit.fleet); without it, per instance. */
  fleetBus?: Bus;
}

export interface SubmitService {
  pipeline: SubmitPipeline;
  http: { host: string; port: number };
  udp?: { host: string; port: number };
  /** Present when gateways.submit.traces.enabled. */
  tracing?: Tracing;
  /** Present when gateways.submit.routes names `tpu`. */
  tpu?: TpuRoute;
  close(): Promise<void>;
}

export async function startSubmit(cfg: SubmitConfig, deps: SubmitDeps): Promise<SubmitService> {
  const closers: Array<() => Promise<void>> = [];
  const close = async (): Promise<void> => {
    for (const c of closers.splice(0).reverse()) await c().catch((err: unknown) => deps.log.warn({ err }, 'error while stopping submission'));
  };
  try {
    const metrics = new SubmitMetrics(deps.registry ?? defaultRegistry);
    const upstreams = cfg.forwardUrls.length > 0 ? cfg.forwardUrls : deps.defaultUpstreams ?? [];
    let forwarder = deps.forwarder;
    let tpu: TpuRoute | undefined;
    if (forwarder === undefined) {
      const routes: Route[] = [];
      if (cfg.routes.includes('rpc')) {
        if (upstreams.length === 0) throw new Error('submission: no forward targets (gateways.submit.forwardUrls) and no local chain node');
        // Route names are positional (`rpc-0`, `rpc-1`, … in forwardUrls order): they appear in metrics and traces,
        // where a URL must not.
        routes.push(...upstreams.map((url, i) => new RpcRoute({ name: `rpc-${i}`, url, connections: cfg.forward.connectionsPerTarget, maxInFlight: cfg.forward.maxInFlightPerTarget, timeoutMs: cfg.forward.timeoutMs })));
      }
      if (cfg.routes.includes('tpu')) {
        const rpcUrl = cfg.tpu.rpcUrl ?? upstreams[0];
        if (rpcUrl === undefined) throw new Error('submission: the tpu route needs a chain node for the leader schedule (gateways.submit.tpu.rpcUrl)');
        const bin = cfg.tpu.senderBinary ?? (await ensureTpuBinary(undefined, (line) => deps.log.info({}, `tpu sender: ${line}`)));
        const t = cfg.tpu;
        tpu = new TpuRoute({
          ...t,
          bin,
          rpcUrl,
          wsUrl: t.wsUrl ?? rpcUrl.replace(/^http/, 'ws'),
          log: deps.log,
          metrics: new TpuMetrics(deps.registry ?? defaultRegistry),
        });
        const r = tpu;
        closers.push(() => r.close());
        await r.start();
        routes.push(r);
      }
      forwarder = new RouteForwarder({ routes, log: deps.log, metrics });
      const f = forwarder;
      closers.push(() => f.close());
    }
    let preflight = deps.preflight;
    const preflightUrl = cfg.preflightUrl ?? upstreams[0];
    if (preflight === undefined && preflightUrl !== undefined) {
      preflight = new RpcPreflight(preflightUrl, cfg.preflight.timeoutMs);
      const p = preflight;
      closers.push(() => p.close());
    }
    const cache = new SignatureCache(cfg.cache);
    let tracing: Tracing | undefined;
    if (cfg.traces.enabled) {
      const t = startTracing(cfg.traces, { bus: deps.bus, topic: cfg.topics.traces, defaultStatusUrl: upstreams[0], log: deps.log, registry: deps.registry ?? defaultRegistry, submitMetrics: metrics, ...(deps.statusSource === undefined ? {} : { statusSource: deps.statusSource }) });
      tracing = t;
      closers.push(() => t.close());
    }
    // Fleet-wide TPS: the instance's bucket plus the fleet's count of the last second (rate-limit.ts).
    let rateLimiter: RateLimiter | undefined;
    if (cfg.fleet.enabled && deps.fleetBus !== undefined) {
      const tps = new FleetBudget({ windowMs: FLEET_TPS_WINDOW_MS, memberExpiryMs: cfg.fleet.memberExpiryMs });
      const exchange = await startFleetExchange({ bus: deps.fleetBus, surface: 'submit', budgets: { tps }, intervalMs: cfg.fleet.intervalMs, lookbackMs: FLEET_TPS_WINDOW_MS, log: deps.log, registry: deps.registry ?? defaultRegistry });
      closers.push(() => exchange.close());
      rateLimiter = new RateLimiter(undefined, undefined, tps);
    }
    const pipeline = new SubmitPipeline({
      ...(rateLimiter === undefined ? {} : { rateLimiter }),
      rentals: deps.rentals,
      forwarder,
      tips: tipRule(cfg.tips.accounts, cfg.tips.minLamports),
      ...(preflight === undefined ? {} : { preflight }),
      maxPreflightInFlight: cfg.preflight.maxInFlight,
      cache,
      ...(deps.usage === undefined ? {} : { usage: deps.usage }),
      metrics,
      repeats: new RejectedRepeats(cfg.repeats.windowMs, cfg.repeats.maxEntries),
      limits: submitLimits(cfg.v1MaxBytes),
      ...(tracing === undefined ? {} : { traces: tracing.store }),
    });
    const tpuRoute = tpu;
    const feed = await followDeliveries(deps.bus, cfg.topics, cache, () => metrics.deliveredMarks.inc(), tracing?.store, tpuRoute === undefined ? undefined : (slot) => tpuRoute.tracker.noteSlot(slot));
    closers.push(() => feed.close());
    const http = await startSubmitHttp(pipeline, { ...cfg.http, version: cfg.version, maxConnections: cfg.maxConnections, maxConnectionsPerIp: cfg.maxConnectionsPerIp, keepAliveTimeoutMs: cfg.keepAliveTimeoutMs, requestTimeoutMs: cfg.requestTimeoutMs, fastPath: cfg.fastPath, log: deps.log, ...(tracing === undefined ? {} : { traces: { store: tracing.store, summaries: tracing.summaries } }) });
    closers.push(() => http.close());
    const service: SubmitService = { pipeline, http: http.address, close };
    if (tracing !== undefined) service.tracing = tracing;
    if (tpu !== undefined) service.tpu = tpu;
    if (cfg.udp.enabled) {
      const udp = await startSubmitUdp(pipeline, cfg.udp);
      closers.push(() => udp.close());
      service.udp = udp.address;
    }
    deps.log.info({ http: `${http.address.host}:${http.address.port}`, udp: service.udp === undefined ? 'off' : `${service.udp.host}:${service.udp.port}`, forwardTargets: cfg.routes.includes('rpc') ? upstreams.length : 0, routes: cfg.routes.join(',') }, 'submission service listening');
    return service;
  } catch (e) {
    await close();
    throw e;
  }
}
