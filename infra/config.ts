import fs from 'node:fs';
import type { LogFormat } from './base/log';
import { ConfigError, bool, hostPort, oneOf, section, type Raw } from './base/config-read';
import { parseBusConfig, type BusConfig } from '../bus/config';
import { parseIngestConfig, type IngestConfig } from '../ingest/config';
import { parseFanoutConfig, type FanoutConfig } from '../fanout/config';
import { parseDemoConfig, type DemoConfig } from './local/demo/config';
// The chain's config module only: its index loads litesvm's native binding, which `start` loads when the chain starts.
import { parseLocalChainConfig, type LocalChainConfig } from './local/chain/config';
import { parseAdminConfig, parseBillingConfig, type AdminConfig, type BillingConfig } from './ops/config';
import { parseRentalsConfig, type RentalsConfig } from '../bus/rentals-source';
import { parseRpcGatewayConfig, type RpcGatewayConfig } from '../gateways/rpc/config';
import { parseEvmConfig, type EvmGatewayConfig } from '../gateways/evm/config';
import { parseSubmitConfig, type SubmitConfig } from '../gateways/submit/config';
import { parseQuicConfig, type QuicConfig } from '../gateways/submit/quic/config';

// One JSON file with a section per component, then environment overrides, then validation.
//
// Environment: MERIDIAN__<SECTION>__<KEY>[__<KEY>...]=value sets that path (values stay strings and are
// coerced by the validators; a value starting with [ or { is parsed as JSON). Conveniences that operators
// expect: KAFKA_BROKERS (switches the bus to Kafka), SOLANA_RPC_URL (leader schedule source), LOG_LEVEL.

export interface MetricsConfig {
  enabled: boolean;
  host: string;
  port: number;
}

export interface Config {
  bus: BusConfig;
  /** format: json lines, pretty (human) lines, or auto = pretty on a terminal (log.format, MERIDIAN__LOG__FORMAT). */
  log: { level: string; format: LogFormat };
  metrics: MetricsConfig;
  ingest: IngestConfig;
  fanout: FanoutConfig;
  /** The local chain node (single-machine runs). */
  localchain: LocalChainConfig;
  demo: DemoConfig;
  rentals: RentalsConfig;
  admin: AdminConfig;
  billing: BillingConfig;
  /** submitQuic is the section gateways.submit.quic (the QUIC transport of the submission service; off unless enabled). */
  gateways: { rpc: RpcGatewayConfig; evm: EvmGatewayConfig; submit: SubmitConfig; submitQuic: QuicConfig };
}

function parseMetrics(raw: unknown): MetricsConfig {
  const o = section(raw, 'metrics');
  const hp = hostPort(o, 'listen', 'metrics', '127.0.0.1:9464');
  return { enabled: bool(o, 'enabled', 'metrics', true), ...hp };
}

