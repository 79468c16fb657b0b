import bs58 from 'bs58';
import type { Chain } from '../chain';
import { invalidParams, RpcError } from '../rpc/errors';
import { commitment, config, isObj, pubkey, required, u64 } from '../rpc/params';
import { contextSlot, FEATURE_SET, NODE_VERSION, slotAt, withContext, type Methods } from './common';

// Node and cluster facts: version, identity, slots, epochs and the leader schedule. By default the identity
// leads every slot (what ingest's `rpc` leader mode reads to check shred signatures); with `leaders` (the
// multi-leader run) the schedule rotates through them every `windowSlots` slots and getClusterNodes lists each
// with its own TPU QUIC address.

const MAX_SLOT_LEADERS = 5000;
const MAX_PERFORMANCE_SAMPLES = 720;

export interface NodeAddress {
  rpc: string;
  shredVersion: number;
}

/** One leader identity of the multi-leader run and its TPU QUIC address (null or garbage: as a bad gossip entry). */
export interface LeaderSpec {
  identity: string;
  tpuQuic: string | null;
}

export interface LeaderRotation {
  leaders: LeaderSpec[];
  windowSlots: number;
}

export function leaderAt(r: LeaderRotation, slot: number): string {
  return r.leaders[Math.floor(slot / r.windowSlots) % r.leaders.length]!.identity;
}

