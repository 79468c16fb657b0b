import { MAX_TX_SZ } from '../../proto/txn/decode';
import { V1_MAX_TX_SZ } from '../../proto/txn/v1';

// The size limits of the submission routes, from one operator setting. The contract fixes them for the
// transactions it knows (1,232 decoded bytes; bodies: JSON-RPC 3,072, /binary 1,232, /plaintext 2,048), and with
// `gateways.submit.v1MaxBytes` at its default (1,232) every limit below is exactly the contract's. A larger value
// (at most 4,096, SIMD-0296's v1 size) admits v1 transactions up to it on the routes that can carry them; each
// body limit grows by what the larger transaction adds in that route's encoding, so the slack the contract left
// for JSON framing and whitespace stays the same. Legacy and v0 stay at 1,232 whatever the setting, and the
// datagram routes (UDP, QUIC datagrams) keep the datagram's size. QUIC streams are capped by the terminator
// (1 + 1,232 bytes read per stream) and so stay at 1,232 too: see README, Submission.

export const CONTRACT_BODY = { jsonrpc: 3072, binary: MAX_TX_SZ, plaintext: 2048 } as const;

export interface SubmitLimits {
  /** Legacy and v0, and every transaction on a datagram route. */
  maxTxBytes: number;
  /** v1 on JSON-RPC, /binary and /plaintext. */
  v1MaxBytes: number;
  /** Body limits per HTTP route. */
  body: { jsonrpc: number; binary: number; plaintext: number };
}

/** Base64 length of n bytes (padded). */
const b64 = (n: number): number => 4 * Math.ceil(n / 3);
/** Longest base58 text of n bytes (all 0xff): ceil(n · log 256 / log 58). */
const b58 = (n: number): number => Math.ceil((n * Math.log(256)) / Math.log(58));

export function submitLimits(v1MaxBytes: number = MAX_TX_SZ): SubmitLimits {
  if (!Number.isInteger(v1MaxBytes) || v1MaxBytes < MAX_TX_SZ || v1MaxBytes > V1_MAX_TX_SZ) {
    throw new RangeError(`v1MaxBytes must be an integer in ${MAX_TX_SZ}..${V1_MAX_TX_SZ}`);
  }
  const extra = v1MaxBytes - MAX_TX_SZ;
  return {
    maxTxBytes: MAX_TX_SZ,
    v1MaxBytes,
    body: {
      binary: CONTRACT_BODY.binary + extra,
      plaintext: CONTRACT_BODY.plaintext + b64(v1MaxBytes) - b64(MAX_TX_SZ),
      // base58 is sendTransaction's default and the longer encoding: its growth bounds base64's.
      jsonrpc: CONTRACT_BODY.jsonrpc + b58(v1MaxBytes) - b58(MAX_TX_SZ),
    },
  };
}
