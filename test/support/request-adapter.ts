import type { SubscribeRequest } from '../../proto/gen/arpc_pb';
import type { FilterSpec } from '../../fanout/filter/compile';
import type { SubscribeUpdate } from '../../fanout/v1/request';

// Generated SubscribeRequest → the session's plain SubscribeUpdate. Presence comes from the proto3 `optional`
// markers: hasPingId()/hasNewSeenSlots() say whether the client set the field at all (0 and false are values).

export function updateFromRequest(req: SubscribeRequest): SubscribeUpdate {
  const filters: Array<readonly [string, FilterSpec]> = [];
  req.getTransactionsMap().forEach((f, name) => {
    filters.push([name, { include: f.getAccountIncludeList(), exclude: f.getAccountExcludeList(), required: f.getAccountRequiredList() }]);
  });
  return {
    filters,
    pingId: req.hasPingId() ? req.getPingId() : undefined,
    newSeenSlots: req.hasNewSeenSlots() ? req.getNewSeenSlots() : undefined,
  };
}
