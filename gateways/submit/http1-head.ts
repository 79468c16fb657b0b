import { POST_ROUTES, type BodyRoute } from './http-routes';

// The head of one HTTP/1.1 request, parsed only as far as the submission fast path needs, and only for the
// plainest requests: a POST to one of the route table's POST paths (http-routes.ts: `/`, `/binary`,
// `/plaintext`) over HTTP/1.1 with one Host, exactly one Content-Length within the route's limit, no
// Transfer-Encoding, Expect or Upgrade, and at most `Connection: keep-alive`. Anything
// else — another route, another method, chunked bodies, an oversized body, anything unusual in the bytes — is
// `other`: the connection goes to node:http from that request on, which answers it exactly as before (413,
// 400, 404, …). Being strict costs nothing but speed; being lenient could accept what node:http refuses.
// Pure: bytes in, a result out; no I/O.

export type FastRoute = BodyRoute;

export type Head =
  | { kind: 'partial' }
  | { kind: 'other' }
  | {
      kind: 'request';
      route: FastRoute;
      /** The request target (path and query), latin1. */
      target: string;
      /** Offset of the first body byte in the buffer. */
      bodyStart: number;
      contentLength: number;
    };

/** Head bytes at most before the request is handed to node:http (which allows 16 KiB and answers 431 beyond). */
export const MAX_FAST_HEAD = 8 * 1024;

/** Body bytes at most per route (the contract's limits; a larger declared body goes to node:http's 413). */
export type BodyLimits = Readonly<Record<FastRoute, number>>;

const PARTIAL: Head = { kind: 'partial' };
const OTHER: Head = { kind: 'other' };

const CR = 0x0d;
const LF = 0x0a;
const SP = 0x20;
const HTAB = 0x09;
const COLON = 0x3a;

const POST_ROOT = Buffer.from('POST /', 'latin1');
/** The table's POST paths as bytes (each starts with '/'). */
const FAST_PATHS: ReadonlyArray<{ path: Buffer; route: FastRoute }> = Object.values(POST_ROUTES).map((r) => ({ path: Buffer.from(r.path, 'latin1'), route: r.transport }));
const HTTP11_CRLF = Buffer.from(' HTTP/1.1\r\n', 'latin1');
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');

const CONTENT_LENGTH = Buffer.from('content-length', 'latin1');
const TRANSFER_ENCODING = Buffer.from('transfer-encoding', 'latin1');
const CONNECTION = Buffer.from('connection', 'latin1');
const EXPECT = Buffer.from('expect', 'latin1');
const UPGRADE = Buffer.from('upgrade', 'latin1');
const HOST = Buffer.from('host', 'latin1');
const KEEP_ALIVE = Buffer.from('keep-alive', 'latin1');

/** RFC 9110 tchar, as a lookup table. */
const TCHAR = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~") TCHAR[c.charCodeAt(0)] = 1;
for (let c = 0x30; c <= 0x39; c++) TCHAR[c] = 1;
for (let c = 0x41; c <= 0x5a; c++) TCHAR[c] = 1;
for (let c = 0x61; c <= 0x7a; c++) TCHAR[c] = 1;

function startsWith(buf: Buffer, at: number, s: Buffer): boolean {
  if (at + s.length > buf.length) return false;
  for (let i = 0; i < s.length; i++) if (buf[at + i] !== s[i]) return false;
  return true;
}

/** ASCII case-insensitive equality of buf[from, to) with a lower-case name. */
function equalsLower(buf: Buffer, from: number, to: number, lower: Buffer): boolean {
  if (to - from !== lower.length) return false;
  for (let i = 0; i < lower.length; i++) {
    const c = buf[from + i]!;
    if ((c >= 0x41 && c <= 0x5a ? c | 0x20 : c) !== lower[i]) return false;
  }
  return true;
}

/** The POST route whose path is buf[from, to), or null. */
function fastRoute(buf: Buffer, from: number, to: number): FastRoute | null {
  for (const f of FAST_PATHS) if (to - from === f.path.length && startsWith(buf, from, f.path)) return f.route;
  return null;
}

