import bs58 from 'bs58';
import dgram from 'node:dgram';
import type { Server } from 'node:http';
import type { Bus } from '../bus/bus';
import { openBus } from '../bus/open';
import type { RentalRegistry } from '../bus/rental-registry';
import { startIngest } from '../ingest/worker';
import { startFanout } from '../fanout/server';
import { startFanoutWorkers, workerScript } from '../fanout/cluster';
import { resolveWorkers } from '../fanout/config';
import { startAdmin } from './ops/admin/server';
import { startBillingJob } from './ops/billing/job';
import { startRpcGateway } from '../gateways/rpc/gateway';
import { startEvmGateway } from '../gateways/evm/gateway';
import type { UpstreamEndpoint } from '../gateways/core';
import { UsageProducer } from '../bus/usage-producer';
import { startAnvil } from './local/anvil/anvil';
import { jsonRpc } from './base/json-rpc';
import type { Config } from './config';
import { asListenError } from './base/config-read';
import { startDemoTraffic, type SendTx } from './local/demo/traffic';
import type { Tip } from './local/demo/transfers';
import type { Endpoints } from './base/endpoints';
import { startLocalChain, type LocalChain } from './local/chain';
import { metrics, serveMetrics, type HealthCheck } from './base/metrics';
import type { Log } from './base/log';
import { openRentals } from '../bus/rentals-source';
import { startSubmit, type SubmitService } from '../gateways/submit/service';
import { rejectionMessage } from '../gateways/submit/rejections';
import { QuicListener } from '../gateways/submit/quic/listener';

// Everything `meridian start` runs, in dependency order, with one stop() that undoes it in reverse.
//
// The metrics server comes first (and goes last), then the bus and the rentals (one registry every surface
// reads), then COMPONENTS in order. A
// component is a small block: it reads its config section, starts, registers its stop, and adds its keys to the
// endpoints. Components that depend on an earlier one read what it left in the Launch (the chain, `send`).

export interface Running {
  endpoints: Endpoints;
  stop(): Promise<void>;
}

type Stopper = () => Promise<void>;

/** What the components share while they start. */
interface Launch {
  /** The launcher's own copy: a component may point a later one at what it started (chain → ingest). */
  cfg: Config;
  log: Log;
  bus: Bus;
  rentals: RentalRegistry;
  endpoints: Endpoints;
  onStop(s: Stopper): void;
  /** /readyz checks; a component may add its own (they are read at every request). */
  checks: HealthCheck[];
  /** The local chain node, when it runs. */
  chain?: LocalChain;
  /**
   * How locally made transactions (demo traffic) reach the chain: its sendTransaction by default. A component
   * that should carry them instead (the submission service) replaces it.
   */
  send?: SendTx;
  /** Paid in every locally made transaction once `send` goes through the submission service. */
  tip?: Tip;
  /** The submission service, when it runs (its QUIC transport feeds the same pipeline). */
  submit?: SubmitService;
  /** The one usage-event producer of this process (its metrics are process-wide), made by the first surface that meters. */
  usage?: UsageProducer;
}

function usageProducer(l: Launch): UsageProducer {
  if (l.usage === undefined) {
    const usage = new UsageProducer(l.bus, { log: l.log.child({ component: 'usage' }) });
    l.onStop(() => usage.close());
    l.usage = usage;
  }
  return l.usage;
}

interface Component {
  name: string;
  start(l: Launch): Promise<void>;
  /** The config key of its one listen address, so a port in use is reported as that key to change. */
  listenKey?: string;
}

const COMPONENTS: Component[] = [
  { name: 'admin', start: startAdminComponent, listenKey: 'admin.listen' },
  { name: 'billing', start: startBillingComponent },
  { name: 'localchain', start: startChainComponent, listenKey: 'localchain.listen' },
  { name: 'ingest', start: startIngestComponent },
  { name: 'fanout', start: startFanoutComponent, listenKey: 'fanout.listen' },
  // Surfaces add their block here (rpc, submit, evm, …): each adds its own endpoint keys.
  { name: 'submit', start: startSubmitComponent },
  { name: 'submit.quic', start: startQuicComponent, listenKey: 'gateways.submit.quic.listen' },
  { name: 'rpc', start: startRpcComponent },
  { name: 'evm', start: startEvmComponent },
  { name: 'demo', start: startDemoComponent }, // last: it sends through whatever `send` the blocks above chose
];

