import { isUtf8 } from 'node:buffer';
import { decodeBase64Strict, encodeBase58 } from './encoding';
import { framingAnswer, textAnswer, type HttpAnswer } from './http-answer';
import type { SubmitPipeline } from './pipeline';
import { HTTP_FRAMING, rejection, rejectionMessage } from './rejections';

// The answers of the two plain routes, /binary and /plaintext, as text: both HTTP front ends (node:http and the
// pipelined fast path) frame exactly these, so the two cannot drift apart.

/** The answer for a body over the route's limit (the transport decides whether the connection stays). */
export const TOO_LARGE = framingAnswer(HTTP_FRAMING.bodyTooLarge);
const INVALID_UTF8 = framingAnswer(HTTP_FRAMING.invalidUtf8);
const INVALID_BASE64 = framingAnswer(HTTP_FRAMING.invalidBase64);
const DECODED_TOO_LARGE = framingAnswer(HTTP_FRAMING.decodedTooLarge);

/** POST /binary: the raw transaction. */
export function binaryAnswer(pipeline: SubmitPipeline, apiKey: string | null, body: Buffer): HttpAnswer {
  return submitted(pipeline, apiKey, body, 'binary');
}

/** POST /plaintext: base64 text, surrounding whitespace trimmed. */
export function plaintextAnswer(pipeline: SubmitPipeline, apiKey: string | null, body: Buffer): HttpAnswer {
  if (!isUtf8(body)) return INVALID_UTF8;
  const tx = decodeBase64Strict(body.toString('utf8').trim());
  if (tx === null) return INVALID_BASE64;
  // The largest any version may be here; the pipeline applies each version's own limit.
  if (tx.length > Math.max(pipeline.limits.maxTxBytes, pipeline.limits.v1MaxBytes)) return DECODED_TOO_LARGE;
  return submitted(pipeline, apiKey, tx, 'plaintext');
}

function submitted(pipeline: SubmitPipeline, apiKey: string | null, bytes: Buffer, transport: 'binary' | 'plaintext'): HttpAnswer {
  const o = pipeline.submitNow({ apiKey, bytes, transport });
  if (o.ok) return textAnswer(200, o.signatureText ?? encodeBase58(o.signature));
  return textAnswer(rejection(o.reason).http.status, rejectionMessage(o.reason, o.detail));
}
