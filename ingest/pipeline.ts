import { Counter, type Registry } from '../infra/base/metrics';
import type { Log } from '../infra/base/log';
import { decodeEntryBatch, ENTRY_REASONS, type BatchDecode, type Entry, type EntryReason } from './entry/entries';
import { BlockRefs } from './entry/block-ref';
import { BatchReassembler, type EntryBatch } from './entry/reassembler';
import { PARSE_REJECTS, type DropReason } from './shred/drop-reasons';
import { FecResolver } from './shred/fec-resolver';
import { VARIANT_OFF } from './shred/layout';
import type { LeaderKeys } from './shred/leader-keys';
import { SlotStatusTracker, type BlockFormat, type SlotStatusEvent } from './slot-status';
import type { DecodedTxn } from '../proto/txn/decode';
import { TXN_REASON_CODES, type TxnReason } from '../proto/txn/reasons';

// The packet pipeline, with no I/O: push(packet) → parse + FEC resolver (dedupe, proof, leader signature,
// Reed–Solomon) → batch reassembly → entry decode → sink. The sink publishes (publish-sink.ts) or collects
// (the decode CLI). push() never throws: anything unexpected is counted as 'internal' and logged at a
// rate-limited warn, and every stage bounds its own state, so hostile input costs counters, not memory.

export interface BatchOutput {
  batch: EntryBatch;
  decode: BatchDecode;
  /** The entries decoded completely (all of them when decode.ok). */
  entries: Entry[];
  /** Their transactions, flattened in order, then (on failure) those decoded before it in the entry it hit. */
  txs: DecodedTxn[];
  /** The block its records belong to as far as known now: the `blk` record header (bus/topics/block-ref.ts). */
  block?: Buffer;
}

export interface PipelineSink {
  /** Called synchronously from push() for each reassembled batch; empty batches too. */
  batch(out: BatchOutput): void;
  /** A slot's first verified shred (spec/shreds.md §4). */
  slot(slot: bigint, firstSeenMs: number): void;
  /** A status the shreds show for a slot (slot-status.ts): each at most once per slot, in order. */
  slotStatus?(e: SlotStatusEvent): void;
}

export interface PipelineOptions {
  sink: PipelineSink;
  /** null = accept any shred_version. */
  shredVersion?: number | null;
  /** null = no leader signature check. */
  leaders?: LeaderKeys | null;
  slotWindow?: number;
  /** Quiet time after which traffic outside the slot window re-anchors every stage (default 10 s). */
  windowResetMs?: number;
  maxPendingSets?: number;
  /** Slots whose statuses are tracked at once (default 2 × slotWindow + 64). */
  maxStatusSlots?: number;
  /** Which block rules apply (slot-status.ts; default 'auto'). */
  blockFormat?: BlockFormat;
  /** Counters go here as meridian_ingest_* series (the process registry in production; none in tests). */
  registry?: Registry;
  log?: Log;
  warnEveryMs?: number;
}

const VARIANTS = ['0x96', '0xb6', '0x66', '0x76'] as const;
type VariantName = (typeof VARIANTS)[number];
const PARSE_REJECT_SET: ReadonlySet<string> = new Set(PARSE_REJECTS);
const BATCH_REASONS = Object.keys(ENTRY_REASONS) as EntryReason[];

export interface PipelineStats {
  packets: number;
  shreds: Record<VariantName, number>;
  drops: Record<DropReason | 'internal', number>;
  setsCompleted: number;
  setsRecovered: number;
  shredsRecovered: number;
  equivocations: number;
  duplicates: number;
  /** Re-anchors (each on a verified shred), by cause. */
  windowResets: Record<'below' | 'above', number>;
  /** Leader-signature verifies run by outcome and source class, and those the root cache saved. */
  verifies: ReturnType<FecResolver['stats']>['verifies'];
  verifyCache: ReturnType<FecResolver['stats']>['verifyCache'];
  completedRootHits: number;
  slots: number;
  batches: number;
  batchesInvalid: Record<EntryReason, number>;
  batchesInferredStart: number;
  batchesAbandoned: number;
  entries: number;
  transactions: number;
  transactionsInvalid: Record<TxnReason, number>;
  /** Transactions of an unknown version (each ended its batch), by version number. */
  unknownTxVersions: Record<number, number>;
}

/** Slots already logged for an unknown transaction version (bounded: cleared when full). */
const UNKNOWN_VERSION_LOGGED_SLOTS = 1024;

function counters<K extends string>(keys: readonly K[], make: (k: K) => Counter): Record<K, Counter> {
  const out: Partial<Record<K, Counter>> = {};
  for (const k of keys) out[k] = make(k);
  return out as Record<K, Counter>;
}

function values<K extends string>(c: Record<K, Counter>): Record<K, number> {
  const out: Partial<Record<K, number>> = {};
  for (const k of Object.keys(c) as K[]) out[k] = c[k].value;
  return out as Record<K, number>;
}

