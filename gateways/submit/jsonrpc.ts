import { decodeBase58, decodeBase64Strict, encodeBase58 } from './encoding';
import type { Outcome, PreflightOptions, Commitment } from './pipeline';
import { JSONRPC_ERRORS, rejection, rejectionMessage } from './rejections';

// JSON-RPC framing of the submission service: one request object (no batches), sendTransaction and getVersion.
// parseSendParams turns `params` into bytes + preflight choice or a -32602 error; answers are built here so the
// HTTP layer only writes them.

export type Id = string | number | null;

export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

export interface Answer {
  status: number;
  body: string;
}

export function errorAnswer(id: Id, err: RpcError, status = 200): Answer {
  return { status, body: JSON.stringify({ jsonrpc: '2.0', error: err, id }) };
}

export function resultAnswer(id: Id, result: unknown): Answer {
  return { status: 200, body: JSON.stringify({ jsonrpc: '2.0', result, id }) };
}

export function outcomeAnswer(id: Id, o: Outcome): Answer {
  if (o.ok) return resultAnswer(id, o.signatureText ?? encodeBase58(o.signature));
  const row = rejection(o.reason);
  const err: RpcError = { code: row.jsonrpc.code, message: rejectionMessage(o.reason, o.detail) };
  if (o.data !== undefined) err.data = o.data;
  return errorAnswer(id, err, row.jsonrpcHttp);
}

export type Envelope = { ok: true; id: Id; method: string; params: unknown } | { ok: false; id: Id; error: RpcError };

/** The id of a request (echoed back), or null when it has none usable. */
function idOf(o: Record<string, unknown>): Id {
  const id = o.id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}

export function parseEnvelope(body: Buffer): Envelope {
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    return { ok: false, id: null, error: JSONRPC_ERRORS.parse };
  }
  if (Array.isArray(v)) return { ok: false, id: null, error: JSONRPC_ERRORS.batch };
  if (typeof v !== 'object' || v === null) return { ok: false, id: null, error: JSONRPC_ERRORS.invalidRequest };
  const o = v as Record<string, unknown>;
  const id = idOf(o);
  if (o.jsonrpc !== '2.0' || typeof o.method !== 'string') {
    return { ok: false, id, error: { code: JSONRPC_ERRORS.invalidRequest.code, message: `${JSONRPC_ERRORS.invalidRequest.message}: expected jsonrpc "2.0" and a method name` } };
  }
  return { ok: true, id, method: o.method, params: o.params };
}

export type SendParams = { ok: true; bytes: Buffer; preflight: PreflightOptions | undefined } | { ok: false; error: RpcError };

const COMMITMENTS: readonly Commitment[] = ['processed', 'confirmed', 'finalized'];

function invalid(why: string): SendParams {
  return { ok: false, error: { code: JSONRPC_ERRORS.invalidParams.code, message: `${JSONRPC_ERRORS.invalidParams.message}: ${why}` } };
}

/**
 * `[ <transaction string>, <options> ]`. Options: encoding base58 (default) | base64, else -32602 unsupported
 * encoding; skipPreflight (default true); preflightCommitment and minContextSlot, used only with preflight;
 * maxRetries accepted and ignored (nothing is re-driven). Unknown option names are ignored, as the chain does.
 */
export function parseSendParams(params: unknown): SendParams {
  if (!Array.isArray(params) || params.length < 1 || params.length > 2) return invalid('expected [transaction, options?]');
  const txText = params[0];
  if (typeof txText !== 'string') return invalid('the transaction must be a string');
  const raw = params[1];
  if (raw !== undefined && raw !== null && (typeof raw !== 'object' || Array.isArray(raw))) return invalid('options must be an object');
  const opts = (raw ?? {}) as Record<string, unknown>;

  const encoding = opts.encoding ?? 'base58';
  if (encoding !== 'base58' && encoding !== 'base64') {
    const e = JSONRPC_ERRORS.unsupportedEncoding;
    return { ok: false, error: { code: e.code, message: `${e.message}: ${typeof encoding === 'string' ? encoding : JSON.stringify(encoding)}. Supported encodings: base58, base64` } };
  }
  const skip = opts.skipPreflight ?? true;
  if (typeof skip !== 'boolean') return invalid('skipPreflight must be true or false');
  const commitment = opts.preflightCommitment;
  if (commitment !== undefined && commitment !== null && !(COMMITMENTS as readonly unknown[]).includes(commitment)) {
    return invalid('preflightCommitment must be processed, confirmed or finalized');
  }
  const minSlot = opts.minContextSlot;
  if (minSlot !== undefined && minSlot !== null && !(typeof minSlot === 'number' && Number.isSafeInteger(minSlot) && minSlot >= 0)) {
    return invalid('minContextSlot must be a non-negative integer');
  }

  let bytes: Buffer | null;
  if (encoding === 'base64') {
    bytes = decodeBase64Strict(txText);
    if (bytes === null) return { ok: false, error: { ...JSONRPC_ERRORS.invalidBase64 } };
  } else {
    bytes = decodeBase58(txText);
    if (bytes === null) {
      const hint = /[+/=]|^[A-Za-z0-9+/]+={0,2}$/.test(txText) && decodeBase64Strict(txText) !== null ? ' (it looks like base64: set "encoding": "base64")' : '';
      return { ok: false, error: { code: JSONRPC_ERRORS.invalidBase58.code, message: JSONRPC_ERRORS.invalidBase58.message + hint } };
    }
  }
  let preflight: PreflightOptions | undefined;
  if (!skip) {
    preflight = {};
    if (typeof commitment === 'string') preflight.commitment = commitment as Commitment;
    if (typeof minSlot === 'number') preflight.minContextSlot = minSlot;
  }
  return { ok: true, bytes, preflight };
}
