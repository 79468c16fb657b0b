import bs58 from 'bs58';
import type { Server } from 'node:http';
import type { Bus } from '../bus/bus';
import { openBus } from '../bus/open';
import type { RentalRegistry } from '../bus/rental-registry';
import { startIngest } from '../ingest/worker';
import type { IngestConfig } from '../ingest/config';
import { startFanout } from '../fanout/server';
import { startFanoutWorkers, workerScript } from '../fanout/cluster';
import { resolveWorkers, type FanoutConfig } from '../fanout/config';
import { startAdmin } from './ops/admin/server';
import { startBillingJob } from './ops/billing/job';
import type { AdminConfig, BillingConfig } from './ops/config';
import { startRpcGateway } from '../gateways/rpc/gateway';
import type { RpcGatewayConfig } from '../gateways/rpc/config';
import { startEvmGateway } from '../gateways/evm/gateway';
import type { EvmGatewayConfig } from '../gateways/evm/config';
import type { UpstreamEndpoint } from '../gateways/core';
import { UsageProducer } from '../bus/usage-producer';
import { startAnvil } from './local/anvil/anvil';
import { jsonRpc } from './base/json-rpc';
import type { Config, MetricsConfig } from './config';
import { ConfigError, asListenError } from './base/config-read';
import { unmetNeeds } from './component-needs';
import { startDemoTraffic, type SendTx } from './local/demo/traffic';
import type { DemoConfig } from './local/demo/config';
import type { Tip } from './local/demo/transfers';
import type { Endpoints, HttpWs } from './base/endpoints';
import type { LocalChain, LocalChainConfig } from './local/chain';
import { ComponentUnavailable, firstLine } from './base/unavailable';
import { metrics, serveMetrics, type HealthCheck } from './base/metrics';
import type { Log } from './base/log';
import { openRentals } from '../bus/rentals-source';
import { startSubmit, type SubmitService } from '../gateways/submit/service';
import type { SubmitConfig } from '../gateways/submit/config';
import { rejectionMessage } from '../gateways/submit/rejections';
import { QuicListener } from '../gateways/submit/quic/listener';
import type { QuicConfig } from '../gateways/submit/quic/config';
import type { FanoutWorkerPayload } from './fanout-worker';

// Everything `meridian start` runs, in dependency order, with one stop() that undoes it in reverse.
//
// The metrics server comes first (and goes last), then the bus and the rentals (one registry every surface
// reads), then the components. A component is a function of what it needs (its config section, the floor
// below, values earlier components returned) that returns what it provides (addresses, handles) and its stop,
// or undefined when it does not run. launch() is the one place that feeds one component's output to another,
// registers the stops, and builds the endpoints from what came back. The config is only read: what a
// component derives from another (ingest fed by the local chain) is a new value.

export interface Running {
  endpoints: Endpoints;
  /** The local chain node when it runs in this process (tests read its block ids). */
  localChain?: Pick<LocalChain, 'blockFormat' | 'blockId' | 'updateParents'>;
  stop(): Promise<void>;
}

type Stopper = () => Promise<void>;

/** A component that runs: what it provides, and how to stop it. */
type Started<T = unknown> = T & { stop: Stopper };

/** What every component may use: the bus, the one rentals registry, the process log. */
interface Floor {
  bus: Bus;
  rentals: RentalRegistry;
  log: Log;
}

/** How locally made transactions (demo traffic) reach the chain, and the tip each must pay that way. */
interface Carrier {
  send: SendTx;
  tip?: Tip;
}

/** Stoppers run last in, first out; one that fails is logged and the rest still run. */
class Stops {
  private readonly list: Stopper[] = [];
  constructor(private readonly log: Log) {}
  add(s: Stopper): void {
    this.list.push(s);
  }
  async run(): Promise<void> {
    for (const s of this.list.splice(0).reverse()) {
      try {
        await s();
      } catch (e) {
        this.log.warn({ err: e }, 'error while stopping a component');
      }
    }
  }
}

/** HOST:PORT with IPv6 hosts bracketed. */
const joinHostPort = (host: string, port: number): string => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

/** The same object without its undefined values: a surface that does not run is absent from the endpoints. */
function present<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