export function parseConfig(raw: unknown): Config {
  const o = section(raw, '(root)');
  const known = new Set(['bus', 'log', 'metrics', 'ingest', 'fanout', 'localchain', 'demo', 'gateways', 'rentals', 'admin', 'billing']);
  for (const k of Object.keys(o)) if (!known.has(k)) throw new ConfigError(`unknown config section "${k}" (known: ${[...known].join(', ')})`);
  const log = section(o.log, 'log');
  const fanout = parseFanoutConfig(o.fanout);
  const rentals = parseRentalsConfig(o.rentals);
  // Auth by rental with no source of rentals would refuse everyone: say so at start instead.
  if (fanout.auth.mode !== 'none' && rentals.file === undefined && !rentals.fromBus) {
    throw new ConfigError(`fanout.auth.mode ${fanout.auth.mode} needs rentals: set rentals.file or rentals.fromBus`);
  }
  const bus = parseBusConfig(o.bus);
  // Each fanout worker reads the bus itself; an embedded bus is inside this one process.
  if (bus.kind === 'embedded' && fanout.workers > 1) {
    throw new ConfigError(`fanout.workers ${fanout.workers} needs the Kafka bus (bus.kind kafka or KAFKA_BROKERS): each worker process reads the bus itself, and the embedded bus lives inside one process`);
  }
  return {
    bus,
    log: { level: oneOf(log, 'level', 'log', ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const, 'info'), format: oneOf(log, 'format', 'log', ['auto', 'json', 'pretty'] as const, 'auto') },
    metrics: parseMetrics(o.metrics),
    ingest: parseIngestConfig(o.ingest),
    fanout,
    // The node runs only where a config asks for it (the local one does); its own default is on.
    localchain: parseLocalChainConfig({ enabled: false, ...section(o.localchain, 'localchain') }),
    demo: parseDemoConfig(o.demo),
    rentals,
    admin: parseAdminConfig(o.admin),
    billing: parseBillingConfig(o.billing),
    // Like the local chain, the gateway runs where a config asks for it (the local one does).
    gateways: {
      rpc: parseRpcGatewayConfig({ enabled: false, ...section(section(o.gateways, 'gateways').rpc, 'gateways.rpc') }),
      evm: parseEvmConfig(section(o.gateways, 'gateways').evm),
      submit: parseSubmitConfig(section(o.gateways, 'gateways').submit),
      submitQuic: parseQuicConfig(section(section(o.gateways, 'gateways').submit, 'gateways.submit').quic),
    },
  };
}

function setPath(root: Raw, path: string[], value: unknown): void {
  let cur = root;
  for (let i = 0; i < path.length - 1; i++) {
    const k = path[i]!;
    const next = cur[k];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) cur[k] = {};
    cur = cur[k] as Raw;
  }
  cur[path[path.length - 1]!] = value;
}

function envValue(v: string): unknown {
  const t = v.trim();
  if (t.startsWith('[') || t.startsWith('{')) {
    try {
      return JSON.parse(t);
    } catch {
      throw new ConfigError(`environment value ${JSON.stringify(t.slice(0, 40))} looks like JSON but does not parse`);
    }
  }
  return v;
}

/** Applies environment overrides onto a raw (unvalidated) config object, returning a new object. */
export function applyEnv(raw: Raw, env: NodeJS.ProcessEnv): Raw {
  const out = JSON.parse(JSON.stringify(raw)) as Raw;
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || !name.startsWith('MERIDIAN__')) continue;
    const path = name.slice('MERIDIAN__'.length).split('__').filter((p) => p.length > 0);
    if (path.length < 2) continue;
    // Env names are case-insensitive by convention; config keys are camelCase: match an existing key if any.
    setPath(out, path.map((p) => p.toLowerCase().replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase())), envValue(value));
  }
  if (env.KAFKA_BROKERS !== undefined && env.KAFKA_BROKERS !== '') {
    setPath(out, ['bus', 'kind'], 'kafka');
    setPath(out, ['bus', 'brokers'], env.KAFKA_BROKERS);
  }
  if (env.SOLANA_RPC_URL !== undefined && env.SOLANA_RPC_URL !== '') {
    setPath(out, ['ingest', 'leader', 'mode'], 'rpc');
    setPath(out, ['ingest', 'leader', 'rpcUrl'], env.SOLANA_RPC_URL);
  }
  if (env.LOG_LEVEL !== undefined && env.LOG_LEVEL !== '') setPath(out, ['log', 'level'], env.LOG_LEVEL);
  return out;
}

export function loadConfig(file: string | undefined, env: NodeJS.ProcessEnv = process.env): Config {
  let raw: Raw = {};
  if (file !== undefined) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (e) {
      throw new ConfigError(`cannot read config file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    try {
      raw = section(JSON.parse(text), '(root)');
    } catch (e) {
      if (e instanceof ConfigError) throw e;
      throw new ConfigError(`config file ${file} is not valid JSON: ${(e as Error).message}`);
    }
  }
  return parseConfig(applyEnv(raw, env));
}

export { ConfigError, type BusConfig };
