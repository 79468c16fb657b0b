import type { Bus } from '../../bus/bus';
import type { RentalRegistry } from '../../bus/rental-registry';
import { UsageProducer } from '../../bus/usage-producer';
import type { Log } from '../../infra/base/log';
import { metrics as defaultRegistry, type Registry } from '../../infra/base/metrics';
import { emitRequestUsage, FleetBudget, startFleetExchange, startProxy, UpstreamPool, type FleetExchange, type UsageHook } from '../core';
import { rpcAuth, type RpcCaller } from './auth';
import type { RpcGatewayConfig, RpcUpstreamConfig } from './config';
import { RPC_ERRORS, type RpcErrorKind } from './errors';
import { solanaProbe } from './health';
import { RpcMeter } from './meter';

// The chain JSON-RPC gateway: the proxy core configured with the chain's error table, weights, scan methods,
// RPS/TPS/scan metering per rental, auth by egress IP or dedicated path, Solana health checks, and usage
// events (surface "rpc" for HTTP calls, "rpc-ws" for WebSocket messages; one per method and request) through the
// usage producer.

export interface RpcGatewayDeps {
  rentals: RentalRegistry;
  log: Log;
  /** Usage events go through this producer (shared with other components)… */
  usage?: UsageProducer;
  /** …or through one the gateway makes on this bus and closes with itself. */
  bus?: Bus;
  /**
   * The bus the instances of a fleet exchange their spend on (gateways.rpc.fleet); without it, or with fleet limits
   * off, this instance counts its rentals alone.
   */
  fleetBus?: Bus;
  /** Upstreams to use when the config lists none (the launcher's local chain node). */
  upstreams?: RpcUpstreamConfig[];
  registry?: Registry;
}

export interface RpcGateway {
  http: { host: string; port: number; url: string };
  ws: { host: string; port: number; url: string };
  pool: UpstreamPool;
  meter: RpcMeter;
  close(): Promise<void>;
}

export async function startRpcGateway(cfg: RpcGatewayConfig, deps: RpcGatewayDeps): Promise<RpcGateway> {
  const upstreams = cfg.upstreams.length > 0 ? cfg.upstreams : (deps.upstreams ?? []);
  if (upstreams.length === 0) throw new Error('gateways.rpc: no upstream chain node (set gateways.rpc.upstreams)');
  const registry = deps.registry ?? defaultRegistry;
  const log = deps.log;
  const ownProducer = deps.usage === undefined && deps.bus !== undefined ? new UsageProducer(deps.bus, { log, registry }) : undefined;
  const producer = deps.usage ?? ownProducer;

  const pool = new UpstreamPool({
    surface: 'rpc',
    upstreams,
    probe: solanaProbe,
    intervalMs: cfg.health.intervalMs,
    probeTimeoutMs: cfg.health.timeoutMs,
    maxLag: cfg.health.maxSlotLag,
    timeoutMs: cfg.upstream.timeoutMs,
    connections: cfg.upstream.connections,
    maxResponseBytes: cfg.upstream.maxResponseBytes,
    log,
    registry,
  });
  await pool.start();
  if (pool.healthyCount() === 0) log.warn({ upstreams: upstreams.length }, 'no healthy chain node at start; answering 503 until one is');

  // Fleet-wide RPS and TPS: local budgets that also count the other instances' reported spend.
  let fleet: FleetExchange | undefined;
  let budgets: { rps: FleetBudget; tps: FleetBudget } | undefined;
  if (cfg.fleet.enabled && deps.fleetBus !== undefined) {
    budgets = {
      rps: new FleetBudget({ windowMs: cfg.rpsWindowMs, memberExpiryMs: cfg.fleet.memberExpiryMs }),
      tps: new FleetBudget({ windowMs: cfg.tpsWindowMs, memberExpiryMs: cfg.fleet.memberExpiryMs }),
    };
    try {
      fleet = await startFleetExchange({ bus: deps.fleetBus, surface: 'rpc', budgets, intervalMs: cfg.fleet.intervalMs, lookbackMs: Math.max(cfg.rpsWindowMs, cfg.tpsWindowMs), log, registry });
    } catch (e) {
      await pool.close();
      throw e;
    }
  }
  const meter = new RpcMeter({ ...cfg, scan: cfg.scan, ...(budgets === undefined ? {} : { budgets }) });
  const unwatch = deps.rentals.onChange?.(() => {
    const ids = new Set(deps.rentals.all().map((r) => r.id));
    meter.retain((id) => ids.has(id));
  });

  const usage: UsageHook<RpcCaller> | undefined =
    producer === undefined
      ? undefined
      : (rental, calls, units, outcome, transport) => {
          // One event per method and request (a batch of ten getHealth: one event, calls 10), one time for all.
          if (rental !== null) emitRequestUsage(producer, rental.id, transport === 'ws' ? 'rpc-ws' : 'rpc', calls, units, outcome);
        };

  let proxy;
  try {
    proxy = await startProxy<RpcCaller, RpcErrorKind>({
      surface: 'rpc',
      http: { host: cfg.host, port: cfg.port },
      ws: { host: cfg.wsHost, port: cfg.wsPort },
      listenKeys: { http: 'gateways.rpc.listen', ws: 'gateways.rpc.wsListen' },
      errors: RPC_ERRORS,
      pool,
      auth: rpcAuth(deps.rentals, { mode: cfg.auth.mode, region: cfg.region }),
      meter,
      usage,
      neverRetry: cfg.neverRetry,
      trustedProxies: cfg.auth.trustedProxies,
      limits: cfg.limits,
      log,
      registry,
    });
  } catch (e) {
    unwatch?.();
    await fleet?.close();
    await pool.close();
    await ownProducer?.close();
    throw e;
  }
  log.info({ http: `${proxy.http.host}:${proxy.http.port}`, ws: `${proxy.ws!.host}:${proxy.ws!.port}`, upstreams: upstreams.length, region: cfg.region || 'any', auth: cfg.auth.mode }, 'chain JSON-RPC gateway listening');
  return {
    http: proxy.http,
    ws: proxy.ws!,
    pool,
    meter,
    close: async () => {
      unwatch?.();
      await proxy.close();
      await fleet?.close();
      await pool.close();
      await ownProducer?.close();
    },
  };
}
