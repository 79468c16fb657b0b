import type { ErrorTable } from '../core';

// The chain gateway's error contract (service.md Errors / Chain JSON-RPC gateway), one row per condition.
// Every answer the gateway makes itself takes its row from here; the node's own errors pass through untouched.
// Clients match HTTP status + code + message prefix together; a support sentence may follow the prefix.
// -32100 ("PPS limit requirement not met") is never sent on this surface: it has no row here.
//
// Where the contract is silent:
//   - bodyTooLarge: 413 with the 400 row's code and prefix (the body is refused unread).
//   - notPost: 405 with the same code and prefix (GET, PUT… on the JSON-RPC port; plain HTTP on the WS port).
//   - upstreamFailed (a single request whose upstream failed, timed out or answered garbage) and overloaded
//     (the gateway's own caps): the 503 row — the server could not serve it; the 502 row is batch-only by its
//     message.

export type RpcErrorKind = 'unauthorized' | 'noAccessIp' | 'noAccessScope' | 'rpsLimit' | 'tpsLimit' | 'scanTimeout';

const INVALID = 'Invalid request body';
const NO_ACCESS = 'You have no access to this service';
const UNAVAILABLE = 'Server is not available at the moment';

export const RPC_ERRORS: ErrorTable<RpcErrorKind> = {
  invalidBody: { status: 400, code: -32600, message: INVALID },
  bodyTooLarge: { status: 413, code: -32600, message: INVALID },
  notPost: { status: 405, code: -32600, message: INVALID },
  unauthorized: { status: 401, code: -32002, message: 'Unauthorized' },
  noAccessIp: { status: 403, code: -32003, message: NO_ACCESS },
  noAccessScope: { status: 403, code: -32004, message: NO_ACCESS },
  rpsLimit: { status: 429, code: -32001, message: 'RPS limit exceeded' },
  tpsLimit: { status: 429, code: -32005, message: 'Transaction rate limit exceeded' },
  scanTimeout: { status: 429, code: -32005, message: 'Scan request timed out waiting for concurrency slot' },
  batchFailed: { status: 502, code: -32000, message: 'Unable to process Batch Request' },
  unavailable: { status: 503, code: -32099, message: UNAVAILABLE },
  upstreamFailed: { status: 503, code: -32099, message: UNAVAILABLE },
  overloaded: { status: 503, code: -32099, message: UNAVAILABLE },
};
