import type { FanoutConfig } from '../config';
import type { StreamError } from '../errors';
import { DEFAULT_CONNECTION_LIMITS } from '../h2/connection';
import { H2Error } from '../h2/frame';
import { fanoutMetrics } from '../metrics';
import { GrpcCode, type GrpcCall } from '../h2/grpc-call';
import { startGrpcServer, type ConnectionEnded, type GrpcServer } from '../h2/server';
import type { Log } from '../../infra/base/log';
import type { SubscribeUpdate } from '../v1/request';
import type { Sink } from '../subscriber-queue';
import { decodeSubscribeUpdate } from '../v1/request-wire';
import { TOKEN_HEADER } from '../auth';
import { errorTrailers, type SubscribeCall } from '../v1/serve';
import { V2_SUBSCRIBE_PATH, type V2Call } from '../v2/serve';
import { chooseEncoding, sendableEncodings, type MessageEncoding } from '../../proto/grpc-compression';

// The stream endpoint on the fanout's own HTTP/2 server (fanout/h2/): a GrpcCall seen as a SubscribeCall.

/** Keepalive as the grpc-js server had it: find peers that vanished without a FIN. */
const KEEPALIVE_MS = 30_000;
const KEEPALIVE_TIMEOUT_MS = 10_000;
const HANDSHAKE_TIMEOUT_MS = 10_000;

const ERROR_NAMES = new Map<number, string>(Object.entries(H2Error).map(([name, code]) => [code, name]));
/**
 * Log lines for ended connections, at most this many a second; the rest are counted (the metrics count every
 * one) and the count rides on the next line, so a peer that reconnects to fail again cannot flood the log.
 */
const MAX_END_LINES_PER_SEC = 20;

/** One warning per connection ended for the peer's fault, with the peer's address (never a credential) and why. */
export function connectionEndLogger(log: Log | undefined, now: () => number = Date.now): (e: ConnectionEnded) => void {
  let second = 0;
  let lines = 0;
  let suppressed = 0;
  return (e) => {
    const code = ERROR_NAMES.get(e.code) ?? String(e.code);
    fanoutMetrics.connectionError(code).inc();
    if (e.flood !== undefined) fanoutMetrics.floodClose(e.flood).inc();
    if (log === undefined) return;
    const s = Math.floor(now() / 1000);
    if (s !== second) {
      second = s;
      lines = 0;
    }
    if (++lines > MAX_END_LINES_PER_SEC) {
      suppressed++;
      return;
    }
    const fields = { peer: e.peer, code, reason: e.reason, ...(e.flood === undefined ? {} : { flood: e.flood }), bytesRead: e.bytesRead, ageMs: e.ageMs, ...(suppressed > 0 ? { suppressed } : {}) };
    suppressed = 0;
    log.warn(fields, 'stream connection closed by the server');
  };
}

/**
 * What v1 and v2 calls share: the caller's identity, the response sink, and how a call ends — with a status, then
 * GOAWAY and the close when the error's contract row says so (a PPS refusal), else a reset after a grace period.
 */
abstract class H2Call {
  readonly peer: string;
  readonly token: string | undefined;

  constructor(
    protected readonly call: GrpcCall,
    private readonly endGraceMs: number,
  ) {
    this.peer = call.peer;
    const t = call.header(TOKEN_HEADER);
    // HPACK strings are octets (read as latin1); a token is text. authenticate() treats '' as absent.
    this.token = t === undefined ? undefined : Buffer.from(t, 'latin1').toString('utf8');
  }

  sendHeaders(): void {
    this.call.sendHeaders();
  }

  sink(): Sink {
    return this.call.sink();
  }

  end(e?: StreamError): void {
    if (e === undefined) return this.call.end();
    const status = { code: e.code, details: e.details, trailers: errorTrailers(e) };
    // The status leaves first, then GOAWAY and the close (the connection's own turn, not a timer).
    if (e.closesConnection) return this.call.endAndCloseConnection(status, e.reason);
    this.call.end(status);
    // A status cannot overtake data: a subscriber that stopped reading never lets it through. Reset then.
    if (this.endGraceMs === 0) return;
    setTimeout(() => this.call.reset(), this.endGraceMs).unref();
  }
}

class H2SubscribeCall extends H2Call implements SubscribeCall {
  listen(onRequest: (u: SubscribeUpdate) => void, gone: () => void): void {
    this.call.onMessage = (m) => {
      let u: SubscribeUpdate;
      try {
        u = decodeSubscribeUpdate(m);
      } catch (err) {
        // As grpc-js ends a call whose request does not deserialize.
        this.call.abort({ code: GrpcCode.INTERNAL, details: `Error deserializing request: ${err instanceof Error ? err.message : String(err)}` });
        return;
      }
      onRequest(u);
    };
    this.call.onGone = gone;
  }
}

/**
 * A v2 call: the same GrpcCall, requests handed over as bytes (fanout/v2/request.ts decodes them), responses in
 * the first encoding of the client's grpc-accept-encoding this server sends (gzip; zstd where this Node has it),
 * unless identity comes first (chooseEncoding says why).
 */
class H2V2Call extends H2Call implements V2Call {
  readonly encoding: MessageEncoding;

  constructor(call: GrpcCall, endGraceMs: number) {
    super(call, endGraceMs);
    this.encoding = chooseEncoding(call.header('grpc-accept-encoding'), sendableEncodings());
    call.encoding = this.encoding;
  }

  listen(onMessage: (m: Buffer) => void, gone: () => void): void {
    this.call.onMessage = onMessage;
    this.call.onGone = gone;
  }
}

export function startH2Transport(
  cfg: FanoutConfig,
  paths: readonly string[],
  maxMessageBytes: number,
  onCall: (c: SubscribeCall) => void,
  onV2Call?: (c: V2Call) => void,
  log?: Log,
): Promise<GrpcServer> {
  const all = onV2Call === undefined ? paths : [...paths, V2_SUBSCRIBE_PATH];
  return startGrpcServer(
    {
      host: cfg.host,
      port: cfg.port,
      paths: new Set(all),
      limits: { ...DEFAULT_CONNECTION_LIMITS, maxOpenStreams: cfg.maxStreamsPerConnection + 64 },
      maxMessageBytes,
      maxRequestBytesTotal: Math.max(64 << 20, 4 * maxMessageBytes),
      maxConnections: cfg.maxStreams + 1024,
      keepaliveMs: KEEPALIVE_MS,
      keepaliveTimeoutMs: KEEPALIVE_TIMEOUT_MS,
      handshakeTimeoutMs: HANDSHAKE_TIMEOUT_MS,
      onConnectionError: connectionEndLogger(log),
    },
    (call) => (call.path === V2_SUBSCRIBE_PATH && onV2Call !== undefined ? onV2Call(new H2V2Call(call, cfg.endGraceMs)) : onCall(new H2SubscribeCall(call, cfg.endGraceMs))),
  );
}