/** HOST:PORT with IPv6 hosts bracketed. */
const joinHostPort = (host: string, port: number): string => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

/**
 * A free UDP port on `host`, found by binding port 0 and closing. The chain must know where to shred before
 * ingest starts (ingest needs the chain up for its leader schedule), so an ephemeral ingest port is chosen here.
 */
async function freeUdpPort(host: string): Promise<number> {
  const s = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.bind(0, host, () => resolve());
  });
  const port = s.address().port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

// --- admin: the loopback-only rentals endpoint of a single-machine run (`meridian rentals …` talks to it).
async function startAdminComponent(l: Launch): Promise<void> {
  const a = l.cfg.admin;
  if (!a.enabled) return;
  const admin = await startAdmin(l.bus, l.rentals, { host: a.host, port: a.port, regions: l.cfg.rentals.regions, log: l.log.child({ component: 'admin' }) });
  l.onStop(() => admin.close());
  l.endpoints.admin = admin.address;
}

// --- billing: the usage → ledger job (the single-machine run keeps it on its embedded bus).
async function startBillingComponent(l: Launch): Promise<void> {
  const b = l.cfg.billing;
  if (!b.enabled) return;
  const billing = await startBillingJob(l.bus, { group: b.group, outDir: b.outDir, log: l.log.child({ component: 'billing' }) });
  l.onStop(() => billing.close());
}

/** The node serves each epoch's leader schedule a full epoch ahead, so ingest's usual refresh interval is ample. */
const LOCAL_LEADER_REFRESH_MS = 60_000;

// --- localchain: the local chain node; when ingest runs too, it shreds its blocks into ingest and ingest checks
// every shred's leader signature against the chain's own leader schedule (the production path).
async function startChainComponent(l: Launch): Promise<void> {
  const c = l.cfg.localchain;
  if (!c.enabled) return;
  const ingest = l.cfg.ingest;
  const feedsIngest = ingest.enabled && c.shredTo === undefined;
  if (feedsIngest && ingest.port === 0) ingest.port = await freeUdpPort(ingest.host);
  const chain = await startLocalChain({
    ...c,
    shredTo: feedsIngest ? joinHostPort(ingest.host, ingest.port) : c.shredTo,
    log: l.log.child({ component: 'localchain' }),
  });
  l.onStop(() => chain.close());
  l.chain = chain;
  l.endpoints.chain = { http: chain.httpUrl, ws: chain.wsUrl };
  if (feedsIngest) {
    l.cfg.ingest = { ...ingest, shredVersion: chain.shredVersion, leader: { mode: 'rpc', rpcUrl: chain.httpUrl, refreshMs: LOCAL_LEADER_REFRESH_MS } };
    l.log.info({ shredVersion: chain.shredVersion }, 'ingest takes its leader schedule from the local chain (leader-signature check on)');
  }
  const call = jsonRpc(chain.httpUrl);
  l.send = async (tx) => {
    await call('sendTransaction', [tx.toString('base64'), { encoding: 'base64', skipPreflight: true }]);
  };
}

// --- ingest: shreds in over UDP, entry batches and transactions out to the bus.
async function startIngestComponent(l: Launch): Promise<void> {
  const cfg = l.cfg.ingest;
  if (!cfg.enabled) return;
  if (cfg.shredVersion === null) l.log.warn('ingest accepts any shred version (local default); set ingest.shredVersion in production');
  if (cfg.leader.mode === 'off') l.log.warn('ingest skips the leader-signature check (no leader source configured); set ingest.leader in production');
  const ingest = await startIngest(cfg, l.bus, l.log.child({ component: 'ingest' }));
  l.onStop(() => ingest.close());
  l.endpoints.ingest = `udp://${joinHostPort(ingest.address.host, ingest.address.port)}`;
}