// --- metrics: /metrics, /healthz and /readyz; `checks` are read at every request.
async function startMetricsServer(cfg: MetricsConfig, checks: HealthCheck[]): Promise<Started<{ url?: string }> | undefined> {
  if (!cfg.enabled) return undefined;
  const server: Server = await serveMetrics(metrics, cfg.host, cfg.port, checks).catch((e: unknown) => {
    throw asListenError(e, 'metrics.listen');
  });
  const a = server.address();
  return {
    url: a !== null && typeof a === 'object' ? `http://${joinHostPort(cfg.host, a.port)}/metrics` : undefined,
    stop: () => new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections(); // a keep-alive scraper must not hold shutdown open
    }),
  };
}

// --- admin: the loopback-only rentals endpoint of a single-machine run (`meridian rentals …` talks to it).
async function startAdminComponent(cfg: AdminConfig, regions: string[], region: string, f: Floor): Promise<Started<{ address: string }> | undefined> {
  if (!cfg.enabled) return undefined;
  const admin = await startAdmin(f.bus, f.rentals, { host: cfg.host, port: cfg.port, regions, region, log: f.log.child({ component: 'admin' }) });
  return { address: admin.address, stop: () => admin.close() };
}

// --- billing: the usage → ledger job (the single-machine run keeps it on its embedded bus).
/** How long a stop waits for the billing job to read the usage events still on the bus (an embedded bus's last ones). */
const BILLING_DRAIN_MS = 5_000;
async function startBillingComponent(cfg: BillingConfig, f: Floor): Promise<Started | undefined> {
  if (!cfg.enabled) return undefined;
  const log = f.log.child({ component: 'billing' });
  const billing = await startBillingJob(f.bus, { group: cfg.group, outDir: cfg.outDir, log });
  return {
    // Its stop runs after the usage producer's flush (launch() stops in reverse): what the surfaces metered is on the
    // bus, and on the embedded bus it goes with the process, so it is billed first.
    stop: async () => {
      if (!(await billing.drain(BILLING_DRAIN_MS))) log.warn({ waitedMs: BILLING_DRAIN_MS }, 'billing stopped before reading every usage event on the bus');
      await billing.close();
    },
  };
}

// --- localchain: the local chain node. It starts without a shred target unless its config names one: ingest
// needs the node's RPC (leader schedule) to start, so launch() points the node at ingest once ingest listens.
async function startChainComponent(cfg: LocalChainConfig, log: Log): Promise<Started<{ chain: LocalChain; carrier: Carrier }> | undefined> {
  if (!cfg.enabled) return undefined;
  const { startLocalChain } = await loadLocalChain();
  const chain = await startLocalChain({ ...cfg, log: log.child({ component: 'localchain' }) });
  const call = jsonRpc(chain.httpUrl);
  const send: SendTx = async (tx) => {
    await call('sendTransaction', [tx.toString('base64'), { encoding: 'base64', skipPreflight: true }]);
  };
  return { chain, carrier: { send }, stop: () => chain.close() };
}

type ChainModule = typeof import('./local/chain');

/** How to run without the local chain, in the words of the config (one line for the operator). */
export const WITHOUT_LOCAL_CHAIN =
  'set MERIDIAN__LOCALCHAIN__ENABLED=false and MERIDIAN__DEMO__ENABLED=false (localchain.enabled, demo.enabled) and point ' +
  'gateways.rpc.upstreams and gateways.submit.forwardUrls at a real chain node (solana-test-validator or a cluster RPC)';

/**
 * The local chain's code, loaded when the chain starts and not before: it executes on litesvm, whose native
 * binding exists for linux (x64, arm64; glibc and musl) and macOS (x64, arm64) only. Loaded at import time it
 * would stop every command (even `start --help`, even with the chain off) on any other platform.
 */
export async function loadLocalChain(): Promise<ChainModule> {
  try {
    return await import('./local/chain');
  } catch (e) {
    throw new ComponentUnavailable('localchain', `litesvm's native binding does not load (${firstLine(e)})`, WITHOUT_LOCAL_CHAIN);
  }
}

/** The node serves each epoch's leader schedule a full epoch ahead, so ingest's usual refresh interval is ample. */
const LOCAL_LEADER_REFRESH_MS = 60_000;

