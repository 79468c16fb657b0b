import * as grpc from '@grpc/grpc-js';
import type { Http2Stream } from 'node:http2';
import { chooseEncoding, sendableEncodings, type MessageEncoding } from '../../proto/grpc-compression';
import { addSubscribeService } from '../../proto/service';
import { addStreamV2Service } from '../../proto/service-v2';
import { tokenOf } from '../auth';
import { closeConnectionAfterStatus } from './call-connection';
import { acceptEncodingOf, watchAcceptEncoding } from './grpc-js-accept-encoding';
import { resetCall } from './call-reset';
import type { FanoutConfig } from '../config';
import type { StreamError } from '../errors';
import { FramedSink, http2StreamOf, setNoDelay } from './grpc-stream';
import type { SubscribeUpdate } from '../v1/request';
import { decodeSubscribeUpdate } from '../v1/request-wire';
import type { Sink } from '../subscriber-queue';
import type { SubscribeCall } from '../v1/serve';
import type { V2Call } from '../v2/serve';

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
  /** The call's Node Http2Stream (grpc-stream.ts http2StreamOf), null if this grpc-js hides it. */
  protected readonly h2: Http2Stream | null;
  private readonly framedSink: Sink | null;

  constructor(
    protected readonly call: grpc.ServerDuplexStream<Req, Buffer>,
    private readonly cfg: FanoutConfig,
  ) {
    this.peer = call.getPeer();
    this.token = tokenOf(call.metadata);
    const h2 = http2StreamOf(call);
    this.h2 = h2;
    if (h2 !== null) setNoDelay(h2);
    this.framedSink = h2 === null ? null : new FramedSink(h2);
  }

  sendHeaders(): void {
    this.call.sendMetadata(this.responseMetadata());
  }

  /** The response headers' custom part (grpc-js adds :status, content-type and its default encoding headers). */
  protected responseMetadata(): grpc.Metadata {
    return new grpc.Metadata();
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
 * each frame as the v2 session framed it: grpc-js never sees them, so the compressed-flag byte and the body the
 * session compressed (fanout/v2/compression.ts) reach the wire as they are.
 *
 * Responses are in the first encoding of the client's grpc-accept-encoding this server sends (gzip; zstd where
 * this Node has it), unless identity comes first (chooseEncoding says why), as on the own server. The header is
 * read at the HTTP/2 level (grpc-js-accept-encoding.ts: grpc-js strips it from call.metadata), and the choice goes
 * out as `grpc-encoding` in the response metadata, which overrides grpc-js's default `grpc-encoding: identity`.
 */
class GrpcJsV2Call extends GrpcJsCall<Buffer> implements V2Call {
  readonly encoding: MessageEncoding;

  constructor(call: grpc.ServerDuplexStream<Buffer, Buffer>, cfg: FanoutConfig) {
    super(call, cfg);
    this.encoding = this.h2 === null ? 'identity' : chooseEncoding(acceptEncodingOf(this.h2), sendableEncodings());
  }

  protected override responseMetadata(): grpc.Metadata {
    const m = new grpc.Metadata();
    if (this.encoding !== 'identity') m.set('grpc-encoding', this.encoding);
    return m;
  }

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
  // v2's encoding choice, hooked in the promise continuations that follow grpc-js's listen (a stream that came
  // earlier would read as identity); unreachable internals leave every v2 stream on identity (grpc-js-accept-encoding.ts).
  if (onV2Call !== undefined) watchAcceptEncoding(server);
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
