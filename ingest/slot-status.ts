import { SlotStatusCode, type BlockIdentity } from '../bus/topics/stream-slot-status';
import { Counter, type Registry } from '../infra/base/metrics';
import { DATA_SHREDS_PER_SET, type CompletedFecSet } from './fec-set';
import type { EntryBatch } from './entry/reassembler';
import type { BatchDecode } from './entry/entries';
import { MARKER_REASONS, type ParsedMarker } from './entry/block-component';
import { judgeBlock, type BlockPart } from './entry/block-rules';
import { blockId } from './entry/block-id';

// What the shreds say about each slot, derived from the pipeline's verified outputs (no I/O): every status at most
// once per slot, in this order, and nothing after dead:
//
//   first shred received  the resolver verified the slot's first shred (spec/shreds.md §4)
//   completed             every FEC set from 0 through the one whose last data shred carries LAST_IN_SLOT has
//                         completed (received or rebuilt by Reed–Solomon): all the slot's data shreds are present.
//                         Sets hold 32 data shreds each and LAST_IN_SLOT sits on a set's last shred (parse.ts), so
//                         the flag gives the count: (its set index / 32 + 1) sets.
//   decoded               every entry batch of the slot decoded cleanly, through the batch ending on that shred.
//                         A batch that fails to decode (or an unknown transaction version) keeps the slot from
//                         `decoded` and is counted; it does not make the slot dead (the decoder may be behind).
//   dead                  the shreds contradict each other: two signed Merkle roots for one FEC set (equivocation,
//                         reported by the resolver), two different sets flagged LAST_IN_SLOT, or a set past the
//                         one flagged LAST_IN_SLOT (Agave's duplicate-slot proofs call the last two a last-index
//                         conflict). And for an Alpenglow block, what Agave refuses: a component its crate does not
//                         deserialize (at once), or, once every component decoded, components out of the order
//                         Agave's replay requires (entry/block-rules.ts).
//
// Alpenglow blocks (SIMD-0326): a block whose first component is a marker, every block after one (the migration is
// one-way), or every block when `blockFormat` says so. Such a block's `decoded` status carries its identity: the
// block id (entry/block-id.ts, over the sets' roots kept here), the parent it is replayed on, where an UpdateParent
// cut it, and its footer. Tower-era blocks keep the rules above unchanged (a batch that fails to decode keeps the slot
// from `decoded` without killing it).
//
// Only verified shreds count: the resolver hands over complete sets whose proofs (and leader signatures, where a
// schedule is configured) checked, so a spoofed packet cannot complete or kill a slot once signatures are on. A
// contradiction among shreds of sets that never complete is not seen.
//
// Memory: per slot two 1024-bit maps (sets completed, sets decoded: 256 bytes) and a few fields; at most
// `maxSlots` slots, the lowest slot evicted first (counted). reset() forgets everything when the resolver
// re-anchors its window (a cluster restart: slot numbers may repeat with other content).

/** index < 32,768 (spec §1) → at most 1024 sets per slot. */
const MAX_SETS = 1024;
const WORDS = MAX_SETS / 32;

export interface SlotStatusEvent {
  slot: bigint;
  status: SlotStatusCode;
  observedAtMs: number;
  /** Why the slot is dead; '' for the other statuses. */
  reason: string;
  /** An Alpenglow block's identity, on its `decoded` status. */
  block?: BlockInfo;
}

/** The block id (double Merkle root over the FEC-set roots), the parent replayed on, the UpdateParent cut, the footer. */
export type BlockInfo = BlockIdentity;

/** BlockInfo.footer.certs bits: which certificates the footer carries (not verified). */
export const FOOTER_CERT = { final: 1, finalNotar: 2, skipReward: 4, notarReward: 8 } as const;

export type BlockFormat = 'auto' | 'alpenglow' | 'tower';

export interface SlotTrackerOptions {
  /** Slots tracked at once; past it the lowest slot is forgotten. */
  maxSlots: number;
  emit: (e: SlotStatusEvent) => void;
  registry?: Registry;
  /** Which rules judge a block (default 'auto': Alpenglow from the first block that starts with a marker). */
  blockFormat?: BlockFormat;
}

