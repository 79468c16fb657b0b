import { SubscribeRequest, TransactionEncoding, LagPolicy } from '../../proto/gen/stream_v2_pb';
import type { FilterSpec } from '../filter';

// A v2 SubscribeRequest as the session reads it: plain data. Requests are few (filter changes, pings, one start),
// so the generated decoder reads them; what it cannot read ends the call as v1's does (INTERNAL).

export interface V2Start {
  from: { cursor: Uint8Array } | { slot: bigint } | { timeMs: number } | undefined;
  lagPolicy: 'close' | 'skip';
  raw: boolean;
  slots: boolean;
}

export interface V2Request {
  start?: V2Start;
  add?: { id: string; spec: FilterSpec; raw: boolean; matchLoaded: boolean };
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
      return { start: { from, lagPolicy: s.getLagPolicy() === LagPolicy.LAG_POLICY_SKIP ? 'skip' : 'close', raw: s.getEncoding() === TransactionEncoding.TRANSACTION_ENCODING_RAW, slots: s.getSlots() } };
    }
    case SubscribeRequest.RequestCase.ADD_FILTER: {
      const a = m.getAddFilter()!;
      const f = a.getFilter();
      const spec: FilterSpec = { include: f?.getAccountIncludeList() ?? [], exclude: f?.getAccountExcludeList() ?? [], required: f?.getAccountRequiredList() ?? [] };
      return { add: { id: a.getId(), spec, raw: f?.getEncoding() === TransactionEncoding.TRANSACTION_ENCODING_RAW, matchLoaded: f?.getMatchLoadedAddresses() ?? false } };
    }
    case SubscribeRequest.RequestCase.REMOVE_FILTER:
      return { remove: m.getRemoveFilter()!.getId() };
    case SubscribeRequest.RequestCase.PING:
      return { ping: m.getPing()!.getId() };
    default:
      return {};
  }
}
