import http2 from 'node:http2';
import { DEFAULT_CONNECTION_LIMITS } from '../../../fanout/h2/connection';
import { startGrpcServer } from '../../../fanout/h2/server';

// One HTTP/2 server in a process of its own for flood-rss.test.ts, so that its RSS is the server's alone (the
// flooders run in the parent): the own server (fanout/h2/) or a plain node:http2 server (nghttp2), as argv[2]
// says. Both answer a request with response headers and keep the stream. Over IPC: { port } once listening;
// on 'peak', the highest RSS sampled (every 5 ms) since the last 'peak' and the RSS now.

const PATH = '/t.S/M';

async function main(): Promise<void> {
  const kind = process.argv[2];
  let port: number;
  if (kind === 'own') {
    const server = await startGrpcServer(
      {
        host: '127.0.0.1',
        port: 0,
        paths: new Set([PATH]),
        limits: DEFAULT_CONNECTION_LIMITS,
        maxMessageBytes: 1 << 20,
        maxRequestBytesTotal: 64 << 20,
        maxConnections: 10_000,
        keepaliveMs: 30_000,
        keepaliveTimeoutMs: 10_000,
        handshakeTimeoutMs: 10_000,
      },
      (call) => call.sendHeaders(),
    );
    port = server.port;
  } else {
    const server = http2.createServer();
    server.on('sessionError', () => undefined);
    server.on('stream', (stream) => {
      stream.on('error', () => undefined);
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  }
  let peak = process.memoryUsage().rss;
  setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  process.on('message', (m: { type: string }) => {
    if (m.type === 'peak') {
      const now = process.memoryUsage().rss;
      process.send!({ type: 'peak', peak: Math.max(peak, now), now });
      peak = now;
    } else if (m.type === 'exit') {
      process.exit(0);
    }
  });
  process.send!({ type: 'ready', port });
}

void main();
