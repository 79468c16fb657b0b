import type { RentalRegistry } from '../../bus/rental-registry';
import type { Rental } from '../../bus/topics/rentals';
import { refuse, type AuthResult, type ClientInfo } from '../core';
import type { EvmErrorKind } from './errors';

// Who may call the EVM endpoints: an IP on a rental's EVM allowlist (service.md: "IP allowlist of the same kind.
// Entries are added by hand on request … Both chains are included in the rental"). The rental is looked up on
// every request and every WebSocket upgrade, never cached, so operator changes on the rentals topic apply live.
//
// Which list: the registry's byEvmIp when it has one (the rentals work adds `evmIps`, operator entries, and
// falls back to the registered egress IPs), else the registered egress IPs (`ips`). One rental covers both chains.
//
// Only `/` exists on these endpoints; any other path is refused before the caller is even looked up.

/** The caller: its rental, or null on an open endpoint (auth mode none: no usage events then). */
export type EvmCaller = Rental | null;

type EvmLookup = (ip: string) => Rental | undefined;

function lookupOf(rentals: RentalRegistry): EvmLookup {
  const r = rentals as RentalRegistry & { byEvmIp?: EvmLookup };
  return typeof r.byEvmIp === 'function' ? (ip) => r.byEvmIp!(ip) : (ip) => r.byIp(ip);
}

export function evmAuth(mode: 'none' | 'ip', rentals: RentalRegistry): (client: ClientInfo) => AuthResult<EvmCaller, EvmErrorKind> {
  const byIp = lookupOf(rentals);
  const open: AuthResult<EvmCaller, EvmErrorKind> = { ok: true, caller: null };
  return (client) => {
    if (client.path !== '/') return refuse('notFound', 'only JSON-RPC at / exists on this endpoint');
    if (mode === 'none') return open;
    const rental = byIp(client.ip);
    if (rental === undefined) return refuse('noAccess', 'this IP is not on an EVM allowlist; ask support to add it');
    return { ok: true, caller: rental };
  };
}