const STAGE_NONE = 0;
const STAGE_FIRST = 1;
const STAGE_COMPLETED = 2;
const STAGE_DECODED = 3;

class SlotState {
  stage = STAGE_NONE;
  dead = false;
  /** Set position (fec / 32) of the set flagged LAST_IN_SLOT; -1 until one completes. */
  lastPos = -1;
  /** Highest set position completed. */
  maxPos = -1;
  readonly done = new Uint32Array(WORDS);
  doneCount = 0;
  readonly decoded = new Uint32Array(WORDS);
  decodedCount = 0;
  /** The slot's components by first set position (Alpenglow rules are judged over them in order). */
  readonly parts = new Map<number, BlockPart>();
  /** Each completed set's Merkle root, by position (the block id's leaves). */
  readonly roots: Buffer[] = [];
  parentOffset = -1;
  /** The first component Agave's crate refuses (kills an Alpenglow block). */
  fatal: string | null = null;
  /** A batch that decoded only in part under tower rules (trailing bytes; Agave's crate leaves them unread). */
  towerFail = false;
  /** A batch this decoder could not finish (an unknown transaction version): no verdict either way. */
  undecided = false;
}

function setBit(map: Uint32Array, pos: number): boolean {
  const w = pos >>> 5;
  const b = 1 << (pos & 31);
  if ((map[w]! & b) !== 0) return false;
  map[w] = map[w]! | b;
  return true;
}

const NO_SIGNATURES = Buffer.alloc(0);

/** The first signature of every transaction a batch delivered (whole entries, then the partial one), copied. */
function firstSignatures(d: BatchDecode): Buffer {
  let n = d.ok ? 0 : d.partial.length;
  for (const e of d.entries) n += e.txs.length;
  if (n === 0) return NO_SIGNATURES;
  const out = Buffer.allocUnsafe(n * 64);
  let o = 0;
  for (const e of d.entries) for (const t of e.txs) o += t.tx.signatures[0]!.copy(out, o);
  if (!d.ok) for (const t of d.partial) o += t.tx.signatures[0]!.copy(out, o);
  return out;
}

const STATUS_NAMES = ['first_shred_received', 'completed', 'decoded', 'dead'] as const;

export class SlotStatusTracker {
  private readonly slots = new Map<bigint, SlotState>();
  private readonly emitEvent: (e: SlotStatusEvent) => void;
  private readonly maxSlots: number;
  private readonly format: BlockFormat;
  /** The lowest slot judged as an Alpenglow block ('auto': every later slot is one). */
  private alpenglowSince: bigint | null = null;
  private readonly c: {
    emitted: Record<(typeof STATUS_NAMES)[number], Counter>;
    evictedUnfinished: Counter;
    decodeFailures: Counter;
  };

  constructor(opts: SlotTrackerOptions) {
    this.maxSlots = Math.max(1, opts.maxSlots);
    this.emitEvent = opts.emit;
    this.format = opts.blockFormat ?? 'auto';
    const r = opts.registry;
    const counter = (name: string, help: string, labels?: Record<string, string>): Counter => (r === undefined ? new Counter(labels) : r.counter(name, help, labels));
    const emitted = {} as Record<(typeof STATUS_NAMES)[number], Counter>;
    for (const s of STATUS_NAMES) emitted[s] = counter('meridian_ingest_slot_status_total', 'Slot statuses derived from the shreds, by status', { status: s });
    this.c = {
      emitted,
      evictedUnfinished: counter('meridian_ingest_slot_tracker_evicted_total', 'Slots forgotten by the status tracker (cap) before they were decoded or dead'),
      decodeFailures: counter('meridian_ingest_slot_decode_failures_total', 'Entry batches that failed to decode, keeping their slot from the decoded status'),
    };
  }

  get size(): number {
    return this.slots.size;
  }

  /** Counts so far, by status name (tests, stats). */
  counts(): Record<(typeof STATUS_NAMES)[number] | 'evictedUnfinished' | 'decodeFailures', number> {
    return {
      first_shred_received: this.c.emitted.first_shred_received.value,
      completed: this.c.emitted.completed.value,
      decoded: this.c.emitted.decoded.value,
      dead: this.c.emitted.dead.value,
      evictedUnfinished: this.c.evictedUnfinished.value,
      decodeFailures: this.c.decodeFailures.value,
    };
  }

