import type { IncomingMessage } from 'node:http';

// Reading a request body under a byte limit. Past the limit the bytes are no longer kept; up to DRAIN_MAX more
// are read and dropped so the client (which is still writing) gets to read the 413 instead of a reset, and
// beyond that the connection is cut.

const DRAIN_MAX = 64 * 1024;

export type Body = { ok: true; bytes: Buffer } | { ok: false };

export function readBody(req: IncomingMessage, limit: number): Promise<Body> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.resolve(drain(req, 0));
  return new Promise((resolve) => {
    let first: Buffer | null = null;
    let chunks: Buffer[] | null = null;
    let size = 0;
    const onData = (c: Buffer): void => {
      size += c.length;
      if (size > limit) {
        req.off('data', onData);
        req.off('end', onEnd);
        resolve(drain(req, size));
        return;
      }
      if (first === null) first = c;
      else (chunks ??= [first]).push(c);
    };
    const onEnd = (): void => resolve({ ok: true, bytes: chunks !== null ? Buffer.concat(chunks, size) : first ?? Buffer.alloc(0) });
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', () => resolve({ ok: false }));
  });
}

function drain(req: IncomingMessage, already: number): Body {
  let seen = already;
  req.on('data', (c: Buffer) => {
    seen += c.length;
    if (seen > DRAIN_MAX) req.socket.destroy();
  });
  req.resume();
  return { ok: false };
}
