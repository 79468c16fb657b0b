import type { Bus, BusMessage } from './bus';

// Reads a range of one or more topics from any Bus, for `meridian topics record`: every partition from a start
// (an offset, or the first record at or after a time) up to a stop (an offset, a time, or the end the topic had
// when the read began), then stops by itself. Records reach `onRecords` one partition batch at a time and the
// next batch waits for its promise, so a slow writer holds back the read instead of buffering it (bounded memory).
//
// The Bus has no seek, so the reader starts at each partition's beginning and skips what is before the start:
// on the embedded bus that is memory-speed, on Kafka it reads the topic's retention once (for stream topics an
// hour by default). A start is still exact; only the time to reach it grows with the topic.

/** A bound of the range: an offset in every partition, or an append time (ms since epoch). */
export type RangePoint = { kind: 'offset'; offset: bigint } | { kind: 'time'; ms: number };

export interface RangeOptions {
  topics: string[];
  /** Inclusive; absent = each partition's first retained record. */
  from?: RangePoint;
  /**
   * Exclusive; absent = the end offsets taken when the read starts. An offset or time beyond the end follows
   * the live topic until it is reached (a time: until the clock passes it and the records appended by then are in).
   */
  to?: RangePoint;
  onRecords: (records: BusMessage[]) => Promise<void> | void;
  /** Stops the read early (Ctrl-C); what was handed to onRecords stays handed. */
  signal?: AbortSignal;
  /** Wall clock, for tests. */
  now?: () => number;
}

export interface RangeResult {
  records: number;
  /** True when the signal stopped the read before every partition reached its stop. */
  aborted: boolean;
  /** Partitions per topic, as the bus reported them at the start. */
  partitions: Map<string, number>;
}

const DURATION_RE = /^now(?:([+-])(\d+(?:\.\d+)?)(ms|s|m|h))?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A command-line bound: a whole number is an offset; `now`, `now-30s`, `now+2m` (ms, s, m, h) are times relative
 * to `now`; anything else must be an ISO-8601 date-time with a zone (`2026-11-25T14:00:00Z`). Null when it is none.
 */
export function parseRangePoint(text: string, now: number = Date.now()): RangePoint | null {
  const t = text.trim();
  if (/^\d+$/.test(t)) return { kind: 'offset', offset: BigInt(t) };
  const d = DURATION_RE.exec(t);
  if (d !== null) {
    const delta = d[1] === undefined ? 0 : Number(d[2]) * UNIT_MS[d[3]!]! * (d[1] === '-' ? -1 : 1);
    return { kind: 'time', ms: Math.round(now + delta) };
  }
  // Date.parse would read a zoneless date-time as local time; a recording bound must not depend on the machine's zone.
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(t)) return null;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? null : { kind: 'time', ms };
}

/** A bound as written into a recording's meta and the admin endpoint's query: `offset:N` or `time:MS`. */
export function formatRangePoint(p: RangePoint): string {
  return p.kind === 'offset' ? `offset:${p.offset}` : `time:${p.ms}`;
}

/** The inverse of formatRangePoint. */
export function parseFormattedPoint(s: string): RangePoint | null {
  const m = /^(offset|time):(\d+)$/.exec(s);
  if (m === null) return null;
  return m[1] === 'offset' ? { kind: 'offset', offset: BigInt(m[2]!) } : { kind: 'time', ms: Number(m[2]) };
}

interface PartState {
  /** Next offset this partition can deliver: its start offset, then one past the last record seen. */
  at: bigint;
  /** Exclusive stop offset; null = not known yet (a time stop in the future). */
  stop: bigint | null;
  done: boolean;
}

export async function readRange(bus: Bus, o: RangeOptions): Promise<RangeResult> {
  const now = o.now ?? Date.now;
  const parts = new Map<string, PartState>(); // "topic\0partition"
  const partitions = new Map<string, number>();
  const fromOffset = o.from?.kind === 'offset' ? o.from.offset : null;
  const fromTime = o.from?.kind === 'time' ? o.from.ms : null;
  const toTime = o.to?.kind === 'time' ? o.to.ms : null;
  const timeToInFuture = toTime !== null && toTime > now();
  const settle = (s: PartState): void => {
    if (s.stop !== null && (s.at >= s.stop || (fromOffset !== null && fromOffset >= s.stop))) s.done = true;
  };
  for (const topic of o.topics) {
    const starts = await bus.startOffsets(topic);
    const ends = await bus.endOffsets(topic);
    partitions.set(topic, ends.size);
    for (const [p, end] of ends) {
      const stop = o.to?.kind === 'offset' ? o.to.offset : timeToInFuture ? null : BigInt(end);
      const s: PartState = { at: BigInt(starts.get(p) ?? end), stop, done: false };
      settle(s);
      parts.set(`${topic}\0${p}`, s);
    }
  }

  let records = 0;
  let finish!: () => void;
  const finished = new Promise<void>((r) => (finish = r));
  const checkDone = (): void => {
    for (const s of parts.values()) if (!s.done) return;
    finish();
  };

  // A time stop in the future: once the clock passes it, nothing older than it can still be appended (append
  // times only grow), so the end offsets taken then bound the rest of the read.
  let timer: NodeJS.Timeout | undefined;
  if (timeToInFuture) {
    timer = setTimeout(() => {
      void (async () => {
        for (const topic of o.topics) {
          for (const [p, end] of await bus.endOffsets(topic)) {
            const s = parts.get(`${topic}\0${p}`);
            if (s !== undefined && s.stop === null) {
              s.stop = BigInt(end);
              settle(s);
            }
          }
        }
        checkDone();
      })().catch(() => finish());
    }, toTime - now() + 1);
  }

  const consumer = await bus.consume({
    topics: o.topics,
    from: 'beginning',
    onBatch: async (batch) => {
      const first = batch[0];
      if (first === undefined) return;
      const s = parts.get(`${first.topic}\0${first.partition}`);
      if (s === undefined || s.done) return;
      const keep: BusMessage[] = [];
      for (const m of batch) {
        const off = BigInt(m.offset);
        if ((s.stop !== null && off >= s.stop) || (toTime !== null && m.timestamp >= toTime)) {
          // Past the stop; for a time, append times only grow within a partition, so nothing later is in range.
          s.done = true;
          break;
        }
        s.at = off + 1n;
        if (fromOffset !== null && off < fromOffset) continue;
        if (fromTime !== null && m.timestamp < fromTime) continue;
        keep.push(m);
      }
      settle(s);
      if (keep.length > 0 && o.signal?.aborted !== true) {
        records += keep.length;
        await o.onRecords(keep);
      }
      if (s.done) checkDone();
    },
  });
  checkDone(); // every partition empty or already past its stop
  let aborted = false;
  const onAbort = (): void => {
    aborted = true;
    finish();
  };
  if (o.signal !== undefined) {
    if (o.signal.aborted) onAbort();
    else o.signal.addEventListener('abort', onAbort, { once: true });
  }
  try {
    await finished;
  } finally {
    clearTimeout(timer);
    o.signal?.removeEventListener('abort', onAbort);
    await consumer.close();
  }
  return { records, aborted, partitions };
}
