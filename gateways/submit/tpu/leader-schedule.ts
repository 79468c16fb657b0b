import { isIP } from 'node:net';

// Who leads the next slots and where their TPU listens: pure state, fed by the tracker (leader-tracker.ts)
// from the chain node's getSlotLeaders / getClusterNodes and the slot estimate. The route asks it for the
// leaders of the next windows (4 slots each, NUM_CONSECUTIVE_LEADER_SLOTS in Agave), as Agave's client does:
// window 0 is the one holding the current slot.

/** Agave's NUM_CONSECUTIVE_LEADER_SLOTS (solana-clock). */
export const LEADER_WINDOW_SLOTS = 4;

export interface LeaderWindow {
  /** The leader's identity (base58 public key). */
  identity: string;
  /** Its TPU QUIC address `ip:port`, or null when the cluster nodes gave none (or garbage). */
  tpu: string | null;
  firstSlot: number;
}

/** `ip:port` from getClusterNodes' tpuQuic, or null when it is missing or not an IP address and port. */
export function parseTpuAddress(v: unknown): string | null {
  if (typeof v !== 'string' || v.length > 64) return null;
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):(\d{1,5})$/.exec(v);
  if (m === null) return null;
  const ip = m[1] ?? m[2]!;
  const port = Number(m[3]);
  if (isIP(ip) === 0 || port < 1 || port > 65535) return null;
  return m[1] !== undefined ? `[${ip}]:${port}` : `${ip}:${port}`;
}

export class LeaderSchedule {
  private start = 0;
  private leaders: string[] = [];
  private readonly tpu = new Map<string, string | null>();
  private slot: number | null = null;

  /** The newest slot estimate (slots only move forward: an older report is ignored). Returns true if it moved. */
  noteSlot(slot: number): boolean {
    if (this.slot !== null && slot <= this.slot) return false;
    this.slot = slot;
    return true;
  }

  currentSlot(): number | null {
    return this.slot;
  }

  /** getSlotLeaders(start, n)'s answer. */
  setLeaders(start: number, leaders: string[]): void {
    this.start = start;
    this.leaders = leaders;
  }

  /** Slots known ahead of the estimate (0 when the estimate is past the schedule or unknown). */
  knownAhead(): number {
    if (this.slot === null) return 0;
    return Math.max(0, this.start + this.leaders.length - this.slot);
  }

  /** getClusterNodes' pubkey → tpuQuic (parsed; null = none usable). Replaces the whole book. */
  setNodes(nodes: Map<string, string | null>): void {
    this.tpu.clear();
    for (const [k, v] of nodes) this.tpu.set(k, v);
  }

  leaderAt(slot: number): string | undefined {
    return this.leaders[slot - this.start];
  }

  /** The identity whose TPU is at `addr` (for the sender's per-peer counters), if any. */
  identityOf(addr: string): string | undefined {
    for (const [k, v] of this.tpu) if (v === addr) return k;
    return undefined;
  }

  /**
   * The leaders of the next `n` windows from the current slot, one entry per distinct leader in order (a leader
   * of two consecutive windows appears once), or null when the slot or the schedule for it is not known.
   */
  windows(n: number): LeaderWindow[] | null {
    if (this.slot === null) return null;
    const out: LeaderWindow[] = [];
    const first = this.slot - (this.slot % LEADER_WINDOW_SLOTS);
    for (let w = 0; w < n; w++) {
      const s = w === 0 ? this.slot : first + w * LEADER_WINDOW_SLOTS;
      const id = this.leaderAt(s);
      if (id === undefined) {
        if (w === 0) return null;
        break;
      }
      if (out.some((o) => o.identity === id)) continue;
      out.push({ identity: id, tpu: this.tpu.get(id) ?? null, firstSlot: s });
    }
    return out;
  }
}