/** Ingest fed by the local chain checks every shred's leader signature against the chain's own schedule (the production path). */
function ingestFedBy(chain: LocalChain, cfg: IngestConfig): IngestConfig {
  // Its slot notifications become processed/confirmed/finalized statuses, unless ingest.chain names another node.
  const node = cfg.chain !== undefined && cfg.chain.wsUrl !== '' ? cfg.chain : { wsUrl: chain.wsUrl, rpcUrl: chain.httpUrl, confirmedPollMs: cfg.chain?.confirmedPollMs ?? 400, holdMs: cfg.chain?.holdMs ?? 1000 };
  return { ...cfg, shredVersion: chain.shredVersion, leader: { mode: 'rpc', rpcUrl: chain.httpUrl, refreshMs: LOCAL_LEADER_REFRESH_MS }, chain: node };
}

// --- ingest: shreds in over UDP, entry batches and transactions out to the bus. It listens where its config
// says (port 0 = ephemeral): the address it returns is the one to send to.
async function startIngestComponent(cfg: IngestConfig, f: Floor): Promise<Started<{ address: string }> | undefined> {
  if (!cfg.enabled) return undefined;
  if (cfg.shredVersion === null) f.log.warn('ingest accepts any shred version (local default); set ingest.shredVersion in production');
  if (cfg.leader.mode === 'off') f.log.warn('ingest skips the leader-signature check (no leader source configured); set ingest.leader in production');
  const ingest = await startIngest(cfg, f.bus, f.log.child({ component: 'ingest' }));
  return { address: joinHostPort(ingest.address.host, ingest.address.port), stop: () => ingest.close() };
}

// --- fanout: the gRPC transaction streams (v1 and v2, one port). fanout.workers > 1 (Kafka bus only): worker processes on the one port, each its
// own bus reader, rentals projection and usage producer (infra/fanout-worker.ts); their metrics carry worker="N".
async function startFanoutComponent(
  cfg: FanoutConfig,
  f: Floor,
  usage: () => UsageProducer,
  workerPayload: FanoutWorkerPayload,
): Promise<Started<{ address: string; health?: HealthCheck }> | undefined> {
  if (!cfg.enabled) return undefined;
  const log = f.log.child({ component: 'fanout' });
  const workers = resolveWorkers(cfg, f.bus.kind);
  if (workers === 1) {
    if (cfg.workers === 0 && f.bus.kind === 'embedded') log.info('fanout.workers auto: one process (workers read the bus each for themselves; the embedded bus is inside this one)');
    const fanout = await startFanout(cfg, f.bus, f.rentals, log, { usage: usage() });
    return { address: fanout.address, stop: () => fanout.close() };
  }
  const pool = await startFanoutWorkers({ count: workers, ...workerScript(__dirname, 'fanout-worker', __filename), payload: workerPayload, log });
  const unregister = metrics.addRemote(() => pool.metrics());
  return {
    address: pool.address,
    health: { name: 'fanout workers', check: () => pool.healthy() },
    stop: async () => {
      unregister();
      await pool.close();
    },
  };
}

// --- submit: the submission service (HTTP, UDP) forwarding to the configured targets or the local chain node.
// Given the local rental's API key and a tip account, it also carries locally made transactions (demo traffic),
// tip paid, like a customer's.
async function startSubmitComponent(
  cfg: SubmitConfig,
  f: Floor,
  usage: () => UsageProducer,
  chain: LocalChain | undefined,
  localApiKey: string | undefined,
): Promise<Started<{ service: SubmitService; http: string; udp?: string; carrier?: Carrier }> | undefined> {
  if (!cfg.enabled) return undefined;
  const local = chain === undefined ? [] : [chain.httpUrl];
  if (cfg.forwardUrls.length === 0 && local.length === 0) throw new ConfigError('gateways.submit: no forward target (set gateways.submit.forwardUrls, or run the local chain node)');
  // Fleet-wide TPS on a shared (Kafka) bus; on the embedded bus this process is the whole fleet.
  const fleetBus = f.bus.kind === 'kafka' ? f.bus : undefined;
  const service = await startSubmit(cfg, { bus: f.bus, rentals: f.rentals, usage: usage(), log: f.log.child({ component: 'submit' }), defaultUpstreams: local, ...(fleetBus === undefined ? {} : { fleetBus }) });
  const tipAccount = cfg.tips.accounts[0];
  let carrier: Carrier | undefined;
  if (localApiKey !== undefined && tipAccount !== undefined) {
    carrier = {
      tip: { account: Buffer.from(bs58.decode(tipAccount)), lamports: BigInt(cfg.tips.minLamports) },
      send: async (tx) => {
        const o = service.pipeline.submitNow({ apiKey: localApiKey, bytes: tx, transport: 'binary' });
        if (!o.ok) throw new Error(`submission rejected: ${rejectionMessage(o.reason, o.detail)}`);
      },
    };
  }
  return {
    service,
    http: `http://${joinHostPort(service.http.host, service.http.port)}`,
    udp: service.udp === undefined ? undefined : joinHostPort(service.udp.host, service.udp.port),
    carrier,
    stop: () => service.close(),
  };
}

