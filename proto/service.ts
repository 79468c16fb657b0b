// The v1 streaming service for grpc-js, written by hand (protoc generates the messages only).
//
// One bidi method, Subscribe, served under three names so that every client finds it:
//   /arpc.StreamService/Subscribe   the neutral name (spec/service.md)
//   /arpc.ARPCService/Subscribe     what published client SDKs call (spec/compat.md)
//   /StreamService/Subscribe        an unpackaged alias for clients built from a package-less .proto
//
// Server side: requests arrive as generated SubscribeRequest instances (bytes vetted by checkSubscribeRequest
// first; malformed bytes throw, and grpc-js then ends the call with INTERNAL "Error deserializing request").
// Responses are written as Buffers already encoded by proto/wire.ts; the serializer passes them through.
// Client side (tests, the CLI): requests are generated instances or plain objects, responses are decoded
// into generated SubscribeResponse instances.
import * as grpc from '@grpc/grpc-js';
import { SubscribeRequest, SubscribeRequestFilterTransactions, SubscribeResponse } from './gen/arpc_pb';
import { checkSubscribeRequest } from './wire';

export const STREAM_SERVICE_NAMES = ['arpc.StreamService', 'arpc.ARPCService', 'StreamService'] as const;
export type StreamServiceName = (typeof STREAM_SERVICE_NAMES)[number];
export const SUBSCRIBE_METHOD = 'Subscribe';

/** The CLI's and tests' names for the three services. */
export type ServiceChoice = 'StreamService' | 'ARPCService' | 'unpackaged';
export const SERVICE_CHOICES: Readonly<Record<ServiceChoice, StreamServiceName>> = {
  StreamService: 'arpc.StreamService',
  ARPCService: 'arpc.ARPCService',
  unpackaged: 'StreamService',
};

export function subscribePath(name: StreamServiceName): string {
  return `/${name}/${SUBSCRIBE_METHOD}`;
}

/** A filter as a plain object; absent lists are empty. */
export interface FilterInit {
  accountInclude?: readonly string[];
  accountExclude?: readonly string[];
  accountRequired?: readonly string[];
}

/** A SubscribeRequest as a plain object; an absent pingId/newSeenSlots stays absent on the wire. */
export interface SubscribeRequestInit {
  transactions?: Readonly<Record<string, FilterInit>>;
  pingId?: number;
  newSeenSlots?: boolean;
}

export type SubscribeRequestLike = SubscribeRequest | SubscribeRequestInit;

/** Builds the generated message from a plain object (instances pass through). */
export function toSubscribeRequest(req: SubscribeRequestLike): SubscribeRequest {
  if (req instanceof SubscribeRequest) return req;
  const msg = new SubscribeRequest();
  const map = msg.getTransactionsMap();
  for (const [name, f] of Object.entries(req.transactions ?? {})) {
    const filter = new SubscribeRequestFilterTransactions();
    filter.setAccountIncludeList([...(f.accountInclude ?? [])]);
    filter.setAccountExcludeList([...(f.accountExclude ?? [])]);
    filter.setAccountRequiredList([...(f.accountRequired ?? [])]);
    map.set(name, filter);
  }
  if (req.pingId !== undefined) msg.setPingId(req.pingId);
  if (req.newSeenSlots !== undefined) msg.setNewSeenSlots(req.newSeenSlots);
  return msg;
}

export function serializeSubscribeRequest(req: SubscribeRequestLike): Buffer {
  const bytes = toSubscribeRequest(req).serializeBinary();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The server's request deserializer: throws (WireError or the generated decoder's error) on malformed bytes. */
export function deserializeSubscribeRequest(bytes: Buffer): SubscribeRequest {
  checkSubscribeRequest(bytes);
  return SubscribeRequest.deserializeBinary(bytes);
}

/** The server's response serializer: the fanout writes SubscribeResponse bytes it has already encoded. */
export function passThroughSerialize(encoded: Buffer): Buffer {
  if (!Buffer.isBuffer(encoded)) throw new TypeError('Subscribe responses must be pre-encoded Buffers (proto/wire.ts)');
  return encoded;
}

export function deserializeSubscribeResponse(bytes: Buffer): SubscribeResponse {
  return SubscribeResponse.deserializeBinary(bytes);
}

/** Subscribe as both sides see it: server reads SubscribeRequest and writes Buffers; client the converse. */
export type SubscribeMethodDefinition = {
  path: string;
  requestStream: true;
  responseStream: true;
  originalName: string;
  requestSerialize: grpc.serialize<SubscribeRequestLike>;
  requestDeserialize: grpc.deserialize<SubscribeRequest>;
  responseSerialize: grpc.serialize<Buffer>;
  responseDeserialize: grpc.deserialize<SubscribeResponse>;
};

