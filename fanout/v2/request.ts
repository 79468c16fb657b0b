import { SubscribeRequest, TransactionEncoding, LagPolicy } from '../../proto/gen/stream_v2_pb';
import type { FilterSpec } from '../filter/compile';
import { readFilterExtra } from './request-extra';

// A v2 SubscribeRequest as the session reads it: plain data. Requests are few (filter changes, pings, one start),
// so the generated decoder reads them; what it cannot read ends the call as v1's does (INTERNAL).

export interface V2Start {
  from: { cursor: Uint8Array } | { slot: bigint } | { timeMs: number } | undefined;
  lagPolicy: 'close' | 'skip';
  raw: boolean;
  slots: boolean;
  /** Start.entries: send Entry updates. */
  entries?: boolean;
}

export interface V2Request {
  start?: V2Start;
  /** raw: the filter asks for RAW; decoded: it asks for DECODED explicitly (neither: the stream's encoding). */
  /** `spec.options` carries the filter's encoding and match_loaded_addresses. */
  add?: { id: string; spec: FilterSpec };
  remove?: string;
  ping?: number;
}

export function decodeV2Request(bytes: Uint8Array): V2Request {
  const m = SubscribeRequest.deserializeBinary(bytes);
  switch (m.getRequestCase()) {
    case SubscribeRequest.RequestCase.START: {
      const s = m.getStart()!;
      let from: V2Start['from'];
      if (s.hasCursor()) from = { cursor: s.getCursor_asU8() };
      else if (s.hasSlot()) from = { slot: BigInt(s.getSlot()) };
      else if (s.hasTime()) {
        const t = s.getTime()!;
        from = { timeMs: t.getSeconds() * 1000 + Math.floor(t.getNanos() / 1e6) };
      }
      return { start: { from, lagPolicy: s.getLagPolicy() === LagPolicy.LAG_POLICY_SKIP ? 'skip' : 'close', raw: s.getEncoding() === TransactionEncoding.TRANSACTION_ENCODING_RAW, slots: s.getSlots(), entries: s.getEntries() } };
    }
    case SubscribeRequest.RequestCase.ADD_FILTER: {
      const a = m.getAddFilter()!;
      const f = a.getFilter();
      const enc = f?.getEncoding();
      const encoding = enc === TransactionEncoding.TRANSACTION_ENCODING_RAW ? 'raw' : enc === TransactionEncoding.TRANSACTION_ENCODING_DECODED ? 'decoded' : 'default';
      const spec: FilterSpec = {
        include: f?.getAccountIncludeList() ?? [],
        exclude: f?.getAccountExcludeList() ?? [],
        required: f?.getAccountRequiredList() ?? [],
        options: { encoding, matchLoaded: f?.getMatchLoadedAddresses() ?? false },
      };
      if (f !== undefined) {
        const extra = readFilterExtra(f);
        if (extra !== undefined) spec.extra = extra;
      }
      return { add: { id: a.getId(), spec } };
    }
    case SubscribeRequest.RequestCase.REMOVE_FILTER:
      return { remove: m.getRemoveFilter()!.getId() };
    case SubscribeRequest.RequestCase.PING:
      return { ping: m.getPing()!.getId() };
    default:
      return {};
  }
}