// --- submit.quic: the QUIC transport (:5000) in front of the submission pipeline. The first start builds the
// QUIC terminator with cargo (cached under ~/.cache/meridian/quic-terminator; progress on stderr).
async function startQuicComponent(cfg: QuicConfig, submit: SubmitService | undefined, log: Log): Promise<Started<{ address: string }> | undefined> {
  if (!cfg.enabled) return undefined;
  if (submit === undefined) throw new ConfigError('gateways.submit.quic needs the submission service (gateways.submit.enabled)');
  const quic = await QuicListener.start({ config: cfg, pipeline: submit.pipeline, log: log.child({ component: 'submit-quic' }) });
  return { address: joinHostPort(quic.address.host, quic.address.port), stop: () => quic.close() };
}

// --- rpc: the chain JSON-RPC gateway (HTTP + WebSocket) in front of the configured chain nodes, or the local
// chain node when none is configured.
async function startRpcComponent(cfg: RpcGatewayConfig, f: Floor, usage: () => UsageProducer, chain: LocalChain | undefined): Promise<Started<HttpWs> | undefined> {
  if (!cfg.enabled) return undefined;
  const local = chain === undefined ? [] : [{ http: chain.httpUrl, ws: chain.wsUrl }];
  // unmetNeeds() refused a start with no upstream; this is the same rule for a caller that skipped it.
  if (cfg.upstreams.length === 0 && local.length === 0) throw new ConfigError('gateways.rpc: no upstream (set gateways.rpc.upstreams, or run the local chain)');
  // Fleet limits need other instances to exchange with: on the embedded bus this process is the whole fleet.
  const fleetBus = f.bus.kind === 'kafka' ? f.bus : undefined;
  const gw = await startRpcGateway(cfg, { rentals: f.rentals, log: f.log.child({ component: 'rpc' }), usage: usage(), upstreams: local, ...(fleetBus === undefined ? {} : { fleetBus }) });
  return { http: gw.http.url, ws: gw.ws.url, stop: () => gw.close() };
}

// --- evm: the EVM endpoints, one HTTP + WebSocket pair per served chain id; a local anvil per chain that asks for
// one (anvil: true) as its upstream.
async function startEvmComponent(cfg: EvmGatewayConfig, f: Floor, usage: () => UsageProducer): Promise<Started<{ chains: Record<string, HttpWs> }> | undefined> {
  if (!cfg.enabled) return undefined;
  // Several parts: if a later one fails, the ones already running are stopped here (launch() never saw them).
  const stops = new Stops(f.log);
  try {
    const local = new Map<number, UpstreamEndpoint[]>();
    for (const c of cfg.chains.filter((x) => x.anvil)) {
      const node = await startAnvil({ chainId: c.chainId, ...(c.anvilBlockTime > 0 ? { blockTime: c.anvilBlockTime } : {}), ...(c.anvilPruneHistory ? { args: ['--prune-history'] } : {}) });
      stops.add(() => node.stop());
      local.set(c.chainId, [{ http: node.httpUrl, ws: node.wsUrl }]);
      f.log.info({ chain: c.chainId, blockTime: c.anvilBlockTime, pruneHistory: c.anvilPruneHistory }, 'local anvil started');
    }
    const gw = await startEvmGateway(cfg, { rentals: f.rentals, usage: usage(), log: f.log.child({ component: 'evm' }) }, local);
    stops.add(() => gw.close());
    return { chains: Object.fromEntries(gw.chains.map((c) => [String(c.chainId), { http: c.http, ws: c.ws }])), stop: () => stops.run() };
  } catch (e) {
    await stops.run();
    throw e;
  }
}

