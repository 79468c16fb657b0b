import type { RentalRegistry } from '../../bus/rental-registry';
import type { Rental } from '../../bus/topics/rentals';
import { refuse, type AuthResult, type ClientInfo } from '../core';
import type { RpcErrorKind } from './errors';

// Who is calling the chain gateway (service.md Authentication), looked up per request so rental changes
// apply at once:
//   - standard endpoint (path "/"): the caller's egress IP must be a rental's registered IP → else 403 -32003;
//   - dedicated endpoint (any other path): the path is the credential (with or without its leading "/")
//     → else 401 -32002;
//   - then coverage: a rental of another region than this deployment's, or one that includes no chain RPC
//     (neither RPS nor TPS), gets 403 -32004.
// With auth mode "none" (local runs only) everyone is admitted as nobody: unmetered, no usage events.

export type RpcCaller = Rental | null;

export interface RpcAuthOptions {
  mode: 'rentals' | 'none';
  /** This deployment's region, lower case; "" admits every region. */
  region: string;
}

function dedicatedCredential(path: string): string {
  let s = 0;
  let e = path.length;
  while (s < e && path.charCodeAt(s) === 0x2f) s++;
  while (e > s && path.charCodeAt(e - 1) === 0x2f) e--;
  return path.slice(s, e);
}

export function rpcAuth(rentals: RentalRegistry, o: RpcAuthOptions): (client: ClientInfo) => AuthResult<RpcCaller, RpcErrorKind> {
  return (client) => {
    if (o.mode === 'none') return { ok: true, caller: null };
    const cred = dedicatedCredential(client.path);
    let rental: Rental | undefined;
    if (cred.length === 0) {
      rental = rentals.byIp(client.ip);
      if (rental === undefined) return refuse<RpcErrorKind>('noAccessIp', 'this egress IP is not registered to a rental');
    } else {
      rental = rentals.byDedicatedPath(cred) ?? rentals.byDedicatedPath(`/${cred}`);
      if (rental === undefined) return refuse<RpcErrorKind>('unauthorized', 'unknown dedicated endpoint');
    }
    if (o.region !== '' && rental.region.toLowerCase() !== o.region) {
      return refuse<RpcErrorKind>('noAccessScope', `the rental does not cover region ${o.region}`);
    }
    if (rental.rps <= 0 && rental.tps <= 0) return refuse<RpcErrorKind>('noAccessScope', 'the rental does not include chain JSON-RPC');
    return { ok: true, caller: rental };
  };
}
