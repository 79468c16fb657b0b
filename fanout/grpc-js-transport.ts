import * as grpc from '@grpc/grpc-js';
import { addSubscribeService } from '../proto/service';
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

// The stream endpoint on grpc-js (fanout.transport = grpc-js): the reference the own HTTP/2 server is measured
// against, and a fallback. Responses go straight to the HTTP/2 stream (grpc-stream.ts says why): grpc-js's own
// write path, once selectable (fanout.directWrites = false), was removed as a third response path that stalled
// under non-reading peers and that no test ran. Should a grpc-js upgrade hide the stream (http2StreamOf gives
// null), each call ends with INTERNAL and says so: the transport tests fail at once instead of a silent slow path.

type Call = grpc.ServerDuplexStream<SubscribeUpdate, Buffer>;

class GrpcJsSubscribeCall implements SubscribeCall {
  readonly peer: string;
  readonly token: string | undefined;
  private readonly framedSink: Sink | null;

  constructor(
    private readonly call: Call,
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
   * Ends the RPC with a registry status; resets the HTTP/2 stream if the status cannot get through in time. A
   * status that closes the connection closes it after the status.
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

  listen(onRequest: (u: SubscribeUpdate) => void, gone: () => void): void {
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

export interface GrpcJsTransport {
  port: number;
  close(graceMs: number): Promise<void>;
}

/** `bindAddress`: host:port, an IPv6 host in brackets. */
export async function startGrpcJsTransport(cfg: FanoutConfig, bindAddress: string, maxMessageBytes: number, onCall: (c: SubscribeCall) => void): Promise<GrpcJsTransport> {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': maxMessageBytes,
    // Find peers that vanished without a FIN; heartbeats do the same at the application level.
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
  });
  // Requests are read by request-wire.ts (keys stay bytes until compiled), not by the generated classes.
  addSubscribeService(server, (call: Call) => onCall(new GrpcJsSubscribeCall(call, cfg)), decodeSubscribeUpdate);
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
