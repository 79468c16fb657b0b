import type { Outcome as UsageOutcome } from '../../bus/topics/usage-events';

// The one table of submission rejections: every reason the pipeline (or a transport's framing) can give, and
// what each transport answers for it. Transports never invent an answer; they look it up here.
//
//   jsonrpc  code + message of the JSON-RPC `error` (HTTP 200 except where `jsonrpcHttp` says otherwise:
//            the contract gives 401 to `unauthorized` and 429 to `rate limit exceeded`, nothing else)
//   http     status + plain-text body on /binary and /plaintext
//   quic     the status byte of compat.md's stream ack ([0x01, status]):
//            0x00 accepted · 0x01 rate limited · 0x02 unsigned · 0x03 missing tip · 0x04 cannot deserialize ·
//            0x05 too large · 0x06 forward failed · 0x07 signature count mismatch
//   usage    the outcome of the usage event (none for `unauthorized`: there is no rental to bill)
//
// A rejection may carry a `detail` (appended to the message after ": ") and, for a failed simulation, `data`.

export const QUIC_STATUS = {
  accepted: 0x00,
  rateLimited: 0x01,
  unsigned: 0x02,
  missingTip: 0x03,
  cannotDeserialize: 0x04,
  tooLarge: 0x05,
  forwardFailed: 0x06,
  signatureCountMismatch: 0x07,
} as const;

export interface Rejection {
  jsonrpc: { code: number; message: string };
  /** HTTP status of a JSON-RPC answer carrying this error (200 unless the contract says otherwise). */
  jsonrpcHttp: number;
  http: { status: number; text: string };
  quic: number;
  usage: UsageOutcome | null;
}

function row(code: number, message: string, httpStatus: number, quic: number, usage: UsageOutcome | null, jsonrpcHttp = 200, text = message): Rejection {
  return { jsonrpc: { code, message }, jsonrpcHttp, http: { status: httpStatus, text }, quic, usage };
}

export const REJECTIONS = {
  /** Missing, malformed or unknown API key. QUIC refuses such keys at connect; a key revoked mid-connection gets 0x01. */
  unauthorized: row(-32000, 'unauthorized', 401, QUIC_STATUS.rateLimited, null, 401),
  rate_limited: row(-32001, 'rate limit exceeded', 429, QUIC_STATUS.rateLimited, 'rate_limited', 429),
  /** Decoded transaction over 1,232 bytes. */
  too_large: row(-32602, 'decoded transaction too large', 413, QUIC_STATUS.tooLarge, 'rejected'),
  cannot_deserialize: row(-32602, 'failed to deserialize transaction', 400, QUIC_STATUS.cannotDeserialize, 'rejected'),
  signature_count_mismatch: row(-32602, 'signature count does not match the required signatures of the message header', 400, QUIC_STATUS.signatureCountMismatch, 'rejected'),
  /** No signatures at all, or a required signature left empty (all zero bytes). */
  unsigned: row(-32003, 'Transaction signature verification failure: missing signature', 400, QUIC_STATUS.unsigned, 'rejected'),
  /** A signature that does not verify against its signer's key (forged, or the message was altered). */
  invalid_signature: row(-32003, 'Transaction signature verification failure', 400, QUIC_STATUS.unsigned, 'rejected'),
  /** No top-level System transfer to a static tip account. */
  missing_tip: row(-32602, 'missing required tip', 400, QUIC_STATUS.missingTip, 'rejected'),
  /** Transfers to tip accounts exist, but none alone reaches the minimum (a split tip does not count). */
  tip_too_small: row(-32602, 'tip below the required minimum', 400, QUIC_STATUS.missingTip, 'rejected'),
  preflight_failed: row(-32002, 'Transaction simulation failed', 400, QUIC_STATUS.forwardFailed, 'rejected'),
  preflight_upstream_error: row(-32603, 'preflight check failed: RPC node returned an error', 502, QUIC_STATUS.forwardFailed, 'error'),
  preflight_timeout: row(-32603, 'preflight check timed out', 504, QUIC_STATUS.forwardFailed, 'error'),
  /** The server-wide cap on simulations in flight is reached (the sum over all clients is bounded). */
  preflight_busy: row(-32603, 'preflight check failed: too many preflight checks in flight', 503, QUIC_STATUS.forwardFailed, 'error'),
  /**
   * The forward could not even be dispatched: every target's bounded queue is full. Failures after dispatch
   * are never reported (the contract); this is overload, answered so the client knows nothing was sent.
   */
  forward_failed: row(-32603, 'forward failed: the forward queue is full', 503, QUIC_STATUS.forwardFailed, 'error'),
} as const satisfies Record<string, Rejection>;

export type RejectReason = keyof typeof REJECTIONS;

export const REJECT_REASONS = Object.keys(REJECTIONS) as RejectReason[];

export function rejection(reason: RejectReason): Rejection {
  return REJECTIONS[reason];
}

/** The QUIC stream-ack status byte of an outcome (0x00 accepted, else the table's byte). */
export function quicStatus(o: { ok: true } | { ok: false; reason: RejectReason }): number {
  return o.ok ? QUIC_STATUS.accepted : REJECTIONS[o.reason].quic;
}

/** The message with its detail, as JSON-RPC and the plain-text routes show it. */
export function rejectionMessage(reason: RejectReason, detail?: string): string {
  const m = REJECTIONS[reason].jsonrpc.message;
  return detail === undefined || detail === '' ? m : `${m}: ${detail}`;
}

/** Framing errors of the HTTP transports (not pipeline outcomes): status and text from the contract. */
export const HTTP_FRAMING = {
  bodyTooLarge: { status: 413, text: 'request body too large' },
  decodedTooLarge: { status: 413, text: 'decoded transaction too large' },
  invalidBase64: { status: 400, text: 'invalid base64' },
  invalidUtf8: { status: 400, text: 'invalid utf8' },
  notFound: { status: 404, text: 'not found' },
  methodNotAllowed: { status: 405, text: 'method not allowed' },
} as const;

/** JSON-RPC envelope and parameter errors (HTTP 200, `error` object). */
export const JSONRPC_ERRORS = {
  parse: { code: -32700, message: 'Parse error' },
  invalidRequest: { code: -32600, message: 'Invalid request' },
  batch: { code: -32600, message: 'Invalid request: batch requests are not supported, send a single request object' },
  bodyTooLarge: { code: -32600, message: 'Invalid request: request body too large' },
  methodNotFound: { code: -32601, message: 'method not found' },
  invalidParams: { code: -32602, message: 'Invalid params' },
  unsupportedEncoding: { code: -32602, message: 'unsupported encoding' },
  invalidBase58: { code: -32602, message: 'invalid base58 encoding: the transaction string is not valid base58' },
  invalidBase64: { code: -32602, message: 'invalid base64 encoding: the transaction string is not valid base64' },
  internal: { code: -32603, message: 'Internal error' },
} as const;
