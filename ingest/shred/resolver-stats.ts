// The resolver's counters. Held as Counter objects registered up front, one per drop reason, so the hot path
// does `counter.inc()` and nothing is formatted until a scrape. Without a registry they are private to the
// resolver (tests, tools); with one they appear as meridian_ingest_* series.

import { Counter, type Registry } from '../../infra/base/metrics';
import { DROP_REASONS, type DropReason } from './drop-reasons';

export interface FecResolverStats {
  /** Shreds offered (parsed or not). */
  shreds: number;
  /** Shreds stored in an in-progress set after the proof (and signature) check. */
  accepted: number;
  /** Same position, same bytes apart from the retransmitter signature. */
  duplicates: number;
  /**
   * Shreds of an already completed set, carrying its signature. Any 32 of a set's 64 shards complete it, so
   * on a loss-free feed the other 32 land here: as many as were accepted. Not a sign of lateness or loss.
   */
  afterCompletion: number;
  completedSets: number;
  /** Sets that needed Reed–Solomon, and how many data shreds it rebuilt. */
  recoveredSets: number;
  recoveredShreds: number;
  equivocations: number;
  /** In-progress sets dropped for the cap or the slot window before completing. */
  evictedSets: number;
  newSlots: number;
  /** The slot window was dropped because nothing completed inside it for windowResetMs while shreds arrived outside it. */
  windowResets: number;
  dropped: Record<DropReason, number>;
}

type Plain = Exclude<keyof FecResolverStats, 'dropped'>;

const PLAIN: Record<Plain, [name: string, help: string]> = {
  shreds: ['meridian_ingest_resolver_shreds_total', 'Shreds offered to the FEC resolver'],
  accepted: ['meridian_ingest_shreds_accepted_total', 'Shreds proven and stored in an FEC set'],
  duplicates: ['meridian_ingest_shreds_duplicate_total', 'Duplicate shreds ignored (retransmitter signature aside)'],
  afterCompletion: ['meridian_ingest_shreds_after_completion_total', 'Shreds ignored because their FEC set was already complete (any 32 of 64 shards complete it, so a loss-free set adds 32; not lateness)'],
  completedSets: ['meridian_ingest_fec_sets_completed_total', 'FEC sets completed and handed to reassembly'],
  recoveredSets: ['meridian_ingest_fec_sets_recovered_total', 'FEC sets that needed Reed-Solomon recovery'],
  recoveredShreds: ['meridian_ingest_shreds_recovered_total', 'Data shreds rebuilt by Reed-Solomon'],
  equivocations: ['meridian_ingest_equivocations_total', 'Shreds proving a second signed root for an FEC set'],
  evictedSets: ['meridian_ingest_fec_sets_evicted_total', 'In-progress FEC sets evicted before completing'],
  newSlots: ['meridian_ingest_slots_seen_total', 'Slots seen for the first time (first verified shred)'],
  windowResets: ['meridian_ingest_slot_window_resets_total', 'Slot window resets after traffic moved outside it (cluster restart, jump)'],
};

export class ResolverCounters {
  readonly plain: Record<Plain, Counter>;
  readonly dropped: Record<DropReason, Counter>;

  constructor(registry?: Registry) {
    const plain: Partial<Record<Plain, Counter>> = {};
    for (const k of Object.keys(PLAIN) as Plain[]) {
      const [name, help] = PLAIN[k];
      plain[k] = registry === undefined ? new Counter() : registry.counter(name, help);
    }
    this.plain = plain as Record<Plain, Counter>;
    const dropped: Partial<Record<DropReason, Counter>> = {};
    for (const reason of DROP_REASONS) {
      dropped[reason] = registry === undefined
        ? new Counter({ reason })
        : registry.counter('meridian_ingest_shreds_dropped_total', 'Shreds dropped, by reason', { reason });
    }
    this.dropped = dropped as Record<DropReason, Counter>;
  }

  snapshot(): FecResolverStats {
    const dropped: Partial<Record<DropReason, number>> = {};
    for (const reason of DROP_REASONS) dropped[reason] = this.dropped[reason].value;
    const out: Partial<FecResolverStats> = { dropped: dropped as Record<DropReason, number> };
    for (const k of Object.keys(PLAIN) as Plain[]) out[k] = this.plain[k].value;
    return out as FecResolverStats;
  }
}
