import type { HealthProbe } from '../core';

// Health of an EVM node, from eth_blockNumber:
//   - it answers with a block number;
//   - it keeps up with the chain's other upstreams: the pool compares heights, and more than maxLagBlocks behind
//     the best one is unhealthy;
//   - it makes progress: a block number unchanged for longer than maxStallMs is unhealthy (a stuck node serves
//     stale state even when it is the only one). 0 turns this off — for nodes that only mine on demand (anvil
//     without a block time). Any change of the number counts as progress, a drop too (a restarted dev node).
// A node comes back as soon as a probe finds it answering, caught up and moving.

const BODY = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';

export function blockNumberProbe(maxStallMs: number, now: () => number = Date.now): HealthProbe {
  const seen = new Map<number, { height: number; since: number }>();
  return async (call, upstream) => {
    const reply = (await call(BODY)) as { result?: unknown; error?: { message?: unknown } } | null;
    if (reply === null || typeof reply !== 'object') return { ok: false, why: 'eth_blockNumber reply is not an object' };
    if (reply.error !== undefined) return { ok: false, why: `eth_blockNumber error: ${String(reply.error.message ?? 'unknown')}`.slice(0, 200) };
    const r = reply.result;
    if (typeof r !== 'string' || !/^0x[0-9a-fA-F]{1,13}$/.test(r)) return { ok: false, why: 'eth_blockNumber result is not a block number' };
    const height = Number.parseInt(r.slice(2), 16);
    const t = now();
    const prev = seen.get(upstream.index);
    if (prev === undefined || prev.height !== height) {
      seen.set(upstream.index, { height, since: t });
      return { ok: true, height };
    }
    if (maxStallMs > 0 && t - prev.since > maxStallMs) return { ok: false, height, why: `no new block for ${Math.round((t - prev.since) / 1000)} s` };
    return { ok: true, height };
  };
}
