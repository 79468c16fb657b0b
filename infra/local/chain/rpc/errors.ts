// The node's JSON-RPC errors, codes and message texts as agave's RPC answers them (clients and the gateway
// tell errors apart by code + message prefix, so these are kept verbatim). One table; handlers throw RpcError.

export const RPC = {
  parse: { code: -32700, message: 'Parse error' },
  invalidRequest: { code: -32600, message: 'Invalid request' },
  methodNotFound: { code: -32601, message: 'Method not found' },
  invalidParams: { code: -32602, message: 'Invalid params' },
  internal: { code: -32603, message: 'Internal error' },
  blockCleanedUp: { code: -32001, message: 'Block cleaned up, does not exist on node.' },
  sendTransactionPreflightFailure: { code: -32002, message: 'Transaction simulation failed' },
  signatureVerificationFailure: { code: -32003, message: 'Transaction signature verification failure' },
  blockNotAvailable: { code: -32004, message: 'Block not available for slot' },
  transactionPrecompileVerificationFailure: { code: -32006, message: 'Transaction precompile verification failure' },
  slotSkipped: { code: -32007, message: 'Slot was skipped, or missing due to ledger jump to recent snapshot' },
  unsupportedTransactionVersion: { code: -32015, message: 'Transaction version is not supported by the requesting client' },
  minContextSlotNotReached: { code: -32016, message: 'Minimum context slot has not been reached' },
} as const;

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** -32602 "Invalid params: <detail>" (serde-shaped details where agave has them). */
export function invalidParams(detail: string): RpcError {
  return new RpcError(RPC.invalidParams.code, `Invalid params: ${detail}`);
}

/** -32602 "Invalid param: <detail>" (agave's spelling for a single bad value, e.g. a pubkey). */
export function invalidParam(detail: string): RpcError {
  return new RpcError(RPC.invalidParams.code, `Invalid param: ${detail}`);
}

export function blockNotAvailable(slot: number): RpcError {
  return new RpcError(RPC.blockNotAvailable.code, `Block not available for slot ${slot}`);
}

export function blockCleanedUp(slot: number, first: number): RpcError {
  return new RpcError(RPC.blockCleanedUp.code, `Block ${slot} cleaned up, does not exist on node. First available block: ${first}`);
}

export function unsupportedVersion(version: number): RpcError {
  return new RpcError(
    RPC.unsupportedTransactionVersion.code,
    `Transaction version (${version}) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": ${version}`,
  );
}

export function minContextSlot(contextSlot: number): RpcError {
  return new RpcError(RPC.minContextSlotNotReached.code, RPC.minContextSlotNotReached.message, { contextSlot });
}