export function clusterMethods(chain: Chain, addr: NodeAddress, rotation?: LeaderRotation): Methods {
  const spe = chain.p.slotsPerEpoch;
  const leader = (slot: number): string => (rotation === undefined ? chain.identityB58 : leaderAt(rotation, slot));
  const epochOf = (slot: number): number => Math.floor(slot / spe);
  return {
    getVersion: () => ({ 'feature-set': FEATURE_SET, 'solana-core': NODE_VERSION }),
    getHealth: () => 'ok',
    getIdentity: () => ({ identity: chain.identityB58 }),
    getGenesisHash: () => bs58.encode(chain.genesisHash),
    getSlot: (p) => contextSlot(chain, config(p[0])),
    getBlockHeight: (p) => {
      const cfg = config(p[0]);
      contextSlot(chain, cfg);
      return commitment(cfg) === 'processed' ? chain.blockHeight : chain.ledger.latest!.blockHeight;
    },
    getTransactionCount: (p) => {
      contextSlot(chain, config(p[0]));
      return chain.transactionsTotal;
    },
    getEpochInfo: (p) => {
      const cfg = config(p[0]);
      const slot = contextSlot(chain, cfg);
      return {
        absoluteSlot: slot,
        blockHeight: commitment(cfg) === 'processed' ? chain.blockHeight : chain.ledger.latest!.blockHeight,
        epoch: epochOf(slot),
        slotIndex: slot % spe,
        slotsInEpoch: spe,
        transactionCount: chain.transactionsTotal,
      };
    },
    getEpochSchedule: () => ({ firstNormalEpoch: 0, firstNormalSlot: 0, leaderScheduleSlotOffset: spe, slotsPerEpoch: spe, warmup: false }),
    getLeaderSchedule: (p) => {
      // [slot?, config?] — the first param may itself be the config object.
      let slotParam: unknown = p[0];
      let cfgParam: unknown = p[1];
      if (isObj(slotParam)) {
        cfgParam = slotParam;
        slotParam = undefined;
      }
      const cfg = config(cfgParam);
      const at = slotAt(chain, commitment(cfg));
      const slot = slotParam === undefined || slotParam === null ? at : u64(slotParam, 'slot');
      // Known a full epoch ahead (leaderScheduleSlotOffset = slotsPerEpoch), like a real cluster.
      if (epochOf(slot) > epochOf(at) + 1) return null;
      const first = epochOf(slot) * spe;
      const schedule: Record<string, number[]> = {};
      for (let i = 0; i < spe; i++) (schedule[leader(first + i)] ??= []).push(i);
      if (cfg.identity !== undefined && cfg.identity !== null) {
        pubkey(cfg.identity);
        const mine = schedule[cfg.identity as string];
        return mine === undefined ? {} : { [cfg.identity as string]: mine };
      }
      return schedule;
    },
    getSlotLeader: (p) => leader(contextSlot(chain, config(p[0]))),
    getSlotLeaders: (p) => {
      const start = u64(required(p, 0, 'start_slot'), 'start_slot');
      const limit = u64(required(p, 1, 'limit'), 'limit');
      if (limit > MAX_SLOT_LEADERS) throw invalidParams(`Invalid limit; max ${MAX_SLOT_LEADERS}`);
      return Array.from({ length: limit }, (_, i) => leader(start + i));
    },
    getClusterNodes: () => [
      ...(rotation?.leaders.filter((l) => l.identity !== chain.identityB58).map((l) => ({
        featureSet: FEATURE_SET,
        gossip: null,
        pubkey: l.identity,
        pubsub: null,
        rpc: null,
        serveRepair: null,
        shredVersion: addr.shredVersion,
        tpu: null,
        tpuForwards: null,
        tpuForwardsQuic: null,
        tpuQuic: l.tpuQuic,
        tpuVote: null,
        tvu: null,
        version: NODE_VERSION,
      })) ?? []),
      {
      featureSet: FEATURE_SET,
      gossip: null,
      pubkey: chain.identityB58,
      pubsub: addr.rpc,
      rpc: addr.rpc,
      serveRepair: null,
      shredVersion: addr.shredVersion,
      tpu: null,
      tpuForwards: null,
      tpuForwardsQuic: null,
      tpuQuic: null,
      tpuVote: null,
      tvu: null,
      version: NODE_VERSION,
    }],
    getVoteAccounts: () => ({ current: [], delinquent: [] }),
    getFirstAvailableBlock: () => chain.ledger.firstSlot(),
    minimumLedgerSlot: () => chain.ledger.firstSlot(),
    getMaxRetransmitSlot: () => chain.slot,
    getMaxShredInsertSlot: () => chain.slot,
    getStakeMinimumDelegation: (p) => withContext(contextSlot(chain, config(p[0])), 1_000_000_000),
    getHighestSnapshotSlot: () => {
      throw new RpcError(-32008, 'No snapshot');
    },
    getRecentPerformanceSamples: (p) => {
      const limit = p[0] === undefined ? MAX_PERFORMANCE_SAMPLES : u64(p[0], 'limit');
      if (limit > MAX_PERFORMANCE_SAMPLES) throw invalidParams(`Invalid limit; max ${MAX_PERFORMANCE_SAMPLES}`);
      // One sample per minute of the blocks held, newest first (agave samples every 60 s).
      const byMinute = new Map<number, { slot: number; numSlots: number; numTransactions: number }>();
      for (const b of chain.ledger.recentBlocks(Number.MAX_SAFE_INTEGER)) {
        const m = Math.floor(b.blockTime / 60);
        const s = byMinute.get(m) ?? { slot: b.slot, numSlots: 0, numTransactions: 0 };
        s.slot = b.slot;
        s.numSlots++;
        s.numTransactions += b.txs.length;
        byMinute.set(m, s);
      }
      return [...byMinute.values()].reverse().slice(0, limit).map((s) => ({ ...s, numNonVoteTransactions: s.numTransactions, samplePeriodSecs: 60 }));
    },
    getInflationGovernor: () => ({ foundation: 0.05, foundationTerm: 7, initial: 0.08, taper: 0.15, terminal: 0.015 }),
    getInflationRate: () => ({ epoch: epochOf(chain.slot), foundation: 0, total: 0, validator: 0 }),
    getInflationReward: (p) => {
      const keys = required(p, 0, 'addresses');
      if (!Array.isArray(keys)) throw invalidParams('invalid type: expected a sequence of pubkeys');
      keys.forEach(pubkey);
      // No stake, no vote accounts: nobody is rewarded.
      return keys.map(() => null);
    },
  };
}