  /** The resolver verified the slot's first shred. */
  firstShred(slot: bigint, ms: number): void {
    this.state(slot, ms);
  }

  /** A verified FEC set completed (received or recovered). */
  setCompleted(set: CompletedFecSet, ms: number): void {
    const st = this.state(set.slot, set.firstSeenMs);
    if (st.dead) return;
    const pos = set.fecSetIndex / DATA_SHREDS_PER_SET;
    if (!Number.isInteger(pos) || pos < 0 || pos >= MAX_SETS) return;
    if (set.lastInSlot) {
      if (st.lastPos >= 0 && st.lastPos !== pos) return this.die(set.slot, st, ms, `two last shreds in slot: indexes ${st.lastPos * DATA_SHREDS_PER_SET + 31} and ${set.fecSetIndex + 31}`);
      st.lastPos = pos;
    }
    if (setBit(st.done, pos)) st.doneCount++;
    st.roots[pos] = set.merkleRoot;
    if (pos > st.maxPos) st.maxPos = pos;
    if (st.lastPos >= 0 && st.maxPos > st.lastPos) {
      return this.die(set.slot, st, ms, `shred index ${st.maxPos * DATA_SHREDS_PER_SET} past the last shred in slot (${st.lastPos * DATA_SHREDS_PER_SET + 31})`);
    }
    this.advance(set.slot, st, ms);
  }

  /** Reassembly emitted an entry batch (one block component) and its decode. */
  batch(b: EntryBatch, d: BatchDecode, ms: number): void {
    const st = this.slots.get(b.slot);
    if (st === undefined || st.dead) return;
    const first = b.firstShred / DATA_SHREDS_PER_SET;
    const last = Math.min(MAX_SETS - 1, b.lastShred >>> 5);
    st.parentOffset = b.parentOffset;
    let marker: ParsedMarker | null = null;
    if (d.ok) marker = d.marker;
    else {
      this.c.decodeFailures.inc();
      if (d.reason === 'unknown_tx_version') st.undecided = true;
      else if (d.reason === 'trailing_garbage') st.towerFail = true;
      else if (st.fatal === null) {
        st.towerFail = true;
        const why = d.markerReason !== undefined ? MARKER_REASONS[d.markerReason] : d.reason;
        st.fatal = `bad block component at shred ${b.firstShred} (${d.reason}${d.markerReason !== undefined ? '/' + d.markerReason : ''}): ${why}`;
      }
    }
    const e = d.entries;
    st.parts.set(first, {
      firstShred: b.firstShred,
      lastShred: b.lastShred,
      kind: marker !== null ? 'marker' : d.ok && e.length === 0 ? 'empty' : 'entries',
      marker,
      alpentickShape: e.length === 1 && e[0]!.txs.length === 0 && e[0]!.numHashes === 1n,
      signatures: b.slot % 4n === 0n ? firstSignatures(d) : null,
    });
    for (let p = first; p <= last; p++) if (setBit(st.decoded, p)) st.decodedCount++;
    // A refused component kills an Alpenglow block at once (the rest of the block cannot change that).
    if (st.fatal !== null && this.isAlpenglow(b.slot, st)) return this.die(b.slot, st, ms, st.fatal);
    this.advance(b.slot, st, ms);
  }

  /** Alpenglow rules for this slot: by configuration, by its first component, or after a block that had them. */
  private isAlpenglow(slot: bigint, st: SlotState): boolean {
    if (this.format !== 'auto') return this.format === 'alpenglow';
    if (this.alpenglowSince !== null && slot > this.alpenglowSince) return true;
    return st.parts.get(0)?.kind === 'marker';
  }

  /** The resolver saw a second signed root for (slot, fec): the leader equivocated. */
  equivocation(slot: bigint, fecSetIndex: number, ms: number): void {
    const st = this.state(slot, ms);
    if (!st.dead) this.die(slot, st, ms, `equivocation: two Merkle roots for FEC set ${fecSetIndex}`);
  }

