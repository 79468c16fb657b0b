// The resolver's counters. Held as Counter objects registered up front, one per drop reason, so the hot path
// does `counter.inc()` and nothing is formatted until a scrape. Without a registry they are private to the
// resolver (tests, tools); with one they appear as meridian_ingest_* series.

import { Counter, type Registry } from '../../infra/base/metrics';
import { DROP_REASONS, type DropReason } from './drop-reasons';
import type { SourceClass } from './source-budget';

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
  /** Shreds opening a set whose root already completed (after an eviction or a re-anchor): ignored, not reassembled again. */
  completedRootHits: number;
  /**
   * The slot window was dropped because nothing completed inside it for windowResetMs and a shred arrived
   * outside it (below: a cluster restart, an old capture; above: a jump ahead). Only a verified shred does this.
   */
  windowResets: number;
  windowResetsBy: Record<ResetCause, number>;
  /** Leader-signature verifies run, by outcome and by the class of the sending address (source-budget.ts). */
  verifies: Record<VerifyOutcome, Record<SourceClass, number>>;
  /** Verifies saved by signed-roots.ts: a proven root, a proven signature over another root (forged), a known failure. */
  verifyCache: Record<'proven' | 'forged' | 'failed', number>;
  dropped: Record<DropReason, number>;
}

export type ResetCause = 'below' | 'above';
export type VerifyOutcome = 'ok' | 'fail';
const RESET_CAUSES: readonly ResetCause[] = ['below', 'above'];
const OUTCOMES: readonly VerifyOutcome[] = ['ok', 'fail'];
const CLASSES: readonly SourceClass[] = ['good', 'unproven'];
const CACHE_RESULTS = ['proven', 'forged', 'failed'] as const;

type Plain = Exclude<keyof FecResolverStats, 'dropped' | 'windowResets' | 'windowResetsBy' | 'verifies' | 'verifyCache'>;

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
  completedRootHits: ['meridian_ingest_shreds_completed_root_total', 'Shreds of a set whose root already completed, arriving after its state was dropped (eviction, re-anchor): ignored'],
};

export class ResolverCounters {
  readonly plain: Record<Plain, Counter>;
  readonly dropped: Record<DropReason, Counter>;
  readonly resets: Record<ResetCause, Counter>;
  readonly verifies: Record<VerifyOutcome, Record<SourceClass, Counter>>;
  readonly verifyCache: Record<(typeof CACHE_RESULTS)[number], Counter>;

  constructor(registry?: Registry) {
    const counter = (name: string, help: string, labels: Record<string, string>): Counter => (registry === undefined ? new Counter(labels) : registry.counter(name, help, labels));
    this.resets = Object.fromEntries(RESET_CAUSES.map((cause) => [cause, counter('meridian_ingest_slot_window_resets_total', 'Slot window resets (re-anchors) on a verified shred outside the window after the quiet time, by where the traffic went', { cause })])) as Record<ResetCause, Counter>;
    this.verifies = Object.fromEntries(OUTCOMES.map((outcome) => [outcome, Object.fromEntries(CLASSES.map((source) => [source, counter('meridian_ingest_signature_verifies_total', 'Leader-signature verifies run, by outcome and by sending-address class (good: has sent a verified shred)', { outcome, source })]))])) as Record<VerifyOutcome, Record<SourceClass, Counter>>;
    this.verifyCache = Object.fromEntries(CACHE_RESULTS.map((result) => [result, counter('meridian_ingest_signature_verifies_saved_total', 'Verifies not run: root already proven, proven signature over another root (forgery), pair already failed', { result })])) as Record<(typeof CACHE_RESULTS)[number], Counter>;
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
    out.windowResetsBy = { below: this.resets.below.value, above: this.resets.above.value };
    out.windowResets = this.resets.below.value + this.resets.above.value;
    out.verifies = {
      ok: { good: this.verifies.ok.good.value, unproven: this.verifies.ok.unproven.value },
      fail: { good: this.verifies.fail.good.value, unproven: this.verifies.fail.unproven.value },
    };
    out.verifyCache = { proven: this.verifyCache.proven.value, forged: this.verifyCache.forged.value, failed: this.verifyCache.failed.value };
    return out as FecResolverStats;
  }
}