// --- lookup tables: fetched from the local chain when it runs and no other node is named. With neither, a config
// that asks v1 filters to match loaded addresses (the local one does) runs on static keys: a run without the local
// chain (a platform without litesvm, or an operator's choice) must still start, and says so once.
function fanoutWithTableSource(cfg: FanoutConfig, localChain: { http: string; ws: string } | undefined, log: Log): FanoutConfig {
  if (cfg.lookupTables.rpcUrl !== '') return cfg;
  if (localChain !== undefined) return { ...cfg, lookupTables: { ...cfg.lookupTables, rpcUrl: localChain.http, wsUrl: cfg.lookupTables.wsUrl === '' ? localChain.ws : cfg.lookupTables.wsUrl } };
  if (!cfg.lookupTables.matchV1) return cfg;
  log.warn('fanout.lookupTables.matchV1 is on but no chain node serves tables (local chain off, fanout.lookupTables.rpcUrl empty): v1 filters match static keys only');
  return { ...cfg, lookupTables: { ...cfg.lookupTables, matchV1: false } };
}

// --- demo: signed transfers on the local chain, sent through `carrier`.
async function startDemoComponent(cfg: DemoConfig, chain: LocalChain | undefined, carrier: Carrier | undefined, log: Log): Promise<Started<{ accounts: string[]; lookupTable: string | undefined }> | undefined> {
  if (!cfg.enabled) return undefined;
  if (chain === undefined || carrier === undefined) throw new ConfigError('demo.enabled needs the local chain (localchain.enabled)');
  const demo = await startDemoTraffic(cfg, { call: jsonRpc(chain.httpUrl), send: carrier.send, payerSecretKey: chain.payer, ...(carrier.tip === undefined ? {} : { tip: carrier.tip }) }, log.child({ component: 'demo' }));
  return { accounts: demo.accounts, lookupTable: demo.lookupTable, stop: () => demo.close() };
}

