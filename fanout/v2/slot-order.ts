import { SLOT_STATUS_RANK, SlotStatusCode } from '../../bus/topics/stream-slot-status';

// "Each status once per slot, in order" for one v2 stream. The bus may repeat a status (redundant ingest; an ingest
// restart, or its tracker's cap, announcing a slot again) or carry one after a later one (the chain node processed
// a slot before ingest's last shred arrived), so
// each stream remembers, per slot, the rank of the last status it was sent (SLOT_STATUS_RANK) and lets through only
// a higher one. DEAD ends a slot, and is not sent once the slot is CONFIRMED or FINALIZED (the cluster settled it).
//
// Per stream, so a replay from any point obeys the rule for what that stream itself was sent. Bounded: at most
// MAX_SLOTS slots remembered, the first remembered forgotten first (slots arrive nearly in order, and a slot's
// statuses span ~13 s on a real cluster, ~40 slots); a status of a slot forgotten that long ago goes through.

const MAX_SLOTS = 512;
const DEAD = SLOT_STATUS_RANK[SlotStatusCode.dead];
const CONFIRMED = SLOT_STATUS_RANK[SlotStatusCode.confirmed];

export class SlotStatusOrder {
  private readonly ranks = new Map<bigint, number>();

  get size(): number {
    return this.ranks.size;
  }

  /** Whether `status` of `slot` may be sent now; if so it is recorded as sent. */
  admit(slot: bigint, status: SlotStatusCode): boolean {
    const prev = this.ranks.get(slot) ?? 0;
    if (prev === DEAD) return false;
    const r = SLOT_STATUS_RANK[status];
    if (status === SlotStatusCode.dead ? prev >= CONFIRMED : r <= prev) return false;
    if (prev === 0 && this.ranks.size >= MAX_SLOTS) this.ranks.delete(this.ranks.keys().next().value!);
    this.ranks.set(slot, r);
    return true;
  }
}
