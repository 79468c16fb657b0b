import type { Metadata } from '@grpc/grpc-js';
import type { RentalRegistry } from '../bus/rental-registry';
import type { Rental } from '../bus/topics/rentals';
import { streamError, type StreamError } from './errors';
import type { FanoutConfig } from './config';

// Who may open a stream (service.md Authentication/Streaming), decided once when the stream opens:
//   none  — anyone (local runs);
//   ip    — the connection's peer address must be a rental's registered egress IP, else the RPC fails at once
//           (PERMISSION_DENIED, see errors.ts);
//   token — metadata `x-token` must be a rental's token, else UNAUTHENTICATED.
// Then, with a PPS requirement configured, a rental entitled to fewer PPS is refused with PERMISSION_DENIED
// "PPS limit requirement not met…". With mode none there is no rental, so no PPS check.

export const TOKEN_HEADER = 'x-token';

export type AuthResult = { ok: true; rental: Rental | undefined } | { ok: false; error: StreamError };

/**
 * grpc-js reports the peer as `address:port` with the address unbracketed ("127.0.0.1:5000", "::1:5000",
 * "::ffff:10.0.0.1:5000"); bracketed forms are accepted too. Returns the address without port.
 */
export function peerAddress(peer: string): string {
  const p = peer.replace(/^ipv[46]:/, '');
  const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(p);
  if (bracket !== null) return bracket[1]!;
  const colon = p.lastIndexOf(':');
  if (colon < 0) return p;
  // A single colon is IPv4:port; several mean IPv6, whose last group grpc-js appends as the port.
  return p.slice(0, colon);
}

/** The x-token of a grpc-js call's metadata (the own HTTP/2 server reads the header directly). */
export function tokenOf(metadata: Metadata): string | undefined {
  const v = metadata.get(TOKEN_HEADER)[0];
  if (v === undefined) return undefined;
  const s = typeof v === 'string' ? v : v.toString('utf8');
  return s.length === 0 ? undefined : s;
}

/** `token`: the x-token the stream was opened with, if any (empty counts as absent). */
export function authenticate(auth: FanoutConfig['auth'], rentals: RentalRegistry, peer: string, token: string | undefined): AuthResult {
  let rental: Rental | undefined;
  if (auth.mode === 'ip') {
    rental = rentals.byIp(peerAddress(peer));
    if (rental === undefined) return { ok: false, error: streamError('ipNotAllowlisted', {}) };
  } else if (auth.mode === 'token') {
    if (token === '') token = undefined;
    rental = token === undefined ? undefined : rentals.byToken(token);
    if (rental === undefined) return { ok: false, error: streamError('unauthenticated', { why: token === undefined ? 'missing' : 'unknown' }) };
  }
  return admit(auth, rental);
}

/** The checks that hold for the whole life of a stream; re-run when rentals change. */
export function admit(auth: FanoutConfig['auth'], rental: Rental | undefined): AuthResult {
  if (rental !== undefined && auth.ppsRequirement > 0 && rental.pps < auth.ppsRequirement) {
    return { ok: false, error: streamError('ppsRequirement', { pps: rental.pps, required: auth.ppsRequirement }) };
  }
  return { ok: true, rental };
}
