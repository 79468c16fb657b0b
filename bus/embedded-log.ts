import type { BusMessage } from './bus';

// One partition of the embedded bus: an append-only log with Kafka's offset rules (offsets never reused,
// consumers address records by offset) and bounded memory.
//   - Plain topics drop from the head when the partition holds more than maxMessages or maxBytes, or when the
//     head is older than retentionMs (Kafka's retention.bytes / retention.ms, counted in messages too).
//   - Compacted topics keep every record until superseded by a later record of the same key; compaction then
//     drops the superseded ones, leaving gaps in the offsets exactly as Kafka's cleaner does. Tombstones stay
//     for tombstoneRetentionMs (Kafka's delete.retention.ms, default 24 h) so a reader that is behind still
//     sees the delete; after that the key is simply absent. Size and time bounds do not apply (they would lose
//     keys), so a compacted partition's memory is its live keys plus recent churn.

export interface LogLimits {
  compacted: boolean;
  maxMessages: number;
  maxBytes: number;
  /** Plain topics only; undefined = no time bound. */
  retentionMs: number | undefined;
  tombstoneRetentionMs: number;
  /** Compact once this many superseded records have piled up (and at least as many as are retained). */
  compactMinDirty: number;
}

interface Entry {
  n: number;
  bytes: number;
  msg: BusMessage;
}

export interface ReadResult {
  batch: BusMessage[];
  /** Where the read really started: `from`, or the first retained offset if retention dropped `from`. */
  from: number;
  /** The offset to read from next time. */
  next: number;
  /** Plain topics: offsets the reader asked for that retention had already dropped. */
  skipped: number;
}

const EMPTY: BusMessage[] = [];
/** Below this many dead slots at the head, leave the array alone; above it, copy down once half is dead. */
const HEAD_SLACK = 1024;

export class PartitionLog {
  private entries: Entry[] = [];
  private head = 0;
  private bytes = 0;
  /** The offset the next append gets (Kafka's log end offset / high watermark). */
  end = 0;
  /** Compacted only: the offset of the latest record per key (key bytes as latin1, lossless). */
  private readonly latest = new Map<string, number>();
  private dirty = 0;
  private oldestTombstoneMs = Infinity;
  /** Whoever wants to hear about appends (the cursors reading this partition). */
  readonly readers = new Set<{ wake(): void }>();

  constructor(readonly topic: string, readonly partition: number, private readonly limits: LogLimits) {}

  /** First retained offset; equals `end` when nothing is retained. */
  get start(): number {
    return this.head < this.entries.length ? this.entries[this.head]!.n : this.end;
  }

  get retained(): number {
    return this.entries.length - this.head;
  }

  get retainedBytes(): number {
    return this.bytes;
  }

  /** The byte bound (maxBytes); 0 for a compacted log, which size bounds do not apply to. */
  get limitBytes(): number {
    return this.limits.compacted ? 0 : this.limits.maxBytes;
  }

  append(key: Buffer | null, value: Buffer | null, headers: Record<string, Buffer>, timestamp: number): void {
    const n = this.end++;
    let bytes = (key?.length ?? 0) + (value?.length ?? 0);
    for (const h in headers) bytes += h.length + headers[h]!.length;
    const msg: BusMessage = { topic: this.topic, partition: this.partition, offset: String(n), key, value, headers, timestamp };
    this.entries.push({ n, bytes, msg });
    this.bytes += bytes;
    if (this.limits.compacted) this.noteKey(key!, value === null, n, timestamp);
    else this.trim(timestamp);
  }

  /** Up to `max` messages from offset `from` on (or from the first retained offset after it). */
  read(from: number, max: number): ReadResult {
    const start = this.start;
    let skipped = 0;
    if (from < start) {
      // Compaction gaps are not losses: the cleaner only drops records that a later one supersedes.
      if (!this.limits.compacted) skipped = start - from;
      from = start;
    }
    if (from >= this.end) return { batch: EMPTY, from, next: from, skipped };
    let i = this.indexOf(from);
    // A compacted log whose tail tombstones expired can hold nothing at or after `from`.
    if (i >= this.entries.length) return { batch: EMPTY, from, next: this.end, skipped };
    const stop = Math.min(this.entries.length, i + max);
    const batch: BusMessage[] = [];
    for (; i < stop; i++) batch.push(this.entries[i]!.msg);
    return { batch, from, next: this.entries[stop - 1]!.n + 1, skipped };
  }

  /**
   * The first retained offset whose append time is ≥ timeMs, else `end`. A scan, not a search: append times come
   * from Date.now(), which may step back, and this is asked rarely (a billing job checking its ledger).
   */
  offsetForTime(timeMs: number): number {
    for (let i = this.head; i < this.entries.length; i++) {
      const e = this.entries[i]!;
      if (e.msg.timestamp >= timeMs) return e.n;
    }
    return this.end;
  }

  /** Time-based work that appends alone would not trigger on an idle partition. */
  sweep(now: number): void {
    if (!this.limits.compacted) this.trim(now);
    else if (now - this.oldestTombstoneMs > this.limits.tombstoneRetentionMs) this.compact(now);
  }

  /** Index of the first entry with offset >= n (n within [start, end)). Plain logs are dense: O(1). */
  private indexOf(n: number): number {
    const guess = this.head + (n - this.start);
    if (this.entries[guess]?.n === n) return guess;
    let lo = this.head;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.entries[mid]!.n < n) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private trim(now: number): void {
    const { maxMessages, maxBytes, retentionMs } = this.limits;
    const horizon = retentionMs === undefined ? -Infinity : now - retentionMs;
    while (this.head < this.entries.length) {
      const e = this.entries[this.head]!;
      if (this.retained <= maxMessages && this.bytes <= maxBytes && e.msg.timestamp >= horizon) break;
      this.bytes -= e.bytes;
      this.entries[this.head++] = undefined as unknown as Entry; // let the message be collected now
    }
    // Array.shift would be O(n) per drop; copy the live part down once the dead head is large enough.
    if (this.head > HEAD_SLACK && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
  }

  private noteKey(key: Buffer, tombstone: boolean, n: number, timestamp: number): void {
    const k = key.toString('latin1');
    if (this.latest.has(k)) this.dirty++;
    this.latest.set(k, n);
    if (tombstone) this.oldestTombstoneMs = Math.min(this.oldestTombstoneMs, timestamp);
    // Compacting when the dead records are at least as many as the retained ones keeps appends amortized O(1).
    if (this.dirty >= this.limits.compactMinDirty && this.dirty * 2 >= this.retained) this.compact(timestamp);
  }

  private compact(now: number): void {
    const kept: Entry[] = [];
    let bytes = 0;
    let oldestTombstone = Infinity;
    const horizon = now - this.limits.tombstoneRetentionMs;
    for (let i = this.head; i < this.entries.length; i++) {
      const e = this.entries[i]!;
      const k = e.msg.key!.toString('latin1');
      if (this.latest.get(k) !== e.n) continue;
      if (e.msg.value === null) {
        if (e.msg.timestamp < horizon) {
          this.latest.delete(k);
          continue;
        }
        oldestTombstone = Math.min(oldestTombstone, e.msg.timestamp);
      }
      kept.push(e);
      bytes += e.bytes;
    }
    this.entries = kept;
    this.head = 0;
    this.bytes = bytes;
    this.dirty = 0;
    this.oldestTombstoneMs = oldestTombstone;
  }
}
