// rentals — compacted; the latest value per rental id wins, a tombstone (null value) deletes the rental.
//   key   = rental id (UTF-8)
//   value = UTF-8 JSON of Rental, or null

export interface Rental {
  id: string;
  rps: number;
  tps: number;
  region: string;
  /** Registered public egress IPs (streaming, standard RPC, EVM allowlists). */
  ips: string[];
  /** Submission API keys (UUID text). */
  apiKeys: string[];
  /** Streaming x-token values for token-authenticated deployments. */
  tokens: string[];
  /** Dedicated RPC paths (the path is the credential). */
  dedicatedPaths: string[];
  /** Packets per second the rental is entitled to on the streaming endpoint; below the deployment's requirement the stream is refused. */
  pps: number;
  /** EVM allowlist entries, added by an operator on request; the EVM endpoints admit these besides `ips`. */
  evmIps: string[];
  /** A suspended rental is kept on the topic but admitted nowhere (every lookup skips it). */
  status: RentalStatus;
}

export type RentalStatus = 'active' | 'suspended';
export const RENTAL_STATUSES: readonly RentalStatus[] = ['active', 'suspended'];

export function encodeRental(r: Rental): { key: Buffer; value: Buffer } {
  return { key: Buffer.from(r.id, 'utf8'), value: Buffer.from(JSON.stringify(r), 'utf8') };
}

export function rentalTombstone(id: string): { key: Buffer; value: null } {
  return { key: Buffer.from(id, 'utf8'), value: null };
}

function strings(v: unknown, field: string): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new Error(`${field} must be an array of strings`);
  return v as string[];
}

function num(v: unknown, field: string, dflt: number): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new Error(`${field} must be a non-negative number`);
  return v;
}

/** Validates a rental from JSON (topic value or static config). Throws with a field-naming message. */
export function parseRental(v: unknown): Rental {
  if (typeof v !== 'object' || v === null) throw new Error('rental must be an object');
  const o = v as Record<string, unknown>;
  if (typeof o.id !== 'string' || o.id.length === 0) throw new Error('rental.id must be a non-empty string');
  return {
    id: o.id,
    rps: num(o.rps, 'rps', 0),
    tps: num(o.tps, 'tps', 0),
    region: typeof o.region === 'string' ? o.region : '',
    ips: strings(o.ips, 'ips'),
    apiKeys: strings(o.apiKeys, 'apiKeys'),
    tokens: strings(o.tokens, 'tokens'),
    dedicatedPaths: strings(o.dedicatedPaths, 'dedicatedPaths'),
    pps: num(o.pps, 'pps', 0),
    evmIps: strings(o.evmIps, 'evmIps'),
    status: status(o.status),
  };
}

function status(v: unknown): RentalStatus {
  if (v === undefined) return 'active';
  if (typeof v !== 'string' || !(RENTAL_STATUSES as readonly string[]).includes(v)) throw new Error(`status must be one of ${RENTAL_STATUSES.join(', ')}`);
  return v as RentalStatus;
}

/** The value of a rentals record: a Rental, a tombstone (null), or an error for a malformed value. */
export function decodeRental(value: Buffer | null): Rental | null | { error: string } {
  if (value === null) return null;
  try {
    return parseRental(JSON.parse(value.toString('utf8')));
  } catch (e) {
    return { error: (e as Error).message };
  }
}
