import { decodeTransaction } from '../../../proto/txn/decode';
import type { Chain } from './chain';
import { leaderAt, type LeaderRotation } from './methods/cluster';

// The multi-leader run's banking stage: packets a leader's TPU received (the test/bench TPU servers hand them
// over) are executed in that leader's slots only. A leader buffers what reaches it before its window, up to
// HOLD_WINDOWS windows ahead (as the current and next leaders are sent to), and executes it when its window
// starts; a packet reaching a leader that leads neither now nor soon is dropped, as is whatever it still holds
// when its window ends. So only transactions that reach the right leader's TPU in time land.

export type TpuIntakeResult = 'executed' | 'held' | 'dropped' | 'rejected';

const HOLD_WINDOWS = 2;
const MAX_HELD = 10_000;

export class TpuIntake {
  private readonly held = new Map<string, Buffer[]>();
  private heldCount = 0;
  readonly counts: Record<TpuIntakeResult, number> = { executed: 0, held: 0, dropped: 0, rejected: 0 };

  constructor(private readonly chain: Chain, private readonly r: LeaderRotation) {
    chain.on('slot', (slot: number) => this.onSlot(slot));
  }

  /** Packets the TPU of `leader` received. */
  receive(leader: string, raw: Buffer): TpuIntakeResult {
    const slot = this.chain.slot;
    if (leaderAt(this.r, slot) === leader) return this.execute(raw);
    const w = this.r.windowSlots;
    const start = slot - (slot % w);
    for (let k = 1; k <= HOLD_WINDOWS; k++) {
      if (leaderAt(this.r, start + k * w) === leader) {
        if (this.heldCount >= MAX_HELD) break;
        let q = this.held.get(leader);
        if (q === undefined) this.held.set(leader, (q = []));
        q.push(raw);
        this.heldCount++;
        this.counts.held++;
        return 'held';
      }
    }
    this.counts.dropped++;
    return 'dropped';
  }

  private execute(raw: Buffer): TpuIntakeResult {
    const d = decodeTransaction(raw, BigInt(this.chain.slot));
    const ok = d.ok && this.chain.submit(raw, d.tx).ok;
    this.counts[ok ? 'executed' : 'rejected']++;
    return ok ? 'executed' : 'rejected';
  }

  private onSlot(slot: number): void {
    const now = leaderAt(this.r, slot);
    const q = this.held.get(now);
    if (q !== undefined) {
      this.held.delete(now);
      this.heldCount -= q.length;
      for (const raw of q) this.execute(raw);
    }
    if (slot % this.r.windowSlots !== 0) return;
    // A new window: whoever no longer leads soon drops what it holds.
    const soon = new Set<string>();
    for (let k = 0; k <= HOLD_WINDOWS; k++) soon.add(leaderAt(this.r, slot + k * this.r.windowSlots));
    for (const [l, held] of this.held) {
      if (soon.has(l)) continue;
      this.held.delete(l);
      this.heldCount -= held.length;
      this.counts.dropped += held.length;
    }
  }
}
