import type { ErrorTable } from '../core';

// The EVM endpoints' error table. service.md lists no EVM codes ("Error codes and messages of the EVM endpoints:
// not shown"), so the rows are the chain gateway's where one fits (400 -32600, 403 -32003, 502 -32000,
// 503 -32099, same message prefixes), and clear rows of the same shape where nothing fits (404, 405, 413).
// Node errors are not in this table: the node's own JSON-RPC errors pass through unchanged.
//
//   kind            HTTP  code    message prefix                          when
//   invalidBody     400   -32600  Invalid request body                    unparsable JSON, not an object/array, empty batch, wrong content-type
//   bodyTooLarge    413   -32600  Invalid request body                    body over gateways.evm.limits.maxBodyBytes
//   notPost         405   -32600  Method not allowed                      any HTTP method but POST; plain HTTP on the WebSocket port
//   notFound        404   -32600  Not found                               any path but / (nothing else exists on these endpoints)
//   noAccess        403   -32003  You have no access to this service      the caller's IP is on no rental's EVM allowlist
//   batchFailed     502   -32000  Unable to process Batch Request         the whole batch, never per item
//   upstreamFailed  503   -32099  Server is not available at the moment   a single request whose upstream failed (connect, timeout, drop)
//   unavailable     503   -32099  Server is not available at the moment   no healthy upstream
//   overloaded      503   -32099  Server is not available at the moment   the gateway's own caps (in flight, connections)
//
// -32004 (a rental that does not cover this surface) never occurs here: every rental includes both chains.

export type EvmErrorKind = 'notFound' | 'noAccess';

export const EVM_ERRORS: ErrorTable<EvmErrorKind> = {
  invalidBody: { status: 400, code: -32600, message: 'Invalid request body' },
  bodyTooLarge: { status: 413, code: -32600, message: 'Invalid request body' },
  notPost: { status: 405, code: -32600, message: 'Method not allowed' },
  notFound: { status: 404, code: -32600, message: 'Not found' },
  noAccess: { status: 403, code: -32003, message: 'You have no access to this service' },
  batchFailed: { status: 502, code: -32000, message: 'Unable to process Batch Request' },
  upstreamFailed: { status: 503, code: -32099, message: 'Server is not available at the moment' },
  unavailable: { status: 503, code: -32099, message: 'Server is not available at the moment' },
  overloaded: { status: 503, code: -32099, message: 'Server is not available at the moment' },
};