/** Parses the request head that starts at `off`. */
export function parseHead(buf: Buffer, off: number, maxBody: BodyLimits): Head {
  const headEnd = buf.indexOf(HEAD_END, off);
  if (headEnd < 0) return buf.length - off > MAX_FAST_HEAD ? OTHER : fastPrefixPossible(buf, off) ? PARTIAL : OTHER;
  if (headEnd + 4 - off > MAX_FAST_HEAD) return OTHER;

  if (!startsWith(buf, off, POST_ROOT)) return OTHER;
  const targetStart = off + 5;
  let p = targetStart;
  let pathEnd = -1;
  while (p < headEnd && buf[p] !== SP) {
    const c = buf[p]!;
    if (c <= SP || c >= 0x7f) return OTHER;
    if (c === 0x3f /* ? */ && pathEnd < 0) pathEnd = p;
    p++;
  }
  const route = fastRoute(buf, targetStart, pathEnd < 0 ? p : pathEnd);
  if (route === null) return OTHER;
  const target = buf.toString('latin1', targetStart, p);
  if (!startsWith(buf, p, HTTP11_CRLF)) return OTHER;
  p += HTTP11_CRLF.length;

  let contentLength = -1;
  let host = false; // node:http answers 400 to an HTTP/1.1 request without one
  // Header lines up to headEnd + 2 (the CRLF that ends the last line).
  while (p < headEnd + 2) {
    const nameStart = p;
    while (p < headEnd && buf[p] !== COLON) {
      const c = buf[p]!;
      if (c >= 128 || TCHAR[c] !== 1) return OTHER; // also refuses obs-fold and bare LF
      p++;
    }
    const nameEnd = p;
    if (nameEnd === nameStart || buf[p] !== COLON) return OTHER;
    p++;
    while (buf[p] === SP || buf[p] === HTAB) p++;
    const valueStart = p;
    while (buf[p] !== CR) {
      const c = buf[p]!;
      if ((c < SP && c !== HTAB) || c === 0x7f) return OTHER;
      p++;
    }
    if (buf[p + 1] !== LF) return OTHER;
    let valueEnd = p;
    while (valueEnd > valueStart && (buf[valueEnd - 1] === SP || buf[valueEnd - 1] === HTAB)) valueEnd--;
    p += 2;

    if (equalsLower(buf, nameStart, nameEnd, CONTENT_LENGTH)) {
      if (contentLength >= 0 || valueEnd === valueStart || valueEnd - valueStart > 7) return OTHER;
      let n = 0;
      for (let i = valueStart; i < valueEnd; i++) {
        const d = buf[i]! - 0x30;
        if (d < 0 || d > 9) return OTHER;
        n = n * 10 + d;
      }
      contentLength = n;
    } else if (equalsLower(buf, nameStart, nameEnd, HOST)) {
      if (host) return OTHER;
      host = true;
    } else if (equalsLower(buf, nameStart, nameEnd, CONNECTION)) {
      if (!equalsLower(buf, valueStart, valueEnd, KEEP_ALIVE)) return OTHER;
    } else if (
      equalsLower(buf, nameStart, nameEnd, TRANSFER_ENCODING) ||
      equalsLower(buf, nameStart, nameEnd, EXPECT) ||
      equalsLower(buf, nameStart, nameEnd, UPGRADE)
    ) {
      return OTHER;
    }
  }
  if (!host || contentLength < 0 || contentLength > maxBody[route]) return OTHER;
  return { kind: 'request', route, target, bodyStart: headEnd + 4, contentLength };
}

/**
 * Whether the bytes so far could still become a fast request. Lets a connection whose first bytes already
 * say "something else" go to node:http at once instead of waiting for a whole head.
 */
function fastPrefixPossible(buf: Buffer, off: number): boolean {
  // Every POST path starts with '/'; a wrong path after it is refused once the head is whole.
  const m = Math.min(buf.length - off, POST_ROOT.length);
  for (let i = 0; i < m; i++) if (buf[off + i] !== POST_ROOT[i]) return false;
  return true;
}
