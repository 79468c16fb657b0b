// The v2 streaming service for grpc-js: `meridian.stream.v2.StreamV2`, one bidi method, Subscribe.
// Client side (tests, the CLI, other projects): the generated google-protobuf messages of proto/stream_v2.proto.
// Server side (the fanout's grpc-js transport, addStreamV2Service): bytes both ways — the fanout reads requests in
// fanout/v2/request.ts and writes updates it framed itself with proto/wire-v2.ts.
import * as grpc from '@grpc/grpc-js';
import { SubscribeRequest, SubscribeUpdate } from './gen/stream_v2_pb';

export const V2_SERVICE = 'meridian.stream.v2.StreamV2';
export const V2_SUBSCRIBE_PATH = `/${V2_SERVICE}/Subscribe`;

export type V2Stream = grpc.ClientDuplexStream<SubscribeRequest, SubscribeUpdate>;

export const streamV2Definition = {
  Subscribe: {
    path: V2_SUBSCRIBE_PATH,
    requestStream: true,
    responseStream: true,
    originalName: 'subscribe',
    requestSerialize: (r: SubscribeRequest): Buffer => Buffer.from(r.serializeBinary()),
    requestDeserialize: (b: Buffer): SubscribeRequest => SubscribeRequest.deserializeBinary(b),
    responseSerialize: (u: SubscribeUpdate): Buffer => Buffer.from(u.serializeBinary()),
    responseDeserialize: (b: Buffer): SubscribeUpdate => SubscribeUpdate.deserializeBinary(b),
  },
} as const;

export interface StreamV2Client extends grpc.Client {
  Subscribe(metadata?: grpc.Metadata, options?: grpc.CallOptions): V2Stream;
}

export const StreamV2Client = grpc.makeGenericClientConstructor(streamV2Definition as unknown as grpc.ServiceDefinition, V2_SERVICE) as unknown as new (
  address: string,
  credentials: grpc.ChannelCredentials,
  options?: Partial<grpc.ChannelOptions>,
) => StreamV2Client;

/** Opens a v2 Subscribe stream on its own channel, closed when the call ends. Attach an 'error' listener. */
export function openV2Stream(address: string, opts: { metadata?: grpc.Metadata; channelOptions?: Partial<grpc.ChannelOptions> } = {}): V2Stream {
  const client = new StreamV2Client(address, grpc.credentials.createInsecure(), opts.channelOptions);
  const call = client.Subscribe(opts.metadata ?? new grpc.Metadata());
  call.once('status', () => client.close());
  return call;
}

// ---- server side (grpc-js) --------------------------------------------------------------------------------

/** Request bytes as they came (fanout/v2/request.ts decodes them, and answers what does not decode). */
const passThroughRequest = (b: Buffer): Buffer => b;
/** Updates are written pre-framed to the HTTP/2 stream, never through grpc-js's serializer; it passes bytes on. */
function passThroughResponse(b: Buffer): Buffer {
  if (!Buffer.isBuffer(b)) throw new TypeError('v2 updates must be pre-encoded Buffers (proto/wire-v2.ts)');
  return b;
}

export type V2ServerCall = grpc.ServerDuplexStream<Buffer, Buffer>;

/** Registers `handler` for StreamV2/Subscribe on a grpc-js server, requests and responses as bytes. */
export function addStreamV2Service(server: grpc.Server, handler: (call: V2ServerCall) => void): void {
  const def = {
    Subscribe: {
      path: V2_SUBSCRIBE_PATH,
      requestStream: true,
      responseStream: true,
      originalName: 'subscribe',
      requestSerialize: passThroughResponse,
      requestDeserialize: passThroughRequest,
      responseSerialize: passThroughResponse,
      responseDeserialize: passThroughRequest,
    },
  };
  server.addService(def as unknown as grpc.ServiceDefinition, { Subscribe: handler as unknown as grpc.UntypedHandleCall });
}
