import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { HttpAnswer } from './http-answer';
import { parseHead, type BodyLimits, type FastRoute } from './http1-head';

// The pipelined fast path for /binary, /plaintext and JSON-RPC on /. node:http answers each request with its own
// write syscall (ServerResponse.end() uncorks the socket) and builds a request and a response object, header
// maps and streams per request: measured, that was a third of the CPU of an accepted /binary transaction beside
// a 66 µs signature check. Here every complete request in a read is answered synchronously and all the answers
// of that read leave in one write.
//
// The first request that is not the plainest POST to these routes (see http1-head.ts), or that cannot be
// answered without waiting (answer() gives null: a JSON-RPC preflight), or the first bytes of a connection that
// cannot become one, hands the connection to node:http with the bytes not yet consumed — that request's
// included: it answers that request and every later one exactly as before. Answers already written precede
// its own.
//
// Bounds per connection: an incomplete request is at most a head (8 KiB) plus a body within its route's limit
// (http-routes.ts; 3,072 bytes at most at the contract's limits) and must complete within requestTimeoutMs of
// its first byte; once answers wait for a client that does not read (the
// socket's own high-water mark, 16 KiB, is passed) nothing more is read from it until they drain; an idle
// connection closes after keepAliveTimeoutMs. So the sum over clients is bounded by the connection caps.

export interface FastPathOptions {
  keepAliveTimeoutMs: number;
  requestTimeoutMs: number;
  maxBody: BodyLimits;
  /** The answer, or null when the request must wait (it then goes to node:http, unanswered here). */
  answer(route: FastRoute, apiKey: string | null, body: Buffer): HttpAnswer | null;
  /** The `api-key` query parameter of a request target. */
  apiKey(target: string): string | null;
  /** Gives the socket to node:http. Unread bytes are already back in the socket's read buffer. */
  handoff(socket: Socket): void;
}

let dateAt = 0;
let dateText = '';

/** The Date header value, formatted at most once a second. */
function httpDate(): string {
  const now = Date.now();
  if (now - dateAt >= 1000) {
    dateAt = now - (now % 1000);
    dateText = new Date(dateAt).toUTCString();
  }
  return dateText;
}

export function serveFast(socket: Socket, opts: FastPathOptions): void {
  const keepAlive = `connection: keep-alive\r\nkeep-alive: timeout=${Math.floor(opts.keepAliveTimeoutMs / 1000)}\r\n`;
  let pending: Buffer | null = null;
  let pendingSince = 0;

  const onTimeout = (): void => {
    socket.destroy();
  };
  const onError = (): void => {
    socket.destroy();
  };
  const onEnd = (): void => {
    socket.end();
  };
  const onDrain = (): void => {
    socket.resume();
  };

  const frame = (a: HttpAnswer, date: string): string =>
    `HTTP/1.1 ${a.status} ${STATUS_CODES[a.status] ?? ''}\r\ncontent-type: ${a.type}\r\ncontent-length: ${Buffer.byteLength(a.body)}\r\n${a.noStore === true ? 'cache-control: no-store\r\n' : ''}date: ${date}\r\n${keepAlive}\r\n${a.body}`;

  const handoff = (rest: Buffer): void => {
    socket.off('data', onData);
    socket.off('timeout', onTimeout);
    socket.off('error', onError);
    socket.off('end', onEnd);
    socket.off('drain', onDrain);
    socket.setTimeout(0);
    socket.pause();
    if (rest.length > 0) socket.unshift(rest);
    opts.handoff(socket);
    socket.resume();
  };

  function onData(chunk: Buffer): void {
    let buf = chunk;
    if (pending !== null) {
      buf = Buffer.concat([pending, chunk]);
      pending = null;
    }
    let off = 0;
    let out = '';
    let date = '';
    while (off < buf.length) {
      const h = parseHead(buf, off, opts.maxBody);
      if (h.kind === 'partial') break;
      const end = h.kind === 'request' ? h.bodyStart + h.contentLength : 0;
      if (end > buf.length) break;
      const a = h.kind === 'request' ? opts.answer(h.route, opts.apiKey(h.target), buf.subarray(h.bodyStart, end)) : null;
      if (a === null) {
        // Not ours (or it must wait): what is answered goes first, then node:http from this request on.
        if (out.length > 0) socket.write(out);
        handoff(buf.subarray(off));
        return;
      }
      if (date === '') date = httpDate();
      out += frame(a, date);
      off = end;
    }
    if (off < buf.length) {
      if (pendingSince === 0 || off > 0) pendingSince = Date.now();
      else if (Date.now() - pendingSince > opts.requestTimeoutMs) return void socket.destroy();
      // A copy: a view would pin the whole read chunk for as long as the request stays incomplete.
      pending = Buffer.from(buf.subarray(off));
    } else pendingSince = 0;
    if (out.length > 0 && !socket.write(out)) {
      socket.pause();
      socket.once('drain', onDrain);
    }
  }

  socket.setTimeout(opts.keepAliveTimeoutMs);
  socket.on('timeout', onTimeout);
  socket.on('error', onError);
  socket.on('end', onEnd);
  socket.on('data', onData);
}
