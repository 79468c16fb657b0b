import type { BusMessage } from './bus';

// Rebuilding state from a compacted topic: the latest value per key wins, a tombstone (null value) deletes the
// key. Pure, so the rentals projection and the bus contract tests share one definition of "latest per key".
// Keys are compared as UTF-8 text (every compacted topic of DESIGN.md is keyed by a text id).

/** Decodes a non-null value; null means the value itself says "deleted" (treated like a tombstone). */
export type DecodeLatest<T> = (value: Buffer) => T | { error: string } | null;

export interface Rejected {
  key: string;
  topic: string;
  partition: number;
  offset: string;
  error: string;
}

function isError<T>(v: T | { error: string }): v is { error: string } {
  // A decoder's success type never carries a string `error` field (the codecs of bus/topics/ keep to that).
  return typeof v === 'object' && v !== null && typeof (v as { error?: unknown }).error === 'string';
}

/**
 * Applies records (in partition order) to `state`, in place. A record whose value does not decode is skipped
 * and reported, and the key keeps its previous value: one bad write must not silently drop a paying rental,
 * and the caller decides whether a rejection is worth an alarm. Records without a key cannot be placed and
 * are reported too (Kafka refuses them on compacted topics; the embedded bus does the same).
 */
export function applyLatest<T>(state: Map<string, T>, messages: Iterable<BusMessage>, decode: DecodeLatest<T>): Rejected[] {
  const rejected: Rejected[] = [];
  for (const m of messages) {
    const where = { topic: m.topic, partition: m.partition, offset: m.offset };
    if (m.key === null) {
      rejected.push({ key: '', ...where, error: 'record without a key' });
      continue;
    }
    const key = m.key.toString('utf8');
    if (m.value === null) {
      state.delete(key);
      continue;
    }
    const v = decode(m.value);
    if (v === null) state.delete(key);
    else if (isError(v)) rejected.push({ key, ...where, error: v.error });
    else state.set(key, v);
  }
  return rejected;
}

/** A fresh map of the latest value per key after `messages`. */
export function foldLatest<T>(messages: Iterable<BusMessage>, decode: DecodeLatest<T>): { latest: Map<string, T>; rejected: Rejected[] } {
  const latest = new Map<string, T>();
  const rejected = applyLatest(latest, messages, decode);
  return { latest, rejected };
}
