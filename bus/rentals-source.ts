import type { Bus } from './bus';
import { DEFAULT_REGIONS } from './rental-check';
import { emptyRegistry, projectRentals, staticRentals, type RentalRegistry } from './rental-registry';
import { putRental } from './rental-store';
import { ConfigError, bool, optStr, section, strList } from '../infra/base/config-read';
import { registerSecret, type Log } from '../infra/base/log';

// Where a running service's rentals come from. Every surface reads one RentalRegistry, normally the
// projection of the compacted `rentals` topic (live: a put or a tombstone is served within a second). A rentals
// file either seeds the topic at start (single-machine runs: the embedded bus starts empty) or, on a shared
// Kafka cluster whose topic operators own, only answers what the topic does not know.

export interface RentalsConfig {
  /** JSON array of rentals. */
  file?: string;
  /** Follow the rentals topic (default true). */
  fromBus: boolean;
  /** Write the file's rentals onto the topic at start; default: only on the embedded bus. */
  seed?: boolean;
  /** Regions `meridian rentals put` and the admin endpoint accept. */
  regions: string[];
}

export function parseRentalsConfig(raw: unknown): RentalsConfig {
  const p = 'rentals';
  const o = section(raw, p);
  const file = optStr(o, 'file', p);
  const cfg: RentalsConfig = {
    fromBus: bool(o, 'fromBus', p, true),
    regions: strList(o, 'regions', p, [...DEFAULT_REGIONS]),
  };
  if (file !== undefined) cfg.file = file;
  if (o.seed !== undefined) cfg.seed = bool(o, 'seed', p, false);
  if (cfg.regions.length === 0) throw new ConfigError(`${p}.regions: at least one region`);
  return cfg;
}

export interface OpenedRentals {
  registry: RentalRegistry;
  close(): Promise<void>;
}

export async function openRentals(cfg: RentalsConfig, bus: Bus, log: Log): Promise<OpenedRentals> {
  const fromFile = cfg.file === undefined ? emptyRegistry() : staticRentals(cfg.file);
  for (const r of fromFile.all()) registerSecret(...r.tokens, ...r.apiKeys, ...r.dedicatedPaths);
  if (!cfg.fromBus) return { registry: fromFile, close: async () => undefined };
  const seed = cfg.seed ?? bus.kind === 'embedded';
  if (seed) for (const r of fromFile.all()) await putRental(bus, r);
  const projection = await projectRentals(bus, log, seed ? undefined : fromFile);
  log.info({ rentals: projection.all().length, seeded: seed ? fromFile.all().length : 0 }, 'rentals projection ready');
  return { registry: projection, close: () => projection.close() };
}
