import type { Server } from 'node:http';
import { openBus } from '../bus/open';
import { startAdmin } from './admin/server';
import { startBillingJob } from './billing/job';
import { openRentals } from './rentals-source';
import { startIngest } from '../ingest/worker';
import { startFanout } from '../fanout/server';
import type { Config } from './config';
import { metrics, serveMetrics } from './metrics';
import type { Log } from './log';
import { startDemoTraffic } from './demo/traffic';

// Everything `meridian start` runs, in dependency order, with one stop() that undoes it in reverse.

export interface Running {
  endpoints: Record<string, string>;
  stop(): Promise<void>;
}

type Stopper = () => Promise<void>;

export async function launch(cfg: Config, log: Log): Promise<Running> {
  const stoppers: Stopper[] = [];
  const endpoints: Record<string, string> = {};
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

    const opened = await openRentals(cfg.rentals, bus, log.child({ component: 'rentals' }));
    stoppers.push(() => opened.close());
    const rentals = opened.registry;
    if (cfg.admin.enabled) {
      const admin = await startAdmin(bus, rentals, { host: cfg.admin.host, port: cfg.admin.port, regions: cfg.rentals.regions, log: log.child({ component: 'admin' }) });
      stoppers.push(() => admin.close());
      endpoints.admin = admin.address;
    }
    if (cfg.billing.enabled) {
      const billing = await startBillingJob(bus, { group: cfg.billing.group, outDir: cfg.billing.outDir, log: log.child({ component: 'billing' }) });
      stoppers.push(() => billing.close());
    }

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
    started = true;
    return { endpoints, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
