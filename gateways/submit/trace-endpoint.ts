import { normalizeApiKey } from './api-key';
import { decodeBase58 } from './base58';
import type { KeySummaries, KeySummary } from './key-summary';
import { HTTP_FRAMING } from './rejections';
import { SignatureCache } from './signature-cache';
import type { TraceView } from './trace';
import type { TraceStore } from './trace-store';

// GET /trace/<signature>?api-key=KEY — the trace of a transaction this key submitted, with the key's summary;
// GET /trace?api-key=KEY — the summary alone. Not a hot path (node:http serves it; the fast path hands over at
// the first GET). Anything a key may not see — another key's transaction, one never traced or already gone, a
// malformed signature, an unknown or missing key — is the same 404 `not found`, so the answer never tells
// whether a transaction exists.

export interface TraceAnswer {
  status: number;
  /** JSON for 200; the framing table's text otherwise (the caller picks the content type). */
  body: string;
}

export interface TraceReaders {
  store: TraceStore;
  summaries: KeySummaries;
}

const NOT_FOUND: TraceAnswer = { status: HTTP_FRAMING.notFound.status, body: HTTP_FRAMING.notFound.text };
/** Longest base58 text of 64 bytes. */
const MAX_SIG_TEXT = 88;

/** `rest` = the path after `/trace` ('' or '/<signature>'). */
export function traceAnswer(readers: TraceReaders, rest: string, apiKeyText: string | null): TraceAnswer {
  const apiKey = normalizeApiKey(apiKeyText);
  if (apiKey === null) return NOT_FOUND;
  if (rest === '' || rest === '/') {
    const summary: KeySummary = readers.summaries.summary(apiKey);
    return { status: 200, body: JSON.stringify({ summary }) };
  }
  const text = rest.slice(1);
  if (text.length === 0 || text.length > MAX_SIG_TEXT || text.includes('/')) return NOT_FOUND;
  const raw = decodeBase58(text);
  if (raw === null || raw.length !== 64) return NOT_FOUND;
  const trace = readers.store.get(SignatureCache.key(raw));
  if (trace === undefined || !trace.keys.includes(apiKey)) return NOT_FOUND;
  const view: TraceView = trace.view();
  return { status: 200, body: JSON.stringify({ trace: view, summary: readers.summaries.summary(apiKey) }) };
}
