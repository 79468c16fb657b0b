import type { Http2Stream, IncomingHttpHeaders } from 'node:http2';

// The client's `grpc-accept-encoding` on the grpc-js transport. grpc-js removes it from call.metadata before any
// handler or interceptor sees it (server-interceptors.js, BaseServerInterceptingCall's constructor) and Node keeps
// no request headers on the Http2Stream, so it is read where the headers arrive: a 'stream' listener on each of
// grpc-js's http2 servers (grpc.Server's private `http2Servers` map, filled by bindAsync), prepended so it runs
// before grpc-js's own handler creates the call. The value is kept per stream in a WeakMap (gone with the stream).
// When a grpc-js upgrade moves the map, watchAcceptEncoding returns false and every stream reads as if the header
// were absent: identity, the answer grpc-js clients get anyway.

const acceptEncodings = new WeakMap<Http2Stream, string>();

function isEmitter(o: unknown): o is { prependListener(event: 'stream', l: (s: Http2Stream, h: IncomingHttpHeaders) => void): unknown } {
  return typeof o === 'object' && o !== null && typeof (o as { prependListener?: unknown }).prependListener === 'function';
}

/** Call after bindAsync resolved. False when grpc-js's http2 servers could not be reached. */
export function watchAcceptEncoding(server: object): boolean {
  const servers: unknown = (server as { http2Servers?: unknown }).http2Servers;
  if (!(servers instanceof Map) || servers.size === 0) return false;
  let hooked = false;
  for (const s of servers.keys() as IterableIterator<unknown>) {
    if (!isEmitter(s)) continue;
    s.prependListener('stream', (stream, headers) => {
      const v = headers['grpc-accept-encoding'];
      // Repeated header fields arrive joined (', ') or as an array: either way one comma-separated list.
      const joined = Array.isArray(v) ? v.join(',') : v;
      if (joined !== undefined) acceptEncodings.set(stream, joined);
    });
    hooked = true;
  }
  return hooked;
}

/** The `grpc-accept-encoding` the client sent on this stream, or undefined (absent, or not watched). */
export function acceptEncodingOf(stream: Http2Stream): string | undefined {
  return acceptEncodings.get(stream);
}
