import type { Server } from 'node:http';
import type { Bus } from '../bus/bus';
import { openBus } from '../bus/open';
import { emptyRegistry, projectRentals, staticRentals, type RentalRegistry } from '../bus/rental-registry';
import { startIngest } from '../ingest/worker';
import { startFanout } from '../fanout/server';
import type { Config } from './config';
import { metrics, serveMetrics } from './metrics';
import { registerSecret, type Log } from './log';
import { startDemoTraffic } from './demo/traffic';
import { startAnvil } from './anvil/anvil';
import { startEvmGateway } from '../gateways/evm/gateway';
import { UsageProducer } from '../bus/usage-producer';
import type { UpstreamEndpoint } from '../gateways/core';

// Everything `meridian start` runs, in dependency order, with one stop() that undoes it in reverse.

export interface Running {
  endpoints: Record<string, string>;
  /** Endpoint entries that are objects, merged into the endpoints file: evm → { "56": { http, ws }, … }. */
  nested: Record<string, unknown>;
  stop(): Promise<void>;
}

type Stopper = () => Promise<void>;

async function openRentals(cfg: Config, bus: Bus, log: Log, stoppers: Stopper[]): Promise<RentalRegistry> {
  const f = cfg.fanout;
  let registry: RentalRegistry = emptyRegistry();
  if (f.rentalsFile !== undefined) registry = staticRentals(f.rentalsFile);
  if (f.rentalsFromBus) {
    const projection = await projectRentals(bus, log.child({ component: 'rentals' }), registry);
    stoppers.push(() => projection.close());
    registry = projection;
  }
  for (const r of registry.all()) registerSecret(...r.tokens, ...r.apiKeys, ...r.dedicatedPaths);
  return registry;
}

/** EVM endpoints: a local anvil per chain that asks for one, then the gateway; its URLs per chain id. */
async function launchEvm(cfg: Config, bus: Bus, rentals: RentalRegistry, log: Log, stoppers: Stopper[]): Promise<Record<string, { http: string; ws: string }>> {
  const evm = cfg.gateways.evm;
  const extra = new Map<number, UpstreamEndpoint[]>();
  for (const c of evm.chains.filter((x) => x.anvil)) {
    const node = await startAnvil({ chainId: c.chainId, ...(c.anvilBlockTime > 0 ? { blockTime: c.anvilBlockTime } : {}) });
    stoppers.push(() => node.stop());
    extra.set(c.chainId, [{ http: node.httpUrl, ws: node.wsUrl }]);
    log.info({ chain: c.chainId, blockTime: c.anvilBlockTime }, 'local anvil started');
  }
  const usage = new UsageProducer(bus, { log: log.child({ component: 'usage' }) });
  stoppers.push(() => usage.close());
  const gw = await startEvmGateway(evm, { rentals, usage, log: log.child({ component: 'evm' }) }, extra);
  stoppers.push(() => gw.close());
  return Object.fromEntries(gw.chains.map((c) => [String(c.chainId), { http: c.http, ws: c.ws }]));
}

export async function launch(cfg: Config, log: Log): Promise<Running> {
  const stoppers: Stopper[] = [];
  const endpoints: Record<string, string> = {};
  const nested: Record<string, unknown> = {};
  // /readyz turns 503 the moment shutdown begins, so a load balancer drains this instance before streams end.
  let started = false;
  let stopping = false;
  const stop = async (): Promise<void> => {
    stopping = true;
    for (const s of stoppers.splice(0).reverse()) {
      try {
        await s();
      } catch (e) {
        log.warn({ err: e }, 'error while stopping a component');
      }
    }
  };
  try {
    // First up, last down: /readyz says "not ready" while components start and while they drain.
    if (cfg.metrics.enabled) {
      const server: Server = await serveMetrics(metrics, cfg.metrics.host, cfg.metrics.port, [{ name: 'running', check: () => started && !stopping }]);
      stoppers.push(() => new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections(); // a keep-alive scraper must not hold shutdown open
      }));
      const a = server.address();
      if (a !== null && typeof a === 'object') endpoints.metrics = `http://${cfg.metrics.host}:${a.port}/metrics`;
    }
    const bus = await openBus(cfg.bus);
    stoppers.push(() => bus.close());
    log.info({ bus: bus.kind }, 'bus open');
    if (cfg.ingest.shredVersion === null) log.warn('ingest accepts any shred version (local default); set ingest.shredVersion in production');
    if (cfg.ingest.leader.mode === 'off') log.warn('ingest skips the leader-signature check (no leader source configured); set ingest.leader in production');

    const rentals = await openRentals(cfg, bus, log, stoppers);

    if (cfg.fanout.enabled) {
      const fanout = await startFanout(cfg.fanout, bus, rentals, log.child({ component: 'fanout' }));
      stoppers.push(() => fanout.close());
      endpoints.stream = fanout.address;
    }
    if (cfg.ingest.enabled) {
      const ingest = await startIngest(cfg.ingest, bus, log.child({ component: 'ingest' }));
      stoppers.push(() => ingest.close());
      endpoints.ingest = `udp://${ingest.address.host}:${ingest.address.port}`;
    }
    if (cfg.demo.enabled && cfg.ingest.enabled) {
      const ingestAddr = endpoints.ingest!.slice('udp://'.length);
      const demo = await startDemoTraffic(cfg.demo, ingestAddr, log.child({ component: 'demo' }));
      stoppers.push(() => demo.close());
      endpoints.demoAccounts = demo.accounts.join(',');
    }
    if (cfg.gateways.evm.enabled) nested.evm = await launchEvm(cfg, bus, rentals, log, stoppers);
    started = true;
    return { endpoints, nested, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
