import type { HealthProbe } from '../core';

// Health of a chain node: `getHealth` must answer "ok" (a node that is behind answers with an error), and
// `getSlot` gives the height the pool compares across upstreams (gateways.rpc.health.maxSlotLag).

const HEALTH = '{"jsonrpc":"2.0","id":1,"method":"getHealth"}';
const SLOT = '{"jsonrpc":"2.0","id":1,"method":"getSlot","params":[{"commitment":"processed"}]}';

export const solanaProbe: HealthProbe = async (call) => {
  const [h, s] = (await Promise.all([call(HEALTH), call(SLOT)])) as Array<{ result?: unknown; error?: { message?: unknown } }>;
  if (h?.result !== 'ok') return { ok: false, why: `getHealth: ${typeof h?.error?.message === 'string' ? h.error.message : 'not ok'}` };
  if (typeof s?.result !== 'number') return { ok: false, why: 'getSlot: no slot' };
  return { ok: true, height: s.result };
};
