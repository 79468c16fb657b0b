import { errorAnswer, outcomeAnswer, parseEnvelope, parseSendParams, resultAnswer, type Answer, type Id } from './jsonrpc';
import type { PreflightOptions, SubmitPipeline } from './pipeline';
import { JSONRPC_ERRORS, rejection } from './rejections';

// One JSON-RPC request on the region root, decided as far as it can be without waiting: the answer, or — only
// for sendTransaction with skipPreflight false — what to simulate. Both HTTP front ends call it: node:http runs
// the preflight itself; the fast path hands such a request to node:http (nothing has happened yet: parsing and
// the key lookup have no effects).

export type JsonRpcStep =
  | { kind: 'answer'; answer: Answer }
  | { kind: 'preflight'; id: Id; apiKey: string | null; bytes: Buffer; preflight: PreflightOptions };

export interface VersionInfo {
  'solana-core': string;
  'feature-set': null;
}

export function jsonRpcStep(pipeline: SubmitPipeline, version: VersionInfo, apiKey: string | null, body: Buffer): JsonRpcStep {
  const env = parseEnvelope(body);
  const id = env.id;
  if (pipeline.authorize(apiKey) === undefined) {
    const u = rejection('unauthorized');
    return answer(errorAnswer(id, u.jsonrpc, u.jsonrpcHttp));
  }
  if (!env.ok) return answer(errorAnswer(id, env.error));
  if (env.method === 'sendTransaction') {
    const p = parseSendParams(env.params);
    if (!p.ok) return answer(errorAnswer(id, p.error));
    if (p.preflight === undefined) return answer(outcomeAnswer(id, pipeline.submitNow({ apiKey, bytes: p.bytes, transport: 'jsonrpc' })));
    return { kind: 'preflight', id, apiKey, bytes: p.bytes, preflight: p.preflight };
  }
  if (env.method === 'getVersion') return answer(resultAnswer(id, version));
  return answer(errorAnswer(id, JSONRPC_ERRORS.methodNotFound));
}

function answer(a: Answer): JsonRpcStep {
  return { kind: 'answer', answer: a };
}
