import type { RentalRegistry } from '../../bus/rental-registry';
import type { UsageProducer } from '../../bus/usage-producer';
import type { Log } from '../../infra/base/log';
import type { Registry } from '../../infra/base/metrics';
import { startProxy, unmetered, usageEvents, UpstreamPool, type RunningProxy, type UpstreamEndpoint } from '../core';
import { evmAuth, type EvmCaller } from './auth';
import type { EvmChainConfig, EvmGatewayConfig } from './config';
import { EVM_ERRORS } from './errors';
import { blockNumberProbe } from './probe';

// The EVM endpoints: per served chain, one upstream pool (health by eth_blockNumber) and one proxy (HTTP and
// WebSocket listeners) from the shared JSON-RPC proxy core, configured with the EVM error table, IP-allowlist
// auth and usage events (surface `evm`, the chain id, the method). The contract names no EVM limits, so calls
// are not rate limited; each call is one unit (an event per method and request counts its calls).

export interface EvmDeps {
  rentals: RentalRegistry;
  /** Usage events go here (one per method and request, for callers with a rental); absent = none emitted. */
  usage?: UsageProducer;
  log: Log;
  registry?: Registry;
}

export interface RunningEvmChain {
  chainId: number;
  http: string;
  ws: string;
  pool: UpstreamPool;
}

export interface RunningEvmGateway {
  chains: RunningEvmChain[];
  close(): Promise<void>;
}

async function startChain(cfg: EvmGatewayConfig, chain: EvmChainConfig, upstreams: UpstreamEndpoint[], deps: EvmDeps): Promise<{ running: RunningEvmChain; proxy: RunningProxy }> {
  const surface = `evm-${chain.chainId}`;
  const log = deps.log.child({ chain: chain.chainId });
  const pool = new UpstreamPool({
    surface,
    upstreams,
    probe: blockNumberProbe(chain.maxStallMs),
    intervalMs: cfg.health.intervalMs,
    probeTimeoutMs: cfg.health.timeoutMs,
    maxLag: cfg.health.maxLagBlocks,
    timeoutMs: cfg.upstream.timeoutMs,
    connections: cfg.upstream.connections,
    log,
    ...(deps.registry === undefined ? {} : { registry: deps.registry }),
  });
  await pool.start();
  let proxy: RunningProxy;
  try {
    proxy = await startProxy<EvmCaller, 'notFound' | 'noAccess'>({
      surface,
      http: chain.http,
      ws: chain.ws,
      listenKeys: { http: `gateways.evm.chains.${chain.chainId}.http`, ws: `gateways.evm.chains.${chain.chainId}.ws` },
      errors: EVM_ERRORS,
      pool,
      auth: evmAuth(cfg.auth.mode, deps.rentals),
      meter: unmetered<EvmCaller>(),
      ...(deps.usage === undefined ? {} : { usage: usageEvents<EvmCaller>(deps.usage, 'evm', (c) => c?.id, chain.chainId) }),
      neverRetry: cfg.neverResend,
      trustedProxies: cfg.trustedProxies,
      limits: cfg.limits,
      log,
      ...(deps.registry === undefined ? {} : { registry: deps.registry }),
    });
  } catch (e) {
    await pool.close();
    throw e;
  }
  log.info({ upstreams: upstreams.length, healthy: pool.healthyCount(), auth: cfg.auth.mode }, 'EVM endpoint serving');
  return { running: { chainId: chain.chainId, http: proxy.http.url, ws: proxy.ws!.url, pool }, proxy };
}

/**
 * Starts every served chain. `extraUpstreams` adds upstreams per chain id that the caller started itself (the
 * launcher's local anvil nodes); the configured ones come first.
 */
export async function startEvmGateway(cfg: EvmGatewayConfig, deps: EvmDeps, extraUpstreams: ReadonlyMap<number, UpstreamEndpoint[]> = new Map()): Promise<RunningEvmGateway> {
  const started: Array<{ running: RunningEvmChain; proxy: RunningProxy }> = [];
  const close = async (): Promise<void> => {
    for (const s of started.splice(0).reverse()) {
      await s.proxy.close();
      await s.running.pool.close();
    }
  };
  try {
    for (const chain of cfg.chains) {
      const upstreams = [...chain.upstreams, ...(extraUpstreams.get(chain.chainId) ?? [])];
      if (upstreams.length === 0) throw new Error(`gateways.evm.chains.${chain.chainId}: no upstreams`);
      started.push(await startChain(cfg, chain, upstreams, deps));
    }
  } catch (e) {
    await close();
    throw e;
  }
  return { chains: started.map((s) => s.running), close };
}