export async function launch(cfg: Config, log: Log): Promise<Running> {
  // Before any port or connection: a component with nothing to serve from refuses the start in one line.
  const unmet = unmetNeeds(cfg);
  if (unmet.length > 0) throw new ConfigError(`cannot start: ${unmet.join('; ')}`);
  const stops = new Stops(log);
  // /readyz turns 503 the moment shutdown begins, so a load balancer drains this instance before streams end.
  let started = false;
  let stopping = false;
  const stop = async (): Promise<void> => {
    stopping = true;
    await stops.run();
  };
  const checks: HealthCheck[] = [{ name: 'running', check: () => started && !stopping }];
  try {
    // First up, last down: /readyz says "not ready" while components start and while they drain.
    const metricsServer = await startMetricsServer(cfg.metrics, checks);
    if (metricsServer !== undefined) stops.add(metricsServer.stop);
    const bus = await openBus(cfg.bus);
    stops.add(() => bus.close());
    log.info({ bus: bus.kind }, 'bus open');
    const opened = await openRentals(cfg.rentals, bus, log.child({ component: 'rentals' }));
    stops.add(() => opened.close());
    const floor: Floor = { bus, rentals: opened.registry, log };

    // One usage producer per process (its metrics are process-wide), made when a surface first asks for it
    // rather than up front: whether anything meters here is each surface's own decision (a fanout worker pool
    // meters in its workers, the rpc gateway stays down without an upstream), and an unused producer would
    // still publish its metrics. Its stop goes in before the asking surface's, so it closes after every user.
    let usageProducer: UsageProducer | undefined;
    const usage = (): UsageProducer => {
      if (usageProducer === undefined) {
        const u = new UsageProducer(bus, { log: log.child({ component: 'usage' }) });
        stops.add(() => u.close());
        usageProducer = u;
      }
      return usageProducer;
    };

    /** Starts one component, registers its stop, and names its config key when its port is taken. */
    const run = async <T>(name: string, listenKey: string | undefined, start: () => Promise<Started<T> | undefined>): Promise<Started<T> | undefined> => {
      let c: Started<T> | undefined;
      try {
        c = await start();
      } catch (e) {
        // A component this machine cannot run is said in one line by the CLI, not logged as a failure as well.
        if (e instanceof ComponentUnavailable) throw e;
        log.error({ component: name }, 'component did not start');
        throw asListenError(e, listenKey);
      }
      if (c !== undefined) stops.add(c.stop);
      return c;
    };

    const admin = await run('admin', 'admin.listen', () => startAdminComponent(cfg.admin, cfg.rentals.regions, cfg.gateways.rpc.region, floor));
    await run('billing', undefined, () => startBillingComponent(cfg.billing, floor));
    const local = await run('localchain', 'localchain.listen', () => startChainComponent(cfg.localchain, log));
    // The local chain feeds ingest unless its config sends its shreds elsewhere.
    const chainFeedsIngest = local !== undefined && cfg.ingest.enabled && cfg.localchain.shredTo === undefined;
    if (chainFeedsIngest) log.info({ shredVersion: local.chain.shredVersion }, 'ingest takes its leader schedule from the local chain (leader-signature check on)');
    const ingest = await run('ingest', undefined, () => startIngestComponent(chainFeedsIngest ? ingestFedBy(local.chain, cfg.ingest) : cfg.ingest, floor));
    if (chainFeedsIngest && ingest !== undefined) local.chain.shredTo(ingest.address);
    // Lookup tables are fetched from the local chain when it runs and no other node is named.
    const fanoutCfg = fanoutWithTableSource(cfg.fanout, local === undefined ? undefined : { http: local.chain.httpUrl, ws: local.chain.wsUrl }, log);
    const fanout = await run('fanout', 'fanout.listen', () => startFanoutComponent(fanoutCfg, floor, usage, { config: { ...cfg, fanout: fanoutCfg } }));
    if (fanout?.health !== undefined) checks.push(fanout.health);
    // The local rental's key: the demo credentials show it, and the submission service carries local traffic with it.
    const localApiKey = floor.rentals.byIp('127.0.0.1')?.apiKeys[0];
    const submit = await run('submit', undefined, () => startSubmitComponent(cfg.gateways.submit, floor, usage, local?.chain, localApiKey));
    const quic = await run('submit.quic', 'gateways.submit.quic.listen', () => startQuicComponent(cfg.gateways.submitQuic, submit?.service, log));
    const rpc = await run('rpc', undefined, () => startRpcComponent(cfg.gateways.rpc, floor, usage, local?.chain));
    const evm = await run('evm', undefined, () => startEvmComponent(cfg.gateways.evm, floor, usage));
    // Last: through the submission service when it carries local traffic (so demo transfers pay its tip and show
    // in its metrics like a customer's), else straight to the chain.
    const demo = await run('demo', undefined, () => startDemoComponent(cfg.demo, local?.chain, submit?.carrier ?? local?.carrier, log));

    const endpoints: Endpoints = present({
      metrics: metricsServer?.url,
      admin: admin?.address,
      chain: local === undefined ? undefined : { http: local.chain.httpUrl, ws: local.chain.wsUrl },
      ingest: ingest === undefined ? undefined : `udp://${ingest.address}`,
      stream: fanout?.address,
      submit: submit === undefined ? undefined : present({ http: submit.http, udp: submit.udp, quic: quic?.address }),
      rpc: rpc === undefined ? undefined : { http: rpc.http, ws: rpc.ws },
      evm: evm?.chains,
      // The local credentials newcomers and tests use.
      demo: local === undefined && submit === undefined ? undefined : present({
        apiKey: localApiKey,
        tipAccounts: submit === undefined ? undefined : cfg.gateways.submit.tips.accounts,
        minTipLamports: submit === undefined ? undefined : cfg.gateways.submit.tips.minLamports,
        payerSecretKey: local === undefined ? undefined : [...local.chain.payer],
        accounts: demo?.accounts,
        lookupTable: demo?.lookupTable,
      }),
    });
    started = true;
    return { endpoints, stop, ...(local === undefined ? {} : { localChain: local.chain }) };
  } catch (e) {
    await stop();
    throw e;
  }
}
