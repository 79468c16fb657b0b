import type { EntryRecord } from '../../bus/topics/stream-entries';
import { encodeEntryShared } from '../../proto/wire-v2';

// The ticks an entry record carries before its own entry (bus/topics/stream-entries.ts VERSION 2): each is the
// Entry update a record of its own gave before ingest coalesced them — the same fields (its index in batch and
// slot-wide index counted back from the record's entry, no transactions) — delivered before the record's entry.
// They carry the cursor *before* the record (as a RAW transaction that is not its entry's last): resuming from a
// tick's cursor replays the record, so the entry after the tick is never skipped; the tick may come again.

/** The Entry updates (shared parts) of the ticks `r` carries, in order, with `before` as their cursor. */
export function tickUpdates(r: EntryRecord, before: Buffer, createdAtMs: number): Buffer[] {
  const k = r.ticks.length;
  const out = new Array<Buffer>(k);
  for (let i = 0; i < k; i++) {
    const t = r.ticks[i]!;
    out[i] = encodeEntryShared(before, createdAtMs, {
      slot: r.slot,
      batchFirstShred: r.batchFirstShred,
      observedAtMs: r.observedAtMs,
      index: r.index === null ? null : { entry: r.index.entry - k + i, firstTx: r.index.firstTx },
      indexInBatch: r.indexInBatch - k + i,
      numHashes: t.numHashes,
      hash: t.hash,
      signatures: NO_SIGNATURES,
    });
  }
  return out;
}

/** A record's tick updates and the cursor they carry (made once per record for the streams on one cursor). */
export interface TickUpdates {
  before: Buffer;
  updates: Buffer[];
}

export function beforeTicks(r: EntryRecord, before: Buffer, createdAtMs: number): TickUpdates {
  return { before, updates: tickUpdates(r, before, createdAtMs) };
}

const NO_SIGNATURES = Buffer.alloc(0);

/** Hands a stream the tick updates of one record (before its entry's own update). */
export function deliverTicks(s: { deliverEntry(shared: Buffer, cursor: Buffer, fromReplay: boolean): void }, t: TickUpdates, fromReplay: boolean): void {
  for (const u of t.updates) s.deliverEntry(u, t.before, fromReplay);
}