  /** Forgets every slot (the resolver re-anchored its window). */
  reset(): void {
    this.slots.clear();
  }

  private advance(slot: bigint, st: SlotState, ms: number): void {
    if (st.lastPos < 0) return;
    const sets = st.lastPos + 1;
    if (st.stage < STAGE_COMPLETED && st.doneCount === sets) {
      st.stage = STAGE_COMPLETED;
      this.send(slot, SlotStatusCode.completed, ms, '', 'completed');
    }
    if (st.stage === STAGE_COMPLETED && st.decodedCount === sets) {
      if (!this.isAlpenglow(slot, st)) {
        if (st.fatal !== null || st.towerFail || st.undecided) return;
        st.stage = STAGE_DECODED;
        this.send(slot, SlotStatusCode.decoded, ms, '', 'decoded');
        return;
      }
      if (st.fatal !== null) return this.die(slot, st, ms, st.fatal);
      if (st.undecided) return;
      if (this.alpenglowSince === null || slot < this.alpenglowSince) this.alpenglowSince = slot;
      const parts = [...st.parts.values()].sort((a, b) => a.firstShred - b.firstShred);
      const v = judgeBlock(slot, slot - BigInt(st.parentOffset), parts);
      if (!v.ok) return this.die(slot, st, ms, v.reason);
      const f = v.footer;
      const certs =
        (f.finalCert !== null ? FOOTER_CERT.final : 0) |
        (f.finalCert?.notarAggregate != null ? FOOTER_CERT.finalNotar : 0) |
        (f.skipRewardCert !== null ? FOOTER_CERT.skipReward : 0) |
        (f.notarRewardCert !== null ? FOOTER_CERT.notarReward : 0);
      let discarded = NO_SIGNATURES;
      if (v.updateParentShred !== null) {
        const before: Buffer[] = [];
        for (const p of parts) if (p.firstShred < v.updateParentShred && p.signatures !== null) before.push(p.signatures);
        discarded = Buffer.concat(before);
      }
      for (const p of parts) p.signatures = null; // judged: nothing more can discard them
      const block: BlockInfo = {
        blockId: blockId(st.roots.slice(0, sets), v.parent.slot, v.parent.blockId),
        parentSlot: v.parent.slot,
        parentBlockId: Buffer.from(v.parent.blockId),
        updateParentFecSetIndex: v.updateParentShred,
        footer: { bankHash: Buffer.from(f.bankHash), producerTimeNanos: f.producerTimeNanos, userAgent: Buffer.from(f.userAgent), certs },
        discarded,
      };
      st.stage = STAGE_DECODED;
      this.c.emitted.decoded.inc();
      this.emitEvent({ slot, status: SlotStatusCode.decoded, observedAtMs: ms, reason: '', block });
    }
  }

  private die(slot: bigint, st: SlotState, ms: number, reason: string): void {
    st.dead = true;
    st.parts.clear(); // a dead block is judged once; its components (and their signatures) are not needed again
    this.send(slot, SlotStatusCode.dead, ms, reason, 'dead');
  }

  /** The slot's state, made (and its first shred announced) if new. */
  private state(slot: bigint, ms: number): SlotState {
    let st = this.slots.get(slot);
    if (st !== undefined) return st;
    if (this.slots.size >= this.maxSlots) this.evictLowest();
    st = new SlotState();
    this.slots.set(slot, st);
    st.stage = STAGE_FIRST;
    this.send(slot, SlotStatusCode.firstShredReceived, ms, '', 'first_shred_received');
    return st;
  }

  private evictLowest(): void {
    let low: bigint | null = null;
    for (const s of this.slots.keys()) if (low === null || s < low) low = s;
    if (low === null) return;
    const st = this.slots.get(low)!;
    this.slots.delete(low);
    if (!st.dead && st.stage < STAGE_DECODED) this.c.evictedUnfinished.inc();
  }

  private send(slot: bigint, status: SlotStatusCode, observedAtMs: number, reason: string, name: (typeof STATUS_NAMES)[number]): void {
    this.c.emitted[name].inc();
    this.emitEvent({ slot, status, observedAtMs, reason });
  }
}