/** A type alias (not an interface) so that it is assignable to grpc.ServiceDefinition. */
export type SubscribeServiceDefinition = {
  readonly Subscribe: SubscribeMethodDefinition;
};

/** The definition of one of the three names. serialize replaces the pass-through response serializer. */
export function streamServiceDefinition(
  name: StreamServiceName = 'arpc.StreamService',
  serialize: grpc.serialize<Buffer> = passThroughSerialize,
): SubscribeServiceDefinition {
  return {
    Subscribe: {
      path: subscribePath(name),
      requestStream: true,
      responseStream: true,
      originalName: 'subscribe',
      requestSerialize: serializeSubscribeRequest,
      requestDeserialize: deserializeSubscribeRequest,
      responseSerialize: serialize,
      responseDeserialize: deserializeSubscribeResponse,
    },
  };
}

/** One definition per name, to register the same handler under each: `server.addService(def, { Subscribe })`. */
export function subscribeServices(serialize: grpc.serialize<Buffer> = passThroughSerialize): SubscribeServiceDefinition[] {
  return STREAM_SERVICE_NAMES.map((n) => streamServiceDefinition(n, serialize));
}

export type SubscribeHandler<Req = SubscribeRequest> = grpc.handleBidiStreamingCall<Req, Buffer>;

/**
 * Registers handler under all three names. `deserialize` replaces the generated request decoder (a server that
 * reads requests its own way); it must throw on malformed bytes, which grpc-js answers with INTERNAL.
 */
export function addSubscribeService(server: grpc.Server, handler: SubscribeHandler): void;
export function addSubscribeService<Req>(server: grpc.Server, handler: SubscribeHandler<Req>, deserialize: grpc.deserialize<Req>): void;
export function addSubscribeService<Req>(server: grpc.Server, handler: SubscribeHandler<Req>, deserialize?: grpc.deserialize<Req>): void {
  for (const def of subscribeServices()) {
    const service = deserialize === undefined ? def : { Subscribe: { ...def.Subscribe, requestDeserialize: deserialize } };
    server.addService(service as unknown as grpc.ServiceDefinition, { Subscribe: handler as unknown as grpc.UntypedHandleCall });
  }
}

// ---- client side -----------------------------------------------------------------------------------------

export type SubscribeStream = grpc.ClientDuplexStream<SubscribeRequestLike, SubscribeResponse>;

/** What a generated client stub offers: the Subscribe call. */
export interface SubscribeClient extends grpc.Client {
  Subscribe(metadata?: grpc.Metadata, options?: grpc.CallOptions): SubscribeStream;
}

export type SubscribeClientConstructor = new (
  address: string,
  credentials: grpc.ChannelCredentials,
  options?: Partial<grpc.ChannelOptions>,
) => SubscribeClient;

function clientConstructor(name: StreamServiceName): SubscribeClientConstructor {
  // makeGenericClientConstructor adds one method per definition key (and its originalName), here Subscribe.
  return grpc.makeGenericClientConstructor(streamServiceDefinition(name), name) as unknown as SubscribeClientConstructor;
}

/** Client stubs over the generated messages, one per name. */
export const StreamServiceClient = clientConstructor('arpc.StreamService');
export const ARPCServiceClient = clientConstructor('arpc.ARPCService');
export const UnpackagedStreamServiceClient = clientConstructor('StreamService');

const CLIENTS: Readonly<Record<ServiceChoice, SubscribeClientConstructor>> = {
  StreamService: StreamServiceClient,
  ARPCService: ARPCServiceClient,
  unpackaged: UnpackagedStreamServiceClient,
};

export interface OpenSubscribeOptions {
  service: ServiceChoice;
  /** Sent as the call's initial metadata, e.g. x-token. */
  metadata?: grpc.Metadata;
  /** Default: insecure (the v1 endpoint is plain HTTP/2). */
  credentials?: grpc.ChannelCredentials;
  channelOptions?: Partial<grpc.ChannelOptions>;
  callOptions?: grpc.CallOptions;
}

/**
 * Opens a Subscribe stream on its own channel, closed when the call ends. Write SubscribeRequest (generated or
 * plain), read SubscribeResponse. Attach an 'error' listener: grpc-js emits one for every non-OK status.
 */
export function openSubscribeStream(address: string, opts: OpenSubscribeOptions): SubscribeStream {
  const Client = CLIENTS[opts.service];
  if (Client === undefined) throw new Error(`unknown service ${String(opts.service)}`);
  const client = new Client(address, opts.credentials ?? grpc.credentials.createInsecure(), opts.channelOptions);
  const call = client.Subscribe(opts.metadata ?? new grpc.Metadata(), opts.callOptions ?? {});
  call.once('status', () => client.close());
  return call;
}
