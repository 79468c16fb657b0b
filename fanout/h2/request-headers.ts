import type { HeaderField } from './hpack';

// Is a request's header list well-formed HTTP/2 (RFC 9113 §8.2, §8.3)? The checks nghttp2 makes on a server's
// request headers (lib/nghttp2_http.c), so that a malformed request gets what it gets from nghttp2 (node:http2,
// grpc-js): RST_STREAM PROTOCOL_ERROR, never a response. Pure: the connection acts on the answer.
//
//   - field names are lower-case tokens (RFC 9110 §5.6.2 tchar, upper-case excluded, §8.2.1); values carry no
//     NUL, CR or LF (§8.2.1);
//   - pseudo-headers: only :method, :scheme, :path, :authority, each at most once, all before the first regular
//     field (§8.3); a response pseudo-header (:status) or an unknown one is malformed; :method, :scheme and a
//     non-empty :path are required (every method we serve is not CONNECT, §8.3.1);
//   - connection-specific fields (connection, keep-alive, proxy-connection, transfer-encoding, upgrade) are
//     malformed, and `te` may only be "trailers" (§8.2.2);
//   - content-length, when present, is one decimal number; the connection holds the DATA to it (§8.1.1).
// Trailers (a second HEADERS) carry no pseudo-header at all (§8.1).

export interface RequestHead {
  /** The declared content-length; null when absent. */
  contentLength: number | null;
}

export interface Malformed {
  readonly malformed: string;
}

const REQUEST_PSEUDO = new Set([':method', ':scheme', ':path', ':authority']);
const CONNECTION_SPECIFIC = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);
/** RFC 9110 tchar without upper-case letters: ! # $ % & ' * + - . ^ _ ` | ~ DIGIT lower-ALPHA. */
const TOKEN_LOWER = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;
/** A field value may hold any octet but NUL, CR and LF (RFC 9113 §8.2.1). */
const BAD_VALUE = /[\0\r\n]/;
/** content-length: digits only, and few enough to stay an exact number. */
const CONTENT_LENGTH = /^[0-9]{1,15}$/;

function fieldError(name: string, value: string): string | null {
  if (name.length === 0) return 'empty field name';
  if (!TOKEN_LOWER.test(name)) return `field name ${JSON.stringify(name)} is not a lower-case token`;
  if (BAD_VALUE.test(value)) return `field ${name} has NUL, CR or LF in its value`;
  return null;
}

export function checkRequestHeaders(fields: readonly HeaderField[]): RequestHead | Malformed {
  let method: string | undefined;
  let scheme: string | undefined;
  let path: string | undefined;
  let authority: string | undefined;
  let regular = false;
  let contentLength: number | null = null;
  for (const [name, value] of fields) {
    if (name.startsWith(':')) {
      if (regular) return { malformed: `pseudo-header ${name} after a regular field` };
      if (!REQUEST_PSEUDO.has(name)) return { malformed: `pseudo-header ${name} is not a request pseudo-header` };
      if (BAD_VALUE.test(value)) return { malformed: `${name} has NUL, CR or LF in its value` };
      switch (name) {
        case ':method':
          if (method !== undefined) return { malformed: 'duplicate :method' };
          method = value;
          break;
        case ':scheme':
          if (scheme !== undefined) return { malformed: 'duplicate :scheme' };
          scheme = value;
          break;
        case ':path':
          if (path !== undefined) return { malformed: 'duplicate :path' };
          path = value;
          break;
        default:
          if (authority !== undefined) return { malformed: 'duplicate :authority' };
          authority = value;
      }
      continue;
    }
    regular = true;
    const e = fieldError(name, value);
    if (e !== null) return { malformed: e };
    if (CONNECTION_SPECIFIC.has(name)) return { malformed: `connection-specific field ${name}` };
    if (name === 'te' && value.toLowerCase() !== 'trailers') return { malformed: 'te other than "trailers"' };
    if (name === 'content-length') {
      if (contentLength !== null) return { malformed: 'more than one content-length' };
      if (!CONTENT_LENGTH.test(value)) return { malformed: 'content-length is not a number' };
      contentLength = Number(value);
    }
  }
  if (method === undefined) return { malformed: 'no :method' };
  if (scheme === undefined) return { malformed: 'no :scheme' };
  if (path === undefined || path === '') return { malformed: path === undefined ? 'no :path' : 'empty :path' };
  return { contentLength };
}

/** Trailers: regular fields only. */
export function checkTrailers(fields: readonly HeaderField[]): Malformed | null {
  for (const [name, value] of fields) {
    if (name.startsWith(':')) return { malformed: `pseudo-header ${name} in trailers` };
    const e = fieldError(name, value);
    if (e !== null) return { malformed: e };
    if (CONNECTION_SPECIFIC.has(name)) return { malformed: `connection-specific field ${name}` };
  }
  return null;
}
