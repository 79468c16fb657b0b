// The request side of JSON-RPC 2.0, as much as a proxy needs: which methods a body calls (to meter them) and
// whether it is a batch. The body itself is forwarded as received; nothing here re-encodes it.
//
// Only the top level is judged here: a body that does not parse, is neither an object nor an array, or is an
// empty array is refused whole. Items of a batch are not validated: a malformed item is the node's to answer
// (it replies with its own per-item error), and is metered as a call of method "" (default weight).

export interface RpcCall {
  /** The method name as sent ("" when the item has none). */
  readonly method: string;
  /** The request id as sent (undefined for notifications and malformed items). */
  readonly id: unknown;
}

export type ParsedRequest =
  | { readonly ok: true; readonly batch: boolean; readonly calls: readonly RpcCall[] }
  | { readonly ok: false; readonly why: string };

/** Longest method name kept (metering, usage events); longer names are cut, the body is still forwarded whole. */
export const MAX_METHOD_LEN = 128;

function callOf(v: unknown): RpcCall {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { method: '', id: undefined };
  const o = v as { method?: unknown; id?: unknown };
  const m = typeof o.method === 'string' ? o.method : '';
  return { method: m.length > MAX_METHOD_LEN ? m.slice(0, MAX_METHOD_LEN) : m, id: o.id };
}

export function parseRequest(body: Buffer, maxBatch: number): ParsedRequest {
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    return { ok: false, why: 'not valid JSON' };
  }
  if (Array.isArray(v)) {
    if (v.length === 0) return { ok: false, why: 'empty batch' };
    if (v.length > maxBatch) return { ok: false, why: `batch of ${v.length} requests (at most ${maxBatch})` };
    const calls = new Array<RpcCall>(v.length);
    for (let i = 0; i < v.length; i++) calls[i] = callOf(v[i]);
    return { ok: true, batch: true, calls };
  }
  if (typeof v !== 'object' || v === null) return { ok: false, why: 'expected a JSON-RPC request object or a batch array' };
  return { ok: true, batch: false, calls: [callOf(v)] };
}

/** `application/json`, any case, parameters allowed (`; charset=utf-8`). */
export function isJsonContentType(ct: string | undefined): boolean {
  if (ct === undefined) return false;
  const semi = ct.indexOf(';');
  const base = (semi < 0 ? ct : ct.slice(0, semi)).trim().toLowerCase();
  return base === 'application/json';
}

/**
 * Cheap shape check of a single reply without parsing it (replies such as getProgramAccounts run to many MB):
 * a JSON object starts with `{` and ends with `}`. Truncated or garbage replies fail it.
 */
export function looksLikeJsonObject(b: Buffer): boolean {
  let i = 0;
  let j = b.length - 1;
  while (i <= j && isWs(b[i]!)) i++;
  while (j >= i && isWs(b[j]!)) j--;
  return j > i && b[i] === 0x7b && b[j] === 0x7d;
}

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** A batch reply must be a JSON array with one element per request item (JSON-RPC 2.0 allows any order). */
export function batchReplyLength(b: Buffer): number | null {
  let v: unknown;
  try {
    v = JSON.parse(b.toString('utf8'));
  } catch {
    return null;
  }
  return Array.isArray(v) ? v.length : null;
}
