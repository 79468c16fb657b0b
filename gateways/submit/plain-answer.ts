import { isUtf8 } from 'node:buffer';
import { decodeBase64Strict, encodeBase58 } from './encoding';
import type { SubmitPipeline } from './pipeline';
import { HTTP_FRAMING, rejection, rejectionMessage } from './rejections';

// The answers of the two plain routes, /binary and /plaintext, as status + text: both HTTP front ends (node:http
// and the pipelined fast path) frame exactly these, so the two cannot drift apart.

export interface PlainAnswer {
  status: number;
  text: string;
}

const TOO_LARGE: PlainAnswer = { status: HTTP_FRAMING.bodyTooLarge.status, text: HTTP_FRAMING.bodyTooLarge.text };
const INVALID_UTF8: PlainAnswer = { status: HTTP_FRAMING.invalidUtf8.status, text: HTTP_FRAMING.invalidUtf8.text };
const INVALID_BASE64: PlainAnswer = { status: HTTP_FRAMING.invalidBase64.status, text: HTTP_FRAMING.invalidBase64.text };
const DECODED_TOO_LARGE: PlainAnswer = { status: HTTP_FRAMING.decodedTooLarge.status, text: HTTP_FRAMING.decodedTooLarge.text };

/** The answer for a body over the route's limit (the transport decides whether the connection stays). */
export function bodyTooLarge(): PlainAnswer {
  return TOO_LARGE;
}

/** POST /binary: the raw transaction. */
export function binaryAnswer(pipeline: SubmitPipeline, apiKey: string | null, body: Buffer): PlainAnswer {
  return submitted(pipeline, apiKey, body, 'binary');
}

/** POST /plaintext: base64 text, surrounding whitespace trimmed. */
export function plaintextAnswer(pipeline: SubmitPipeline, apiKey: string | null, body: Buffer): PlainAnswer {
  if (!isUtf8(body)) return INVALID_UTF8;
  const tx = decodeBase64Strict(body.toString('utf8').trim());
  if (tx === null) return INVALID_BASE64;
  // The largest any version may be here; the pipeline applies each version's own limit.
  if (tx.length > Math.max(pipeline.limits.maxTxBytes, pipeline.limits.v1MaxBytes)) return DECODED_TOO_LARGE;
  return submitted(pipeline, apiKey, tx, 'plaintext');
}

function submitted(pipeline: SubmitPipeline, apiKey: string | null, bytes: Buffer, transport: 'binary' | 'plaintext'): PlainAnswer {
  const o = pipeline.submitNow({ apiKey, bytes, transport });
  if (o.ok) return { status: 200, text: o.signatureText ?? encodeBase58(o.signature) };
  return { status: rejection(o.reason).http.status, text: rejectionMessage(o.reason, o.detail) };
}
