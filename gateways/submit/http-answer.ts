// One HTTP answer of the submission port, as both front ends (node:http and the pipelined fast path) frame it.

export const TEXT = 'text/plain; charset=utf-8';
export const JSON_TYPE = 'application/json';

export interface HttpAnswer {
  status: number;
  /** Content-Type value. */
  type: string;
  body: string;
  /** Sent with `cache-control: no-store` (answers from live state a cache must not keep). */
  noStore?: boolean;
}

export function textAnswer(status: number, body: string): HttpAnswer {
  return { status, type: TEXT, body };
}

/** An answer from the framing table (rejections.ts HTTP_FRAMING): status and text. */
export function framingAnswer(f: { status: number; text: string }): HttpAnswer {
  return textAnswer(f.status, f.text);
}
