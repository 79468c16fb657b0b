import type { Chain } from '../chain';
import { invalidParams, minContextSlot } from '../rpc/errors';
import { commitment, optU64, type Commitment, type Raw } from '../rpc/params';

// What every method group shares: the handler type, the `context` wrapper and the slot a commitment reads at.

export type Handler = (params: unknown[]) => unknown;
export type Methods = Record<string, Handler>;

/** The version this node reports (getVersion, context.apiVersion): the agave line litesvm 1.4 executes. */
export const NODE_VERSION = '3.0.0';
export const FEATURE_SET = 3640012085;

/** processed reads the working slot; confirmed and finalized the last frozen block. */
export function slotAt(chain: Chain, c: Commitment): number {
  return c === 'processed' ? chain.slot : chain.root();
}

/** The commitment's slot, after agave's minContextSlot check (-32016 when the node is not there yet). */
export function contextSlot(chain: Chain, cfg: Raw): number {
  const slot = slotAt(chain, commitment(cfg));
  const min = optU64(cfg, 'minContextSlot');
  if (min !== undefined && slot < min) throw minContextSlot(slot);
  return slot;
}

export function withContext(slot: number, value: unknown): { context: { apiVersion: string; slot: number }; value: unknown } {
  return { context: { apiVersion: NODE_VERSION, slot }, value };
}

/** Historical reads (blocks, transactions) exist from `confirmed` on, as on a real node. */
export function historicalCommitment(cfg: Raw): Commitment {
  const c = commitment(cfg);
  if (c === 'processed') throw invalidParams('Method does not support commitment below `confirmed`');
  return c;
}
