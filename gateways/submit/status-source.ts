import { Pool } from 'undici';
import type { Commitment } from '../../bus/topics/submit-traces';

// What the trace poller asks the chain node, behind a seam: `getSignatureStatuses` (≤ 256 signatures a call,
// the node's own limit, MAX_GET_SIGNATURE_STATUSES_QUERY_ITEMS in Agave's rpc.rs) and `isBlockhashValid`
// (Agave ≥ 1.9; the local chain node serves both). Answers are values; a failed call is an error value.

/** Agave's MAX_GET_SIGNATURE_STATUSES_QUERY_ITEMS. */
export const MAX_STATUSES_PER_CALL = 256;

export interface SignatureStatus {
  slot: number;
  err: unknown;
  commitment: Commitment;
}

export type StatusesAnswer = { ok: true; slot: number; statuses: Array<SignatureStatus | null> } | { ok: false; error: string };
export type BlockhashAnswer = { ok: true; valid: boolean } | { ok: false; error: string };

export interface StatusSource {
  statuses(signatures: string[]): Promise<StatusesAnswer>;
  blockhashValid(blockhash: string, commitment: Commitment): Promise<BlockhashAnswer>;
  close(): Promise<void>;
}

const COMMITMENTS: ReadonlySet<string> = new Set(['processed', 'confirmed', 'finalized']);

export class RpcStatusSource implements StatusSource {
  private readonly pool: Pool;
  private readonly path: string;

  /** `url` is never logged: it may hold a credential. */
  constructor(url: string, private readonly timeoutMs: number) {
    const u = new URL(url);
    this.path = `${u.pathname}${u.search}`;
    this.pool = new Pool(u.origin, { connections: 2, keepAliveTimeout: 30_000, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  }

  async statuses(signatures: string[]): Promise<StatusesAnswer> {
    if (signatures.length > MAX_STATUSES_PER_CALL) return { ok: false, error: `more than ${MAX_STATUSES_PER_CALL} signatures` };
    const r = await this.call('getSignatureStatuses', [signatures]);
    if (!r.ok) return r;
    const res = r.result as { context?: { slot?: unknown }; value?: unknown };
    if (typeof res !== 'object' || res === null || !Array.isArray(res.value) || res.value.length !== signatures.length) return { ok: false, error: 'unexpected result' };
    const slot = typeof res.context?.slot === 'number' ? res.context.slot : 0;
    const statuses = res.value.map((v: unknown): SignatureStatus | null => {
      if (typeof v !== 'object' || v === null) return null;
      const o = v as { slot?: unknown; err?: unknown; confirmations?: unknown; confirmationStatus?: unknown };
      if (typeof o.slot !== 'number') return null;
      // Nodes before confirmationStatus existed: confirmations null means rooted (finalized).
      const commitment = typeof o.confirmationStatus === 'string' && COMMITMENTS.has(o.confirmationStatus) ? (o.confirmationStatus as Commitment) : o.confirmations === null ? 'finalized' : 'processed';
      return { slot: o.slot, err: o.err ?? null, commitment };
    });
    return { ok: true, slot, statuses };
  }

  async blockhashValid(blockhash: string, commitment: Commitment): Promise<BlockhashAnswer> {
    const r = await this.call('isBlockhashValid', [blockhash, { commitment }]);
    if (!r.ok) return r;
    const v = (r.result as { value?: unknown } | null)?.value;
    return typeof v === 'boolean' ? { ok: true, valid: v } : { ok: false, error: 'unexpected result' };
  }

  private async call(method: string, params: unknown[]): Promise<{ ok: true; result: unknown } | { ok: false; error: string }> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), this.timeoutMs);
    try {
      const res = await this.pool.request({ path: this.path, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }), signal: abort.signal });
      const text = await res.body.text();
      if (res.statusCode !== 200) return { ok: false, error: `http ${res.statusCode}` };
      const j = JSON.parse(text) as { result?: unknown; error?: unknown };
      if (j.error !== undefined || !('result' in j)) return { ok: false, error: 'rpc error' };
      return { ok: true, result: j.result };
    } catch (e) {
      return { ok: false, error: abort.signal.aborted ? 'timeout' : (e as Error).name };
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await this.pool.close().catch(() => undefined);
  }
}
