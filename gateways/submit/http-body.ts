import type { IncomingMessage } from 'node:http';

// Reading a request body under a byte limit. Past the limit the bytes are no longer kept; up to DRAIN_MAX more
// are read and dropped so the client (which is still writing) gets to read the 413 instead of a reset, and
// beyond that the connection is cut.

const DRAIN_MAX = 64 * 1024;

/**
 * Calls `done` once: with the body, or with null when it is over `limit` (or the request failed). A callback,
 * not a promise: this is on every request's path.
 */
export function readBody(req: IncomingMessage, limit: number, done: (body: Buffer | null) => void): void {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) {
    drain(req, 0);
    return done(null);
  }
  let first: Buffer | null = null;
  let chunks: Buffer[] | null = null;
  let size = 0;
  let settled = false;
  const onData = (c: Buffer): void => {
    size += c.length;
    if (size > limit) {
      req.off('data', onData);
      req.off('end', onEnd);
      drain(req, size);
      settled = true;
      return done(null);
    }
    if (first === null) first = c;
    else (chunks ??= [first]).push(c);
  };
  const onEnd = (): void => {
    if (settled) return;
    settled = true;
    done(chunks !== null ? Buffer.concat(chunks, size) : first ?? Buffer.alloc(0));
  };
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', () => {
    if (settled) return;
    settled = true;
    done(null);
  });
}

function drain(req: IncomingMessage, already: number): void {
  let seen = already;
  req.on('data', (c: Buffer) => {
    seen += c.length;
    if (seen > DRAIN_MAX) req.socket.destroy();
  });
  req.resume();
}
