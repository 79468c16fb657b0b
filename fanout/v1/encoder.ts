import { encodeFilterNames, encodePingResponse, encodeSlotResponse, encodeTxResponse } from '../../proto/wire';
import type { ResponseEncoder } from './hub';

// The production encoder: proto/wire.ts's hand-written framing around the transaction bytes ingest encoded.
// A response is created_at ‖ filters ‖ (tag ‖ len ‖ transaction bytes): one allocation, one copy of the shared
// message, no protobuf object and no re-encoding per subscriber.

export const wireEncoder: ResponseEncoder = {
  filterNames: (names) => encodeFilterNames(names),
  transaction: (createdAtMs, filterField, txMessage) => encodeTxResponse(createdAtMs, filterField, txMessage),
  transactionAfter: (headroom, createdAtMs, filterField, txMessage) => encodeTxResponse(createdAtMs, filterField, txMessage, headroom),
  ping: (id) => encodePingResponse(id),
  slot: (createdAtMs, slot) => encodeSlotResponse(slot, createdAtMs),
};

/** gRPC message prefix: compressed flag (0) ‖ length (u32 BE). */
export const GRPC_PREFIX_SZ = 5;

/** Writes the prefix into the GRPC_PREFIX_SZ bytes left free at the front. */
function prefixed(out: Buffer): Buffer {
  out[0] = 0;
  out.writeUInt32BE(out.length - GRPC_PREFIX_SZ, 1);
  return out;
}

function framed(msg: Buffer): Buffer {
  const out = Buffer.allocUnsafe(GRPC_PREFIX_SZ + msg.length);
  out[0] = 0;
  out.writeUInt32BE(msg.length, 1);
  msg.copy(out, GRPC_PREFIX_SZ);
  return out;
}

/**
 * The same responses, each already carrying its gRPC length prefix: encoded once per distinct response and
 * shared by every subscriber it goes to, so the transport writes it as is (one write, no per-subscriber
 * prefix). A path that needs the bare message takes `buf.subarray(GRPC_PREFIX_SZ)` (a view, no copy).
 */
export function framedEncoder(enc: ResponseEncoder): ResponseEncoder {
  const after = enc.transactionAfter;
  return {
    filterNames: (names) => enc.filterNames(names),
    transaction:
      after !== undefined
        ? (createdAtMs, filterField, txMessage) => prefixed(after(GRPC_PREFIX_SZ, createdAtMs, filterField, txMessage))
        : (createdAtMs, filterField, txMessage) => framed(enc.transaction(createdAtMs, filterField, txMessage)),
    ping: (id) => framed(enc.ping(id)),
    slot: (createdAtMs, slot) => framed(enc.slot(createdAtMs, slot)),
  };
}
