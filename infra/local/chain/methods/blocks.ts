import bs58 from 'bs58';
import type { Chain } from '../chain';
import { encodeTxAccounts, encodeTxWithMeta, TX_ENCODINGS } from '../encode';
import type { Block } from '../ledger';
import { blockCleanedUp, blockNotAvailable, invalidParams } from '../rpc/errors';
import { config, isObj, oneOf, optBool, optU64, required, typeName, u64 } from '../rpc/params';
import { contextSlot, historicalCommitment, withContext, type Methods } from './common';

// Blocks and blockhashes. Every slot has a block (one leader, never skipped); blocks older than the ledger's
// window answer -32001 "cleaned up", blocks not frozen yet -32004.

const MAX_SLOT_RANGE = 500_000;
const DETAILS = ['full', 'accounts', 'signatures', 'none'] as const;

/** A block as getBlock (and blockNotification) returns it; null validates the config alone. */
export function encodeBlock(b: Block | null, cfg: Record<string, unknown>): Record<string, unknown> {
  const enc = oneOf(cfg, 'encoding', TX_ENCODINGS, 'json');
  const details = oneOf(cfg, 'transactionDetails', DETAILS, 'full');
  const max = optU64(cfg, 'maxSupportedTransactionVersion');
  const rewards = optBool(cfg, 'rewards', true) && optBool(cfg, 'showRewards', true);
  if (b === null) return {};
  const out: Record<string, unknown> = {
    blockHeight: b.blockHeight,
    blockTime: b.blockTime,
    blockhash: b.blockhash,
    parentSlot: b.parentSlot,
    previousBlockhash: b.previousBlockhash,
  };
  if (rewards) out.rewards = [];
  if (details === 'full') out.transactions = b.txs.map((r) => encodeTxWithMeta(r, enc, max));
  else if (details === 'accounts') out.transactions = b.txs.map((r) => encodeTxAccounts(r, max));
  else if (details === 'signatures') out.signatures = b.txs.map((r) => r.signature);
  return out;
}

export function blockMethods(chain: Chain): Methods {
  const frozenBlock = (slot: number): Block => {
    const b = chain.ledger.block(slot);
    if (b !== undefined) return b;
    if (slot < chain.ledger.firstSlot()) throw blockCleanedUp(slot, chain.ledger.firstSlot());
    throw blockNotAvailable(slot);
  };
  return {
    getLatestBlockhash: (p) => {
      const slot = contextSlot(chain, config(p[0]));
      const lb = chain.latestBlockhash();
      return withContext(slot, { blockhash: lb.blockhash, lastValidBlockHeight: lb.lastValidBlockHeight });
    },
    isBlockhashValid: (p) => {
      const h = required(p, 0, 'blockhash');
      if (typeof h !== 'string') throw invalidParams(`invalid type: ${typeName(h)}, expected a string`);
      const b = bs58.decodeUnsafe(h);
      if (b === undefined || b.length !== 32) throw invalidParams('Invalid param: Invalid');
      const slot = contextSlot(chain, config(p[1]));
      return withContext(slot, chain.blockhashValid(h));
    },
    getBlock: (p) => {
      const slot = u64(required(p, 0, 'slot'), 'slot');
      // The second param may be the encoding string (the deprecated form).
      const cfg = typeof p[1] === 'string' ? { encoding: p[1] } : config(p[1]);
      historicalCommitment(cfg);
      return encodeBlock(frozenBlock(slot), cfg);
    },
    getBlockTime: (p) => frozenBlock(u64(required(p, 0, 'slot'), 'slot')).blockTime,
    getBlocks: (p) => {
      const start = u64(required(p, 0, 'start_slot'), 'start_slot');
      let endParam: unknown = p[1];
      let cfgParam: unknown = p[2];
      if (isObj(endParam)) {
        cfgParam = endParam;
        endParam = undefined;
      }
      const cfg = config(cfgParam);
      historicalCommitment(cfg);
      const end = endParam === undefined || endParam === null ? chain.root() : u64(endParam, 'end_slot');
      if (end - start > MAX_SLOT_RANGE) throw invalidParams(`Slot range too large; max ${MAX_SLOT_RANGE}`);
      return end < start ? [] : chain.ledger.slots(start, end, MAX_SLOT_RANGE);
    },
    getBlocksWithLimit: (p) => {
      const start = u64(required(p, 0, 'start_slot'), 'start_slot');
      const limit = u64(required(p, 1, 'limit'), 'limit');
      historicalCommitment(config(p[2]));
      if (limit > MAX_SLOT_RANGE) throw invalidParams(`Limit too large; max ${MAX_SLOT_RANGE}`);
      return chain.ledger.slots(start, Number.MAX_SAFE_INTEGER, limit);
    },
    getBlockCommitment: (p) => {
      u64(required(p, 0, 'slot'), 'slot');
      return { commitment: null, totalStake: 0 };
    },
    getBlockProduction: (p) => {
      const cfg = config(p[0]);
      const slot = contextSlot(chain, cfg);
      const first = chain.ledger.firstSlot();
      const n = slot - first + 1;
      return withContext(slot, { byIdentity: { [chain.identityB58]: [n, n] }, range: { firstSlot: first, lastSlot: slot } });
    },
  };
}
