import { encodeFilterNames, encodePingResponse, encodeSlotResponse, encodeTxResponse } from '../proto/wire';
import type { ResponseEncoder } from './fanout';

// The production encoder: proto/wire.ts's hand-written framing around the transaction bytes ingest encoded.
// A response is created_at ‖ filters ‖ (tag ‖ len ‖ transaction bytes): one allocation, one copy of the shared
// message, no protobuf object and no re-encoding per subscriber.

export const wireEncoder: ResponseEncoder = {
  filterNames: (names) => encodeFilterNames(names),
  transaction: (createdAtMs, filterField, txMessage) => encodeTxResponse(createdAtMs, filterField, txMessage),
  ping: (id) => encodePingResponse(id),
  slot: (createdAtMs, slot) => encodeSlotResponse(slot, createdAtMs),
};
