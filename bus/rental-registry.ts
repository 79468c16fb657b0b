import fs from 'node:fs';
import type { Bus, BusMessage, Consumer } from './bus';
import { applyLatest } from './compacted';
import { TOPIC } from './topics';
import { decodeRental, parseRental, type Rental } from './topics/rentals';
import { registerSecret, type Log } from '../infra/base/log';

// Who is calling? Every surface answers it through this interface: by egress IP (streaming, standard RPC, EVM),
// by x-token (token-authenticated streaming), by API key (submission), by dedicated path (dedicated RPC).
// Two sources: a static JSON file (an array of rentals), and a projection of the compacted `rentals` topic
// (read from the beginning at start, latest value per id wins, tombstones delete, then kept following).

export interface RentalRegistry {
  byIp(ip: string): Rental | undefined;
  /** EVM endpoints: the rental's EVM allowlist entries, then its registered egress IPs. */
  byEvmIp(ip: string): Rental | undefined;
  byToken(token: string): Rental | undefined;
  byApiKey(key: string): Rental | undefined;
  byDedicatedPath(path: string): Rental | undefined;
  all(): Rental[];
  /** Rentals changed (added, updated, deleted); returns an unsubscribe function. Absent = never changes. */
  onChange?(listener: () => void): () => void;
}

/** One spelling per address: lower case, IPv4-mapped IPv6 ("::ffff:1.2.3.4") as plain IPv4. */
export function normalizeIp(ip: string): string {
  const t = ip.trim().toLowerCase();
  return t.startsWith('::ffff:') && t.includes('.') ? t.slice('::ffff:'.length) : t;
}

/** Lookup tables over a set of rentals. Built whole on each change: rentals change rarely and are few. */
class RentalTables {
  readonly ips = new Map<string, Rental>();
  readonly evmIps = new Map<string, Rental>();
  readonly tokens = new Map<string, Rental>();
  readonly apiKeys = new Map<string, Rental>();
  readonly paths = new Map<string, Rental>();

  constructor(readonly rentals: Rental[]) {
    // First rental wins a credential both claim, so a later duplicate cannot take over an existing one.
    const put = (m: Map<string, Rental>, k: string, r: Rental): void => {
      if (!m.has(k)) m.set(k, r);
    };
    for (const r of rentals) {
      if (r.status !== 'active') continue; // suspended: kept on the topic, admitted nowhere
      for (const ip of r.ips) put(this.ips, normalizeIp(ip), r);
      for (const ip of r.evmIps) put(this.evmIps, normalizeIp(ip), r);
      for (const t of r.tokens) put(this.tokens, t, r);
      for (const k of r.apiKeys) put(this.apiKeys, k.toLowerCase(), r);
      for (const p of r.dedicatedPaths) put(this.paths, p, r);
    }
  }
}

function registryOver(get: () => RentalTables, base: RentalRegistry | undefined, onChange?: RentalRegistry['onChange']): RentalRegistry {
  return {
    byIp: (ip) => get().ips.get(normalizeIp(ip)) ?? base?.byIp(ip),
    byEvmIp: (ip) => {
      const t = get();
      const n = normalizeIp(ip);
      return t.evmIps.get(n) ?? t.ips.get(n) ?? base?.byEvmIp(ip);
    },
    byToken: (t) => get().tokens.get(t) ?? base?.byToken(t),
    byApiKey: (k) => get().apiKeys.get(k.toLowerCase()) ?? base?.byApiKey(k),
    byDedicatedPath: (p) => get().paths.get(p) ?? base?.byDedicatedPath(p),
    all: () => {
      const own = get().rentals;
      if (base === undefined) return [...own];
      const ids = new Set(own.map((r) => r.id));
      return [...own, ...base.all().filter((r) => !ids.has(r.id))];
    },
    ...(onChange === undefined ? {} : { onChange }),
  };
}

export function emptyRegistry(): RentalRegistry {
  return rentalsFromList([]);
}