// --- fanout: the v1 gRPC stream. fanout.workers > 1 (Kafka bus only): worker processes on the one port, each its
// own bus reader, rentals projection and usage producer (infra/fanout-worker.ts); their metrics carry worker="N".
async function startFanoutComponent(l: Launch): Promise<void> {
  if (!l.cfg.fanout.enabled) return;
  const log = l.log.child({ component: 'fanout' });
  const workers = resolveWorkers(l.cfg.fanout, l.bus.kind);
  if (workers === 1) {
    if (l.cfg.fanout.workers === 0 && l.bus.kind === 'embedded') log.info('fanout.workers auto: one process (workers read the bus each for themselves; the embedded bus is inside this one)');
    const fanout = await startFanout(l.cfg.fanout, l.bus, l.rentals, log, { usage: usageProducer(l) });
    l.onStop(() => fanout.close());
    l.endpoints.stream = fanout.address;
    return;
  }
  const pool = await startFanoutWorkers({ count: workers, ...workerScript(__dirname, 'fanout-worker', __filename), payload: { config: l.cfg }, log });
  const unregister = metrics.addRemote(() => pool.metrics());
  l.onStop(async () => {
    unregister();
    await pool.close();
  });
  l.checks.push({ name: 'fanout workers', check: () => pool.healthy() });
  l.endpoints.stream = pool.address;
}

// --- rpc: the chain JSON-RPC gateway (HTTP + WebSocket) in front of the configured chain nodes, or the local
// chain node when none is configured; usage events through its own producer on the bus.
async function startRpcComponent(l: Launch): Promise<void> {
  const cfg = l.cfg.gateways.rpc;
  if (!cfg.enabled) return;
  const local = l.chain === undefined ? [] : [{ http: l.chain.httpUrl, ws: l.chain.wsUrl }];
  if (cfg.upstreams.length === 0 && local.length === 0) {
    l.log.warn('chain JSON-RPC gateway not started: no upstream (set gateways.rpc.upstreams, or run the local chain)');
    return;
  }
  const gw = await startRpcGateway(cfg, { rentals: l.rentals, log: l.log.child({ component: 'rpc' }), usage: usageProducer(l), upstreams: local });
  l.onStop(() => gw.close());
  l.endpoints.rpc = { http: gw.http.url, ws: gw.ws.url };
}

// --- evm: the EVM endpoints, one HTTP + WebSocket pair per served chain id; a local anvil per chain that asks for
// one (anvil: true) as its upstream; usage events through its own producer on the bus.
async function startEvmComponent(l: Launch): Promise<void> {
  const cfg = l.cfg.gateways.evm;
  if (!cfg.enabled) return;
  const local = new Map<number, UpstreamEndpoint[]>();
  for (const c of cfg.chains.filter((x) => x.anvil)) {
    const node = await startAnvil({ chainId: c.chainId, ...(c.anvilBlockTime > 0 ? { blockTime: c.anvilBlockTime } : {}) });
    l.onStop(() => node.stop());
    local.set(c.chainId, [{ http: node.httpUrl, ws: node.wsUrl }]);
    l.log.info({ chain: c.chainId, blockTime: c.anvilBlockTime }, 'local anvil started');
  }
  const gw = await startEvmGateway(cfg, { rentals: l.rentals, usage: usageProducer(l), log: l.log.child({ component: 'evm' }) }, local);
  l.onStop(() => gw.close());
  l.endpoints.evm = Object.fromEntries(gw.chains.map((c) => [String(c.chainId), { http: c.http, ws: c.ws }]));
}

// --- submit: the submission service (HTTP, UDP) forwarding to the configured targets or the local chain node.
// Once it runs, locally made transactions (demo traffic) go through it, paying its tip, like a customer's.
async function startSubmitComponent(l: Launch): Promise<void> {
  const c = l.cfg.gateways.submit;
  if (!c.enabled) return;
  const local = l.chain === undefined ? [] : [l.chain.httpUrl];
  if (c.forwardUrls.length === 0 && local.length === 0) throw new Error('gateways.submit: no forward target (set gateways.submit.forwardUrls, or run the local chain node)');
  const service = await startSubmit(c, { bus: l.bus, rentals: l.rentals, usage: usageProducer(l), log: l.log.child({ component: 'submit' }), defaultUpstreams: local });
  l.onStop(() => service.close());
  l.submit = service;
  l.endpoints.submit = { http: `http://${joinHostPort(service.http.host, service.http.port)}`, ...(service.udp === undefined ? {} : { udp: joinHostPort(service.udp.host, service.udp.port) }) };
  const apiKey = l.rentals.byIp('127.0.0.1')?.apiKeys[0];
  l.endpoints.demo = { ...l.endpoints.demo, ...(apiKey === undefined ? {} : { apiKey }), tipAccounts: c.tips.accounts, minTipLamports: c.tips.minLamports };
  const tipAccount = c.tips.accounts[0];
  if (apiKey !== undefined && tipAccount !== undefined) {
    l.tip = { account: Buffer.from(bs58.decode(tipAccount)), lamports: BigInt(c.tips.minLamports) };
    l.send = async (tx) => {
      const o = service.pipeline.submitNow({ apiKey, bytes: tx, transport: 'binary' });
      if (!o.ok) throw new Error(`submission rejected: ${rejectionMessage(o.reason, o.detail)}`);
    };
  }
}