/** The pipeline's own counters (the resolver keeps its own); registered up front so inc() builds nothing. */
function pipelineCounters(r: Registry | undefined) {
  const counter = (name: string, help: string, labels?: Record<string, string>): Counter => (r === undefined ? new Counter(labels) : r.counter(name, help, labels));
  return {
    packets: counter('meridian_ingest_packets_total', 'UDP payloads pushed into the pipeline'),
    shreds: counters(VARIANTS, (v) => counter('meridian_ingest_shreds_total', 'Parsed shreds by variant', { variant: v })),
    internal: counter('meridian_ingest_internal_errors_total', 'Packets that hit an unexpected error (bug guard)'),
    batches: counter('meridian_ingest_batches_total', 'Entry batches reassembled'),
    batchesInvalid: counters(BATCH_REASONS, (k) => counter('meridian_ingest_batches_invalid_total', 'Entry batches that failed to decode, by reason', { reason: k })),
    entries: counter('meridian_ingest_entries_total', 'Entries decoded'),
    transactions: counter('meridian_ingest_transactions_total', 'Transactions decoded'),
    txInvalid: counters(TXN_REASON_CODES, (k) => counter('meridian_ingest_transactions_invalid_total', 'Transactions that failed to decode, by reason', { reason: k })),
  };
}

export class Pipeline {
  private readonly resolver: FecResolver;
  private readonly reassembler: BatchReassembler<BatchDecode>;
  private readonly blockRefs = new BlockRefs();
  private readonly statuses: SlotStatusTracker;
  private readonly sink: PipelineSink;
  private readonly log: Log | undefined;
  private readonly warnEveryMs: number;
  private lastWarnMs = -Infinity;
  private readonly c: ReturnType<typeof pipelineCounters>;
  private readonly registry: Registry | undefined;
  /** Per unknown version (0..127), made on first sight: rare, and a label set bounded by the byte. */
  private readonly unknownVersions = new Map<number, Counter>();
  private readonly unknownLoggedSlots = new Set<bigint>();

  constructor(opts: PipelineOptions) {
    const r = opts.registry;
    this.registry = r;
    this.c = pipelineCounters(r);
    this.sink = opts.sink;
    this.log = opts.log;
    this.warnEveryMs = opts.warnEveryMs ?? 10_000;
    const slotWindow = opts.slotWindow ?? 512;
    const sink = this.sink;
    this.statuses = new SlotStatusTracker({
      maxSlots: opts.maxStatusSlots ?? 2 * slotWindow + 64,
      emit: sink.slotStatus === undefined ? () => {} : (e) => sink.slotStatus!(e),
      registry: r,
      blockFormat: opts.blockFormat,
    });
    this.resolver = new FecResolver({
      leaders: opts.leaders ?? null,
      shredVersion: opts.shredVersion ?? null,
      slotWindow,
      windowResetMs: opts.windowResetMs,
      registry: r,
      onNewSlot: (slot, ms) => {
        this.sink.slot(slot, ms);
        this.statuses.firstShred(slot, ms);
      },
      // The reassembler keeps its own window and per-slot marks: re-anchor it with the resolver, or a feed that
      // moved below the old window completes sets that reassembly then drops as stale (a cluster restart). The
      // status tracker too: after a restart slot numbers repeat with other content. One line per reset: only a
      // verified shred causes one, and at most one per windowResetMs.
      onWindowReset: (r) => {
        this.reassembler.reset();
        this.blockRefs.reset();
        this.statuses.reset();
        this.log?.warn(
          { cause: r.cause, slot: r.slot, previousHighest: r.previousHighest, quietMs: Math.round(r.quietMs) },
          `ingest re-anchored: a verified shred ${r.cause === 'below' ? 'below' : 'above'} the slot window after ${Math.round(r.quietMs)} ms without a completed set; per-slot state dropped (sets already published stay published)`,
        );
      },
    });
    this.reassembler = new BatchReassembler<BatchDecode>({ slotWindow, maxPendingSets: opts.maxPendingSets, decode: decodeEntryBatch });
  }

  /** `source`: the sending address, for the per-source verify budgets (absent for captures and tests). */
  push(packet: Buffer, arrivalMs: number, source?: string): void {
    this.c.packets.inc();
    try {
      const out = this.resolver.push(packet, arrivalMs, source);
      if (out.kind === 'rejected' && PARSE_REJECT_SET.has(out.reason)) return;
      this.countVariant(packet[VARIANT_OFF]!);
      if (out.kind === 'completes') {
        this.statuses.setCompleted(out.set, arrivalMs);
        for (const r of this.reassembler.push(out.set)) {
          this.emit(r.batch, r.decoded);
          this.statuses.batch(r.batch, r.decoded, arrivalMs);
        }
      } else if (out.kind === 'equivocation') {
        this.statuses.equivocation(BigInt(out.slot), out.fecSetIndex, arrivalMs);
        this.warn({ slot: out.slot, fecSetIndex: out.fecSetIndex }, 'equivocation: a second signed root for an FEC set');
      }
    } catch (e) {
      this.c.internal.inc();
      this.warn({ err: e, internalErrors: this.c.internal.value }, 'ingest pipeline: unexpected error; packet dropped');
    }
  }

