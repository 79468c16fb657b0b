import bs58 from 'bs58';
import type { LeaderSource } from './config';
import { jsonRpc } from '../infra/base/json-rpc';
import type { Log } from '../infra/base/log';
import { fixedLeader, NO_LEADER_CHECK, type LeaderKeys } from './shred/leader-keys';

// Slot → leader key for the FEC resolver's signature check, from the configured source:
//   off   — no check (NO_LEADER_CHECK);
//   fixed — one key for every slot;
//   rpc   — the chain's leader schedule over JSON-RPC: getEpochInfo says where the current epoch starts,
//           getLeaderSchedule(firstSlotOfEpoch) maps each leader identity to its slot offsets in that epoch.
//           The current and next epoch are fetched (the schedule is known an epoch ahead), the previous one kept
//           for late shreds; refreshed every refreshMs. Until a schedule covers a slot it answers 'unknown'
//           and the resolver drops those shreds: never accept what cannot be checked.
// The RPC URL may carry a key: it is never logged (the client's errors name the method and the kind of failure or the
// node's error code and message, never the URL).

const MAX_EPOCHS = 3;
/** No real epoch is longer (mainnet: 432,000 slots); bounds what an RPC answer can make us allocate. */
const MAX_SLOTS_PER_EPOCH = 1 << 22;

interface EpochSchedule {
  epoch: number;
  firstSlot: number;
  /** leaders[slot - firstSlot] = index into keys, or NONE. */
  leaders: Uint32Array;
  keys: Buffer[];
}
const NONE = 0xffffffff;

export interface LeaderScheduleHandle extends LeaderKeys {
  /** Resolves after the first refresh attempt (success or not). */
  readonly ready: Promise<void>;
  epochs(): number[];
  close(): void;
}

/** The calls the schedule makes; by default the project's JSON-RPC client (infra/base/json-rpc.ts), injectable for tests. */
export type RpcCall = (method: string, params: unknown[]) => Promise<unknown>;

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const isSlotNum = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function parseEpochInfo(v: unknown): { epoch: number; firstSlot: number; slotsInEpoch: number; absoluteSlot: number } {
  if (!isObj(v) || !isSlotNum(v.epoch) || !isSlotNum(v.absoluteSlot) || !isSlotNum(v.slotIndex) || !isSlotNum(v.slotsInEpoch)) {
    throw new Error('getEpochInfo: unexpected result shape');
  }
  if (v.slotsInEpoch === 0 || v.slotsInEpoch > MAX_SLOTS_PER_EPOCH || v.slotIndex > v.absoluteSlot) throw new Error('getEpochInfo: implausible values');
  return { epoch: v.epoch, firstSlot: v.absoluteSlot - v.slotIndex, slotsInEpoch: v.slotsInEpoch, absoluteSlot: v.absoluteSlot };
}

/** getLeaderSchedule result → per-slot leader table; offsets outside the epoch are ignored. */
export function scheduleFromRpc(epoch: number, firstSlot: number, slotsInEpoch: number, v: unknown): EpochSchedule | null {
  if (v === null) return null; // the node does not know that epoch's schedule yet
  if (!isObj(v)) throw new Error('getLeaderSchedule: unexpected result shape');
  const leaders = new Uint32Array(slotsInEpoch).fill(NONE);
  const keys: Buffer[] = [];
  for (const [identity, offsets] of Object.entries(v)) {
    let key: Uint8Array | undefined;
    try {
      key = bs58.decodeUnsafe(identity);
    } catch {
      key = undefined;
    }
    if (key === undefined || key.length !== 32 || !Array.isArray(offsets)) continue;
    const k = keys.push(Buffer.from(key)) - 1;
    for (const o of offsets) if (isSlotNum(o) && o < slotsInEpoch) leaders[o] = k;
  }
  return { epoch, firstSlot, leaders, keys };
}

export class RpcLeaderSchedule implements LeaderScheduleHandle {
  readonly ready: Promise<void>;
  private readonly byEpoch = new Map<number, EpochSchedule>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private failures = 0;
  private inflight: Promise<void> | null = null;

  constructor(
    private readonly rpc: RpcCall,
    refreshMs: number,
    private readonly log?: Log,
  ) {
    this.ready = this.refresh();
    this.timer = setInterval(() => void this.refresh(), refreshMs);
    this.timer.unref();
  }

  leaderFor(slot: number): Buffer | 'unknown' {
    for (const s of this.byEpoch.values()) {
      const i = slot - s.firstSlot;
      if (i >= 0 && i < s.leaders.length) {
        const k = s.leaders[i]!;
        return k === NONE ? 'unknown' : s.keys[k]!;
      }
    }
    return 'unknown';
  }

  epochs(): number[] {
    return [...this.byEpoch.keys()].sort((a, b) => a - b);
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
  }

  /** Never rejects: a failed refresh keeps the schedules already held and is logged (rate-limited by count). */
  refresh(): Promise<void> {
    // A slow node must not pile refreshes up: join the one in flight.
    this.inflight ??= this.doRefresh().finally(() => (this.inflight = null));
    return this.inflight;
  }

  private async doRefresh(): Promise<void> {
    try {
      const info = parseEpochInfo(await this.rpc('getEpochInfo', [{ commitment: 'confirmed' }]));
      const wanted = [
        { epoch: info.epoch, firstSlot: info.firstSlot },
        { epoch: info.epoch + 1, firstSlot: info.firstSlot + info.slotsInEpoch },
      ];
      for (const w of wanted) {
        if (this.closed || this.byEpoch.has(w.epoch)) continue;
        const raw = await this.rpc('getLeaderSchedule', [w.firstSlot, { commitment: 'confirmed' }]);
        const s = scheduleFromRpc(w.epoch, w.firstSlot, info.slotsInEpoch, raw);
        if (s !== null) this.byEpoch.set(w.epoch, s);
      }
      for (const e of this.epochs()) if (e < info.epoch - 1 || this.byEpoch.size > MAX_EPOCHS) this.byEpoch.delete(e);
      if (this.failures > 0) this.log?.info({ after: this.failures }, 'leader schedule refresh recovered');
      this.failures = 0;
    } catch (e) {
      this.failures++;
      // 1st, 10th, 100th… failure: enough to see it, never a flood.
      if (Number.isInteger(Math.log10(this.failures))) {
        this.log?.warn({ reason: e instanceof Error ? e.message : 'error', failures: this.failures, epochs: this.epochs() }, 'leader schedule refresh failed');
      }
    }
  }
}

/** The LeaderKeys of a configured source. `rpc` may be injected (tests); by default JSON-RPC over fetch (10 s per call). */
export function leaderKeysFor(src: LeaderSource, log?: Log, rpc?: RpcCall): LeaderScheduleHandle {
  if (src.mode === 'rpc') return new RpcLeaderSchedule(rpc ?? jsonRpc(src.rpcUrl), src.refreshMs, log);
  const keys = src.mode === 'fixed' ? fixedLeader(src.key) : NO_LEADER_CHECK;
  return { ready: Promise.resolve(), leaderFor: (slot) => keys.leaderFor(slot), epochs: () => [], close: () => undefined };
}
