import net from 'node:net';
import type { Rental } from './topics/rentals';

// The strict check a rental must pass before anyone writes it (CLI, admin endpoint). Reading stays lenient
// (parseRental): a record already on the topic is applied even if today's rules are stricter, so a rule
// change never silently locks a paying customer out. Every problem names its field.

/** Chain RPC region codes of the contract. */
export const DEFAULT_REGIONS: readonly string[] = ['fra', 'ams', 'lon', 'nyc', 'tyo'];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const MAX_PER_LIST = 1_000;

export function isUuid(s: string): boolean {
  return UUID.test(s);
}

/** Problems with a rental, each starting with the field's name; empty when it may be written. */
export function checkRental(r: Rental, regions: readonly string[] = DEFAULT_REGIONS): string[] {
  const problems: string[] = [];
  if (!ID.test(r.id)) problems.push(`id: ${JSON.stringify(r.id)} is not 1–128 letters, digits, '.', '_', ':' or '-'`);
  if (!regions.includes(r.region)) problems.push(`region: ${JSON.stringify(r.region)} is not a known region (${regions.join(', ')})`);
  for (const f of ['rps', 'tps', 'pps'] as const) {
    if (!Number.isInteger(r[f]) || r[f] < 0) problems.push(`${f}: ${r[f]} must be a whole number ≥ 0`);
  }
  const lists: Array<[keyof Rental & string, string[], (v: string) => string | null]> = [
    ['ips', r.ips, (v) => (net.isIP(v) === 0 ? 'is not an IPv4 or IPv6 address' : null)],
    ['evmIps', r.evmIps, (v) => (net.isIP(v) === 0 ? 'is not an IPv4 or IPv6 address' : null)],
    ['apiKeys', r.apiKeys, (v) => (isUuid(v) ? null : 'is not a UUID')],
    ['tokens', r.tokens, (v) => (v.length >= 16 && v.length <= 256 && /^[\x21-\x7e]+$/.test(v) ? null : 'must be 16–256 printable characters without spaces')],
    ['dedicatedPaths', r.dedicatedPaths, (v) => (/^\/[A-Za-z0-9._~\-/]{8,255}$/.test(v) ? null : "must start with '/' and hold 8–255 URL-safe characters")],
  ];
  for (const [field, values, bad] of lists) {
    if (values.length > MAX_PER_LIST) problems.push(`${field}: at most ${MAX_PER_LIST} entries`);
    const seen = new Set<string>();
    values.forEach((v, i) => {
      const why = bad(v);
      // Values of credential lists are not echoed: the message may end up in a terminal log.
      const shown = field === 'ips' || field === 'evmIps' ? JSON.stringify(v) : `entry ${i}`;
      if (why !== null) problems.push(`${field}[${i}]: ${shown} ${why}`);
      if (seen.has(v.toLowerCase())) problems.push(`${field}[${i}]: duplicate`);
      seen.add(v.toLowerCase());
    });
  }
  return problems;
}