export function rentalsFromList(rentals: Rental[]): RentalRegistry {
  const tables = new RentalTables(rentals.map((r) => parseRental(r)));
  return registryOver(() => tables, undefined);
}

/** A JSON file holding an array of rentals. Throws naming the entry that does not parse. */
export function staticRentals(file: string): RentalRegistry {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`rentals file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  if (!Array.isArray(raw)) throw new Error(`rentals file ${file}: expected a JSON array of rentals`);
  const rentals = raw.map((v, i) => {
    try {
      return parseRental(v);
    } catch (e) {
      throw new Error(`rentals file ${file}: entry ${i}: ${(e as Error).message}`);
    }
  });
  return registryOver(() => new RentalTables(rentals), undefined);
}

export interface RentalProjection extends RentalRegistry {
  onChange(listener: () => void): () => void;
  close(): Promise<void>;
}

export interface ProjectionOptions {
  /**
   * Compaction may remove the record at end-1 (an expired tombstone), so "caught up" cannot always be seen as
   * an offset. After this long without a record since the reader started, the projection counts itself caught up.
   */
  tailIdleMs?: number;
}

/**
 * Follows the rentals topic. Resolves once everything present at start has been applied (the positions of
 * bus.endOffsets at start), so the first lookup already sees every rental; updates keep arriving afterwards.
 * `base` answers what the topic does not know (a static file used alongside).
 */
export async function projectRentals(bus: Bus, log: Log, base?: RentalRegistry, opts: ProjectionOptions = {}): Promise<RentalProjection> {
  const byId = new Map<string, Rental>();
  let tables = new RentalTables([]);
  const listeners = new Set<() => void>();
  const ends = await bus.endOffsets(TOPIC.rentals);
  // Partitions with records at start, and the last offset each must reach.
  const waiting = new Map<number, bigint>();
  for (const [p, end] of ends) if (BigInt(end) > 0n) waiting.set(p, BigInt(end) - 1n);

  let caughtUp!: () => void;
  const ready = new Promise<void>((resolve) => (caughtUp = resolve));
  let isReady = false;
  let idleTimer: NodeJS.Timeout | undefined;
  const markReady = (how: string): void => {
    if (isReady) return;
    isReady = true;
    clearTimeout(idleTimer);
    log.info({ rentals: byId.size, how }, 'rentals projection caught up');
    caughtUp();
  };
  const armIdle = (): void => {
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => markReady('tail idle'), opts.tailIdleMs ?? 1000);
  };

  const onBatch = (messages: BusMessage[]): void => {
    const rejected = applyLatest(byId, messages, decodeRental);
    for (const r of rejected) log.warn({ rentalId: r.key, offset: r.offset, error: r.error }, 'rentals record rejected; the rental keeps its previous value');
    tables = new RentalTables([...byId.values()]);
    for (const r of tables.rentals) registerSecret(...r.tokens, ...r.apiKeys, ...r.dedicatedPaths);
    if (!isReady) {
      for (const m of messages) {
        const last = waiting.get(m.partition);
        if (last !== undefined && BigInt(m.offset) >= last) waiting.delete(m.partition);
      }
      if (waiting.size === 0) markReady('end offsets');
      else armIdle();
    }
    for (const l of listeners) {
      try {
        l();
      } catch (err) {
        log.error({ err }, 'rentals change listener failed');
      }
    }
  };

  const consumer: Consumer = await bus.consume({ topics: [TOPIC.rentals], from: 'beginning', onBatch });
  await consumer.ready;
  if (waiting.size === 0) markReady('empty topic');
  else armIdle();
  await ready;

  const onChange = (listener: () => void): (() => void) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  };
  return Object.assign(registryOver(() => tables, base, onChange), {
    onChange,
    close: async (): Promise<void> => {
      clearTimeout(idleTimer);
      listeners.clear();
      await consumer.close();
    },
  });
}
