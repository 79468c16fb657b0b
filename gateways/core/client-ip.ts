import { normalizeIp } from '../../bus/rental-registry';

// Who is calling, by address (service.md: "the address traffic actually leaves from must be the one
// registered"). The socket's peer address, unless that peer is a configured trusted proxy (a load balancer in
// front of the gateway): then the X-Forwarded-For chain is walked from the right, skipping trusted proxies, and
// the first untrusted address is the caller. A forwarded-for header from anyone else is ignored, so a client
// cannot claim someone else's registered IP.

export type TrustedProxies = ReadonlySet<string>;

export function trustedProxies(list: readonly string[]): TrustedProxies {
  return new Set(list.map(normalizeIp));
}

export function clientIp(peer: string | undefined, forwardedFor: string | string[] | undefined, trusted: TrustedProxies): string {
  const ip = normalizeIp(peer ?? '');
  if (trusted.size === 0 || !trusted.has(ip) || forwardedFor === undefined) return ip;
  const chain = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
  for (let i = chain.length - 1; i >= 0; i--) {
    const hop = normalizeIp(chain[i]!);
    if (hop.length === 0) continue;
    if (!trusted.has(hop)) return hop;
  }
  return ip;
}

/** The request target's path without query string or fragment ("/" when empty). */
export function pathOf(url: string | undefined): string {
  if (url === undefined || url.length === 0) return '/';
  let end = url.length;
  const q = url.indexOf('?');
  if (q >= 0) end = q;
  const h = url.indexOf('#');
  if (h >= 0 && h < end) end = h;
  return end === url.length ? url : url.slice(0, end);
}
