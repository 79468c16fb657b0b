import { framingAnswer, JSON_TYPE, TEXT, textAnswer, type HttpAnswer } from './http-answer';
import { errorAnswer, outcomeAnswer, type Answer } from './jsonrpc';
import { jsonRpcStep, type VersionInfo } from './jsonrpc-step';
import type { SubmitLimits } from './limits';
import type { SubmitPipeline } from './pipeline';
import { binaryAnswer, plaintextAnswer, TOO_LARGE } from './plain-answer';
import { HTTP_FRAMING, JSONRPC_ERRORS } from './rejections';
import { traceAnswer, type TraceReaders } from './trace-endpoint';

// The routes of the submission HTTP port, one row each: path, method, the transport the pipeline counts the
// submission under, the body limit, and the answer. Both front ends read this table and nothing else decides
// a route: node:http (http.ts) serves every row, the pipelined fast path (http1-head.ts, http1-fast.ts) the
// POST rows. The key is the `api-key` query parameter on every route.
//
//   POST /            JSON-RPC: sendTransaction, getVersion             body ≤ 3,072
//   POST /binary      raw transaction bytes → 200 text/plain signature  body ≤ 1,232   (no preflight)
//   POST /plaintext   base64 text, trimmed  → 200 text/plain signature  body ≤ 2,048   (no preflight)
//   (the contract's body limits; gateways.submit.v1MaxBytes above 1,232 raises them for v1: limits.ts)
//   GET  /health      200 "ok" for load balancers (no key)
//   GET  /trace/<sig>  the trace of a transaction the key submitted, and the key's summary (trace-endpoint.ts;
//   GET  /trace        the summary alone); only with traces on. Never on the fast path (it has no body).
// A GET row answers HEAD too. Another method on a known path is 405, an unknown path 404.

/** The routes that carry a transaction in their body: the fast path's, and the pipeline's transport names. */
export type BodyRoute = 'jsonrpc' | 'binary' | 'plaintext';

/** An answer that must wait (a JSON-RPC preflight): the fast path hands such a request to node:http unstarted. */
export interface LaterAnswer {
  later(): Promise<HttpAnswer>;
}

/** What the answers read: the pipeline, getVersion's answer, and the traces when they are on. */
export interface RouteContext {
  pipeline: SubmitPipeline;
  version: VersionInfo;
  traces: TraceReaders | undefined;
}

export interface PostRoute {
  method: 'POST';
  path: string;
  transport: BodyRoute;
  bodyMax(limits: SubmitLimits): number;
  /** The answer to a body over the limit (the connection is then not kept: the rest was not read). */
  tooLarge: HttpAnswer;
  answer(c: RouteContext, apiKey: string | null, body: Buffer): HttpAnswer | LaterAnswer;
}

export interface GetRoute {
  method: 'GET';
  path: string;
  /** Also every path below it (`/trace/<sig>`). */
  under: boolean;
  transport: null;
  /** Whether the route exists in this service (else its path is 404 like any unknown one). */
  served(c: RouteContext): boolean;
  /** `rest` = the path after the route's own ('' or '/…'). */
  answer(c: RouteContext, rest: string, apiKey: string | null): HttpAnswer;
}

export type HttpRoute = PostRoute | GetRoute;

const json = (a: Answer): HttpAnswer => ({ status: a.status, type: JSON_TYPE, body: a.body });

const OK = textAnswer(200, 'ok');
const JSONRPC_TOO_LARGE = json(errorAnswer(null, JSONRPC_ERRORS.bodyTooLarge));
export const NOT_FOUND = framingAnswer(HTTP_FRAMING.notFound);
export const METHOD_NOT_ALLOWED = framingAnswer(HTTP_FRAMING.methodNotAllowed);

function jsonRpc(c: RouteContext, apiKey: string | null, body: Buffer): HttpAnswer | LaterAnswer {
  const step = jsonRpcStep(c.pipeline, c.version, apiKey, body);
  if (step.kind === 'answer') return json(step.answer);
  return {
    later: () => c.pipeline.submit({ apiKey: step.apiKey, bytes: step.bytes, transport: 'jsonrpc', preflight: step.preflight }).then((o) => json(outcomeAnswer(step.id, o))),
  };
}

function trace(c: RouteContext, rest: string, apiKey: string | null): HttpAnswer {
  if (c.traces === undefined) return NOT_FOUND;
  const a = traceAnswer(c.traces, rest, apiKey);
  return { status: a.status, type: a.status === 200 ? JSON_TYPE : TEXT, body: a.body, noStore: true };
}

/** The POST rows, by transport (the fast path's parser names a request by it). */
export const POST_ROUTES: { readonly [T in BodyRoute]: PostRoute & { transport: T } } = {
  jsonrpc: { method: 'POST', path: '/', transport: 'jsonrpc', bodyMax: (l) => l.body.jsonrpc, tooLarge: JSONRPC_TOO_LARGE, answer: jsonRpc },
  binary: { method: 'POST', path: '/binary', transport: 'binary', bodyMax: (l) => l.body.binary, tooLarge: TOO_LARGE, answer: (c, k, b) => binaryAnswer(c.pipeline, k, b) },
  plaintext: { method: 'POST', path: '/plaintext', transport: 'plaintext', bodyMax: (l) => l.body.plaintext, tooLarge: TOO_LARGE, answer: (c, k, b) => plaintextAnswer(c.pipeline, k, b) },
};

const HTTP_ROUTES: readonly HttpRoute[] = [
  POST_ROUTES.jsonrpc,
  POST_ROUTES.binary,
  POST_ROUTES.plaintext,
  { method: 'GET', path: '/health', under: false, transport: null, served: () => true, answer: () => OK },
  { method: 'GET', path: '/trace', under: true, transport: null, served: (c) => c.traces !== undefined, answer: trace },
];

/** The row serving `path` in this service, or undefined (404). */
export function findRoute(c: RouteContext, path: string): HttpRoute | undefined {
  for (const r of HTTP_ROUTES) {
    if (r.method === 'POST') {
      if (path === r.path) return r;
    } else if ((path === r.path || (r.under && path.startsWith(r.path) && path[r.path.length] === '/')) && r.served(c)) return r;
  }
  return undefined;
}

/** Each POST row's body limit under these limits (the fast path's parser leaves a larger body to node:http's 413). */
export function bodyLimits(limits: SubmitLimits): Record<BodyRoute, number> {
  return { jsonrpc: POST_ROUTES.jsonrpc.bodyMax(limits), binary: POST_ROUTES.binary.bodyMax(limits), plaintext: POST_ROUTES.plaintext.bodyMax(limits) };
}