  /** The address has sent a verified shred: the receive queue serves it first when it backs up. */
  isGoodSource(source: string): boolean {
    return this.resolver.isGoodSource(source);
  }

  private countVariant(v: number): void {
    // Parsed shreds are one of the four live variants (depth 6); anything else was rejected by the parser.
    if (v === 0x96) this.c.shreds['0x96'].inc();
    else if (v === 0xb6) this.c.shreds['0xb6'].inc();
    else if (v === 0x66) this.c.shreds['0x66'].inc();
    else if (v === 0x76) this.c.shreds['0x76'].inc();
  }

  private emit(batch: EntryBatch, decode: BatchDecode): void {
    this.c.batches.inc();
    const entries = decode.entries;
    if (!decode.ok) {
      this.c.batchesInvalid[decode.reason].inc();
      if (decode.txReason !== undefined) this.c.txInvalid[decode.txReason].inc();
      if (decode.unknownVersion !== undefined) this.unknownVersion(batch.slot, decode.unknownVersion, decode.partial.length);
    }
    const txs: DecodedTxn[] = [];
    for (const e of entries) for (const t of e.txs) txs.push(t);
    // The transactions before the failure in the entry it hit are whole and verified-by-length: publish them too.
    if (!decode.ok) for (const t of decode.partial) txs.push(t);
    this.c.entries.inc(entries.length);
    this.c.transactions.inc(txs.length);
    this.blockRefs.observe(batch, decode.ok ? decode.marker : null);
    this.sink.batch({ batch, decode, entries, txs, block: this.blockRefs.refFor(batch) });
  }

  /** Counts a transaction of an unknown version and logs it once per slot (a new version shows up slot after slot). */
  private unknownVersion(slot: bigint, version: number, keptInEntry: number): void {
    let c = this.unknownVersions.get(version);
    if (c === undefined) {
      const labels = { version: String(version) };
      const help = 'Transactions of a version the decoder does not know (each ends its entry batch), by version';
      c = this.registry === undefined ? new Counter(labels) : this.registry.counter('meridian_ingest_transactions_unknown_version_total', help, labels);
      this.unknownVersions.set(version, c);
    }
    c.inc();
    if (this.unknownLoggedSlots.has(slot)) return;
    if (this.unknownLoggedSlots.size >= UNKNOWN_VERSION_LOGGED_SLOTS) this.unknownLoggedSlots.clear();
    this.unknownLoggedSlots.add(slot);
    this.log?.warn({ slot: slot.toString(), version, keptInEntry }, 'transaction of an unknown version: the rest of its entry batch is skipped (logged once per slot)');
  }

  private warn(obj: Record<string, unknown>, msg: string): void {
    const t = Date.now();
    if (t - this.lastWarnMs < this.warnEveryMs) return;
    this.lastWarnMs = t;
    this.log?.warn(obj, msg);
  }

  stats(): PipelineStats {
    const rs = this.resolver.stats();
    const as = this.reassembler.stats;
    return {
      packets: this.c.packets.value,
      shreds: values(this.c.shreds),
      drops: { ...rs.dropped, internal: this.c.internal.value },
      setsCompleted: rs.completedSets,
      setsRecovered: rs.recoveredSets,
      shredsRecovered: rs.recoveredShreds,
      equivocations: rs.equivocations,
      duplicates: rs.duplicates,
      windowResets: rs.windowResetsBy,
      verifies: rs.verifies,
      verifyCache: rs.verifyCache,
      completedRootHits: rs.completedRootHits,
      slots: rs.newSlots,
      batches: this.c.batches.value,
      batchesInvalid: values(this.c.batchesInvalid),
      batchesInferredStart: as.batchesInferredStart,
      batchesAbandoned: as.abandonedBatches,
      entries: this.c.entries.value,
      transactions: this.c.transactions.value,
      transactionsInvalid: values(this.c.txInvalid),
      unknownTxVersions: Object.fromEntries([...this.unknownVersions].map(([v, c]) => [v, c.value])),
    };
  }

  /** State sizes, for bounds checks (fuzz tests) and gauges. */
  sizes(): { inProgressSets: number; completedSetsHeld: number; reassemblySlots: number; pendingSets: number; statusSlots: number; goodSources: number; unprovenSources: number; provenRoots: number; failedRoots: number; completedRoots: number } {
    const rs = this.resolver.stats();
    const a = this.reassembler.sizes();
    return {
      inProgressSets: rs.inProgressSets, completedSetsHeld: rs.completedSetsHeld, reassemblySlots: a.slots, pendingSets: a.pendingSets, statusSlots: this.statuses.size,
      goodSources: rs.sources.good, unprovenSources: rs.sources.unproven, provenRoots: rs.roots.proven, failedRoots: rs.roots.failed, completedRoots: rs.roots.completed,
    };
  }

  /** Slot statuses derived so far, by status (and the tracker's evictions and decode failures). */
  slotStatusCounts(): ReturnType<SlotStatusTracker['counts']> {
    return this.statuses.counts();
  }
}

/** Epoch milliseconds with sub-ms precision, on the monotonic clock (arrival and publish times share it). */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}
