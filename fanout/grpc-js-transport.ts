import * as grpc from '@grpc/grpc-js';
import { addSubscribeService } from '../proto/service';
import { addStreamV2Service } from '../proto/service-v2';
import { tokenOf } from './auth';
import { closeConnectionAfterStatus } from './call-connection';
import { resetCall } from './call-reset';
import type { FanoutConfig } from './config';
import type { StreamError } from './errors';
import { FramedSink, http2StreamOf, setNoDelay } from './grpc-stream';
import type { SubscribeUpdate } from './request';
import { decodeSubscribeUpdate } from './request-wire';
import type { Sink } from './subscriber-queue';
import type { SubscribeCall } from './subscribe-call';
import type { V2Call } from './v2/serve';

// The stream endpoint on grpc-js (fanout.transport = grpc-js), v1 and v2 (meridian.stream.v2) on one port: the
// reference the own HTTP/2 server is measured against, and a fallback. Responses go straight to the HTTP/2 stream
// (grpc-stream.ts says why): grpc-js's own write path, once selectable (fanout.directWrites = false), was removed as
// a third response path that stalled under non-reading peers and that no test ran. Should a grpc-js upgrade hide the
// stream (http2StreamOf gives null), each call ends with INTERNAL and says so: the transport tests fail at once
// instead of a silent slow path.

/**
 * What v1 and v2 calls share on grpc-js (as H2Call does on the own server): the caller's identity, the response
 * sink, and how a call ends — with a status, then GOAWAY and the close when the error's contract row says so (a
 * PPS refusal), else a reset after a grace period. `Req` is what grpc-js hands over per request message.
 */
abstract class GrpcJsCall<Req> {
  readonly peer: string;
  readonly token: string | undefined;
  private readonly framedSink: Sink | null;

  constructor(
    protected readonly call: grpc.ServerDuplexStream<Req, Buffer>,
    private readonly cfg: FanoutConfig,
  ) {
    this.peer = call.getPeer();
    this.token = tokenOf(call.metadata);
    const h2 = http2StreamOf(call);
    if (h2 !== null) setNoDelay(h2);
    this.framedSink = h2 === null ? null : new FramedSink(h2);
  }

  sendHeaders(): void {
    this.call.sendMetadata(new grpc.Metadata());
  }

  sink(): Sink {
    if (this.framedSink !== null) return this.framedSink;
    // Not reachable with the grpc-js this project pins (the transport tests run it); see the header comment.
    this.call.emit('error', { code: grpc.status.INTERNAL, details: 'the grpc-js transport cannot reach the HTTP/2 stream of this grpc-js version (see fanout/grpc-stream.ts)' });
    return { write: () => true, once: (_e, _l) => undefined };
  }

  /**
   * Ends the RPC with a registry status (its metadata, x-resume-cursor included, go out as trailers); resets the
   * HTTP/2 stream if the status cannot get through in time. A status that closes the connection closes it after
   * the status.
   */
  end(e?: StreamError): void {
    const call = this.call;
    if (e === undefined) return void call.end();
    call.emit('error', e);
    // GOAWAY and close once the status has left (call-connection.ts); the stream's reset below is then moot.
    if (e.closesConnection) closeConnectionAfterStatus(call);
    if (this.cfg.endGraceMs === 0) return;
    const timer = setTimeout(() => {
      if (!call.destroyed) resetCall(call);
    }, this.cfg.endGraceMs);
    timer.unref();
    call.once('close', () => clearTimeout(timer));
  }

  /** Requests as grpc-js deserialized them; `gone` once, when the client goes or the call is over. */
  protected listenRaw(onRequest: (r: Req) => void, gone: () => void): void {
    this.call.on('data', onRequest);
    // 'cancelled' comes when the client goes away, and also after our own status is sent; either way it is over.
    let once = false;
    const g = (): void => {
      if (once) return;
      once = true;
      gone();
    };
    this.call.once('cancelled', g);
    this.call.once('close', g);
  }
}

/** A v1 call: requests read by request-wire.ts (keys stay bytes until compiled), not by the generated classes. */
class GrpcJsSubscribeCall extends GrpcJsCall<SubscribeUpdate> implements SubscribeCall {
  listen(onRequest: (u: SubscribeUpdate) => void, gone: () => void): void {
    this.listenRaw(onRequest, gone);
  }
}

/**
 * A v2 call: request messages handed over as bytes (fanout/v2/request.ts decodes them, as on the own server), so
 * fanout/v2/serve.ts serves both transports alike. Updates leave through the same FramedSink as v1's responses,
 * each frame as the v2 session framed it (its compressed-flag byte included).
 *
 * Compression hook (gzip/zstd: a transport-independent codec, served on the own server first): this call sends
 * identity. To serve an encoding here it would (1) choose it from the client's `grpc-accept-encoding`, which grpc-js
 * removes from call.metadata before any handler or interceptor sees it (server-interceptors.js), so it must be read
 * at the HTTP/2 level (a 'stream' listener on grpc-js's http2 sessions: internals, checked as grpc-stream.ts does),
 * (2) expose the choice to serveV2 the way the own server's call does, and (3) send `grpc-encoding: <chosen>` as
 * metadata from sendHeaders() (custom metadata overrides grpc-js's default `identity` header). The frames the
 * session hands over, compressed flag included, pass through FramedSink unchanged.
 */
class GrpcJsV2Call extends GrpcJsCall<Buffer> implements V2Call {
  listen(onMessage: (m: Buffer) => void, gone: () => void): void {
    this.listenRaw(onMessage, gone);
  }
}

export interface GrpcJsTransport {
  port: number;
  close(graceMs: number): Promise<void>;
}

/** `bindAddress`: host:port, an IPv6 host in brackets. */
export async function startGrpcJsTransport(
  cfg: FanoutConfig,
  bindAddress: string,
  maxMessageBytes: number,
  onCall: (c: SubscribeCall) => void,
  onV2Call?: (c: V2Call) => void,
): Promise<GrpcJsTransport> {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': maxMessageBytes,
    // Find peers that vanished without a FIN; heartbeats do the same at the application level.
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
  });
  // Requests are read by request-wire.ts (keys stay bytes until compiled), not by the generated classes.
  addSubscribeService(server, (call: grpc.ServerDuplexStream<SubscribeUpdate, Buffer>) => onCall(new GrpcJsSubscribeCall(call, cfg)), decodeSubscribeUpdate);
  // v2 on the same port (fanout.v2.enabled): the same serveV2 as on the own server.
  if (onV2Call !== undefined) addStreamV2Service(server, (call) => onV2Call(new GrpcJsV2Call(call, cfg)));
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(bindAddress, grpc.ServerCredentials.createInsecure(), (err, p) => (err === null ? resolve(p) : reject(err)));
  });
  return {
    port,
    close: (graceMs) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      }),
  };
}
