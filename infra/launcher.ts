import type { Server } from 'node:http';
import type { Bus } from '../bus/bus';
import { openBus } from '../bus/open';
import { emptyRegistry, projectRentals, staticRentals, type RentalRegistry } from '../bus/rental-registry';
import { startIngest } from '../ingest/worker';
import { startFanout } from '../fanout/server';
import type { Config } from './config';
import { metrics, serveMetrics } from './metrics';
import { registerSecret, type Log } from './log';
import type { SubmitService } from '../gateways/submit/service';
import { startDemoTraffic } from './demo/traffic';
import { startSubmit } from '../gateways/submit/service';
import { UsageProducer } from '../bus/usage-producer';
import { QuicListener } from '../gateways/submit/quic/listener';
import type { QuicConfig } from '../gateways/submit/quic/config';

// Everything `meridian start` runs, in dependency order, with one stop() that undoes it in reverse.

export interface Running {
  endpoints: Record<string, string>;
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
    if (cfg.submit.enabled) {
      const s = await startSubmitComponent(cfg, bus, rentals, log, (f) => stoppers.push(f), undefined);
      // Flat keys here; the endpoints file nests them: submit.http, submit.udp, demo.tipAccounts, demo.minTipLamports.
      endpoints['submit.http'] = s.submit.http;
      if (s.submit.udp !== undefined) endpoints['submit.udp'] = s.submit.udp;
      endpoints['demo.tipAccounts'] = s.demo.tipAccounts.join(',');
      endpoints['demo.minTipLamports'] = String(s.demo.minTipLamports);
      if (s.demo.apiKey !== undefined) endpoints['demo.apiKey'] = s.demo.apiKey;
      if (cfg.submitQuic.enabled) endpoints['submit.quic'] = await startQuicComponent(cfg.submitQuic, s.service, log, (f) => stoppers.push(f));
    }
    started = true;
    return { endpoints, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

// --- submit: the submission service (HTTP root + /binary + /plaintext, native UDP; QUIC joins through
// `service.pipeline`). Forwards to gateways.submit.forwardUrls, else to the local chain node (`chainHttpUrl`).
// Demo credentials: the local rental's key (the rental that admits 127.0.0.1) and the tip rule.
async function startSubmitComponent(cfg: Config, bus: Bus, rentals: RentalRegistry, log: Log, onStop: (s: Stopper) => void, chainHttpUrl: string | undefined): Promise<{
  submit: { http: string; udp?: string };
  demo: { apiKey?: string; tipAccounts: string[]; minTipLamports: number };
  service: SubmitService;
}> {
  const c = cfg.submit;
  const upstreams = c.forwardUrls.length > 0 ? c.forwardUrls : chainHttpUrl !== undefined ? [chainHttpUrl] : [];
  if (upstreams.length === 0) throw new Error('gateways.submit: no forward target (set gateways.submit.forwardUrls, or run the local chain node)');
  const usage = new UsageProducer(bus, { log: log.child({ component: 'submit-usage' }) });
  onStop(() => usage.close());
  const service = await startSubmit(c, { bus, rentals, usage, log: log.child({ component: 'submit' }), defaultUpstreams: upstreams });
  onStop(() => service.close());
  const hp = (a: { host: string; port: number }): string => (a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`);
  const apiKey = rentals.byIp('127.0.0.1')?.apiKeys[0];
  return {
    submit: { http: `http://${hp(service.http)}`, ...(service.udp === undefined ? {} : { udp: hp(service.udp) }) },
    demo: { ...(apiKey === undefined ? {} : { apiKey }), tipAccounts: c.tips.accounts, minTipLamports: c.tips.minLamports },
    service,
  };
}

// --- submit.quic: the QUIC transport (:5000) in front of the submission pipeline. The first start builds the
// QUIC terminator with cargo (cached under .cache/quic-terminator; progress on stderr).
async function startQuicComponent(c: QuicConfig, service: SubmitService, log: Log, onStop: (s: Stopper) => void): Promise<string> {
  const quic = await QuicListener.start({ config: c, pipeline: service.pipeline, log: log.child({ component: 'submit-quic' }) });
  onStop(() => quic.close());
  const a = quic.address;
  log.info({ quic: `${a.host}:${a.port}` }, 'submission QUIC listening');
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}