// --- submit.quic: the QUIC transport (:5000) in front of the submission pipeline. The first start builds the
// QUIC terminator with cargo (cached under .cache/quic-terminator; progress on stderr).
async function startQuicComponent(l: Launch): Promise<void> {
  const c = l.cfg.gateways.submitQuic;
  if (!c.enabled) return;
  if (l.submit === undefined) throw new Error('gateways.submit.quic needs the submission service (gateways.submit.enabled)');
  const quic = await QuicListener.start({ config: c, pipeline: l.submit.pipeline, log: l.log.child({ component: 'submit-quic' }) });
  l.onStop(() => quic.close());
  l.endpoints.submit = { ...l.endpoints.submit, quic: joinHostPort(quic.address.host, quic.address.port) };
}

// --- demo: signed transfers on the local chain, plus the local credentials newcomers and tests use.
async function startDemoComponent(l: Launch): Promise<void> {
  const chain = l.chain;
  if (chain !== undefined) {
    const apiKey = l.rentals.byIp('127.0.0.1')?.apiKeys[0];
    l.endpoints.demo = {
      ...l.endpoints.demo,
      ...(apiKey !== undefined ? { apiKey } : {}),
      payerSecretKey: [...chain.payer],
    };
  }
  if (!l.cfg.demo.enabled) return;
  if (chain === undefined || l.send === undefined) throw new Error('demo.enabled needs the local chain (localchain.enabled)');
  const demo = await startDemoTraffic(l.cfg.demo, { call: jsonRpc(chain.httpUrl), send: l.send, payerSecretKey: chain.payer, ...(l.tip === undefined ? {} : { tip: l.tip }) }, l.log.child({ component: 'demo' }));
  l.onStop(() => demo.close());
  l.endpoints.demo = { ...l.endpoints.demo, accounts: demo.accounts };
}

export async function launch(config: Config, log: Log): Promise<Running> {
  const cfg = structuredClone(config);
  const stoppers: Stopper[] = [];
  const onStop = (s: Stopper): void => void stoppers.push(s);
  const endpoints: Endpoints = {};
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
  const checks: HealthCheck[] = [{ name: 'running', check: () => started && !stopping }];
  try {
    // First up, last down: /readyz says "not ready" while components start and while they drain.
    if (cfg.metrics.enabled) {
      const server: Server = await serveMetrics(metrics, cfg.metrics.host, cfg.metrics.port, checks).catch((e: unknown) => {
        throw asListenError(e, 'metrics.listen');
      });
      onStop(() => new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections(); // a keep-alive scraper must not hold shutdown open
      }));
      const a = server.address();
      if (a !== null && typeof a === 'object') endpoints.metrics = `http://${joinHostPort(cfg.metrics.host, a.port)}/metrics`;
    }
    const bus = await openBus(cfg.bus);
    onStop(() => bus.close());
    log.info({ bus: bus.kind }, 'bus open');
    const opened = await openRentals(cfg.rentals, bus, log.child({ component: 'rentals' }));
    onStop(() => opened.close());
    const rentals = opened.registry;

    const l: Launch = { cfg, log, bus, rentals, endpoints, onStop, checks };
    for (const c of COMPONENTS) {
      try {
        await c.start(l);
      } catch (e) {
        log.error({ component: c.name }, 'component did not start');
        throw asListenError(e, c.listenKey);
      }
    }
    started = true;
    return { endpoints, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

