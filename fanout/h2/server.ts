import net from 'node:net';
import { H2Connection, type ConnectionHandler, type ConnectionLimits, type Flood } from './connection';
import { H2Error } from './frame';
import { GrpcCall, GrpcCode, RequestBudget } from './grpc-call';
import type { HeaderField } from './hpack';
import type { H2Stream } from './stream';

// A plaintext (h2c, prior knowledge) gRPC server for bidi-streaming methods on the fanout's own HTTP/2 code:
// accepts connections, checks each well-formed request (connection.ts has refused malformed ones) as grpc-js
// does (POST, content-type application/grpc*, a known path), hands calls to the application, pings idle connections and drops dead ones, and shuts down with
// GOAWAY. Only the methods given exist; any other path gets UNIMPLEMENTED, as from grpc-js.

export interface GrpcServerOptions {
  host: string;
  port: number;
  /** Request paths served, e.g. /arpc.StreamService/Subscribe. */
  paths: ReadonlySet<string>;
  limits: ConnectionLimits;
  maxMessageBytes: number;
  /** Bytes of partial requests all calls may hold together. */
  maxRequestBytesTotal: number;
  maxConnections: number;
  /** A connection quiet this long is pinged; no ACK within keepaliveTimeoutMs ends it. */
  keepaliveMs: number;
  keepaliveTimeoutMs: number;
  /** A connection must send its preface and SETTINGS within this. */
  handshakeTimeoutMs: number;
  /** A connection ended with a connection error: once per connection. */
  onConnectionError?: (e: ConnectionEnded) => void;
}

/** A connection the server ended for the peer's fault (a protocol error, a budget spent, not reading). */
export interface ConnectionEnded {
  /** The HTTP/2 error code of our GOAWAY. */
  code: number;
  /** A fixed text (our GOAWAY's debug data): nothing the peer sent. */
  reason: string;
  /** Set when a per-connection budget ran out: what spent most of it. */
  flood: Flood | undefined;
  /** The peer's address:port. */
  peer: string;
  /** Bytes read from the peer over the connection's life. */
  bytesRead: number;
  /** How long the connection lived, ms. */
  ageMs: number;
}

export interface GrpcServer {
  readonly port: number;
  readonly connections: number;
  /** GOAWAY to every connection and stop accepting; connections still open after graceMs are destroyed. */
  close(graceMs: number): Promise<void>;
}

const SWEEP_MS = 1000;

function peerOf(socket: net.Socket): string {
  return `${socket.remoteAddress ?? 'unknown'}:${socket.remotePort ?? 0}`;
}

export async function startGrpcServer(opts: GrpcServerOptions, onCall: (call: GrpcCall) => void): Promise<GrpcServer> {
  const conns = new Set<H2Connection>();
  const budget = new RequestBudget(opts.maxRequestBytesTotal);

  const handler: ConnectionHandler = {
    onStream(stream: H2Stream, headers: HeaderField[], conn: H2Connection): void {
      let method: string | undefined;
      let path: string | undefined;
      let contentType: string | undefined;
      for (const [n, v] of headers) {
        if (n === ':method') method = v;
        else if (n === ':path') path = v;
        else if (n === 'content-type') contentType = v;
      }
      if (method !== 'POST' || path === undefined) return stream.end([[':status', method === undefined || path === undefined ? '400' : '405']]);
      if (contentType === undefined || !contentType.startsWith('application/grpc')) return stream.end([[':status', '415']]);
      const call = new GrpcCall(stream, headers, peerOf(conn.socket), path, opts.maxMessageBytes, budget, conn);
      if (!opts.paths.has(path)) return call.end({ code: GrpcCode.UNIMPLEMENTED, details: `The server does not implement the method ${path}` });
      onCall(call);
    },
    onClose(conn: H2Connection): void {
      conns.delete(conn);
    },
    onError(conn, code, reason, flood): void {
      opts.onConnectionError?.({ code, reason, flood, peer: peerOf(conn.socket), bytesRead: conn.socket.bytesRead, ageMs: Date.now() - conn.openedAt });
    },
  };

  const server = net.createServer({ noDelay: true }, (socket) => {
    conns.add(new H2Connection(socket, handler, opts.limits, Date.now()));
  });
  server.maxConnections = opts.maxConnections;

  // One timer for every connection: handshake deadline, keepalive ping, ping timeout, the protocol's own time
  // bounds (an unfinished header block, our SETTINGS' ACK).
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const c of conns) {
      c.checkDeadlines(now);
      if (c.pingSentAt !== 0) {
        if (now - c.pingSentAt > opts.keepaliveTimeoutMs) c.destroy(false);
      } else if (!c.handshakeDone) {
        if (now - c.openedAt > opts.handshakeTimeoutMs) c.destroy(false);
      } else if (now - c.lastReadAt > opts.keepaliveMs) {
        c.ping(now);
      }
    }
  }, SWEEP_MS);
  sweep.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : opts.port;

  return {
    port,
    get connections() {
      return conns.size;
    },
    close: (graceMs) =>
      new Promise<void>((resolve) => {
        clearInterval(sweep);
        server.close();
        for (const c of conns) c.goaway(H2Error.NO_ERROR);
        const deadline = Date.now() + graceMs;
        const check = (): void => {
          for (const c of [...conns]) if (c.responding === 0 && c.backlog === 0) c.destroy(true);
          if (conns.size === 0 || Date.now() >= deadline) {
            for (const c of [...conns]) c.destroy(false);
            resolve();
            return;
          }
          setTimeout(check, 20);
        };
        // Let the GOAWAYs (and the statuses the application is sending now) leave first.
        setImmediate(check);
      }),
  };
}
