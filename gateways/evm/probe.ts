import type { HealthProbe } from '../core';

// Health of an EVM node: it answers eth_blockNumber, and its block number keeps up with the other upstreams
// of the chain (the pool compares heights: more than maxLagBlocks behind the best one is unhealthy). A node
// that stops making progress while its peers go on falls behind and is taken out; it comes back as soon as a
// probe finds it caught up. A lone node is judged on answering alone (nothing to compare with: anvil without
// a block time mines only on transactions, so "no new block lately" is not a failure by itself).

const BODY = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';

export const blockNumberProbe: HealthProbe = async (call) => {
  const reply = (await call(BODY)) as { result?: unknown; error?: { message?: unknown } } | null;
  if (reply === null || typeof reply !== 'object') return { ok: false, why: 'eth_blockNumber reply is not an object' };
  if (reply.error !== undefined) return { ok: false, why: `eth_blockNumber error: ${String(reply.error.message ?? 'unknown')}`.slice(0, 200) };
  const r = reply.result;
  if (typeof r !== 'string' || !/^0x[0-9a-fA-F]{1,16}$/.test(r)) return { ok: false, why: 'eth_blockNumber result is not a quantity' };
  return { ok: true, height: Number.parseInt(r.slice(2), 16) };
};
