import type { Bus, ProduceRecord, TopicSpec } from './bus';
import type { RecordedRecord, RecordingMeta } from './recording';
import { defaultTopicSpecs } from './topics';

// Writes recorded records into a broker, for `meridian topics replay` and test/support/recorded-broker.ts.
// Keys, values, headers and partitions are kept; offsets and timestamps are the target log's own (a Kafka topic
// made by this project stamps LogAppendTime, and the embedded bus stamps its append time), so "recorded pace"
// reproduces the gaps between records, not their clock.
//
// Records go out in file order, in batches of consecutive records of one topic: as fast as the broker acks
// (`fast`), or each released when its recorded time, shifted to start now, has come (`recorded`). One batch is
// in flight at a time, so memory is one batch however long the recording.

export type Pace = 'fast' | 'recorded';

/** Where records go: a Bus (Kafka, an embedded bus in this process) or the running service's admin endpoint. */
export interface RecordSink {
  produce(topic: string, records: ProduceRecord[]): Promise<void>;
}

export interface LoadOptions {
  pace: Pace;
  /** Recorded topic name → name to write to (a recording of stream.transactions into a test's own topic). */
  rename?: ReadonlyMap<string, string>;
  /** Records per produce call at most. */
  maxBatch?: number;
  /** Bytes per produce call at most (Kafka's default request limit is 1 MiB; keep well under it). */
  maxBatchBytes?: number;
  /** Called after each batch is acknowledged. */
  onProgress?: (written: number) => void;
  signal?: AbortSignal;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export interface LoadResult {
  records: number;
  /** Per target topic, records written. */
  byTopic: Map<string, number>;
  aborted: boolean;
}

const DEFAULT_MAX_BATCH = 500;
const DEFAULT_MAX_BATCH_BYTES = 512 * 1024;
/** At recorded pace, records due within this much of each other go in one batch (a timer is no finer anyway). */
const PACE_SLACK_MS = 2;

export function targetName(topic: string, rename: ReadonlyMap<string, string> | undefined): string {
  return rename?.get(topic) ?? topic;
}

/**
 * The topics a recording needs in the target, with its partition counts: a name the project knows keeps its
 * default spec (compaction, retention) with at least the recorded partitions; any other is a plain topic.
 */
export function targetTopicSpecs(meta: RecordingMeta, rename?: ReadonlyMap<string, string>): TopicSpec[] {
  const known = new Map(defaultTopicSpecs().map((s) => [s.name, s]));
  return meta.topics.map((t) => {
    const spec = known.get(t.name);
    const name = targetName(t.name, rename);
    return spec === undefined ? { name, partitions: t.partitions, compacted: false } : { ...spec, name, partitions: Math.max(spec.partitions, t.partitions) };
  });
}

/**
 * Creates the recording's topics in a Bus where missing and checks that each has the recorded partitions, so a
 * replay fails before writing anything rather than halfway. Returns a one-line problem, or null.
 */
export async function prepareTopics(bus: Bus, meta: RecordingMeta, rename?: ReadonlyMap<string, string>): Promise<string | null> {
  const specs = targetTopicSpecs(meta, rename);
  await bus.createTopics(specs);
  for (const t of meta.topics) {
    const name = targetName(t.name, rename);
    const have = (await bus.endOffsets(name)).size;
    if (have < t.partitions) return `topic ${name} has ${have} partitions; the recording needs ${t.partitions} to keep its records' partitions`;
  }
  return null;
}

function recordBytes(r: RecordedRecord): number {
  let n = (r.key?.length ?? 0) + (r.value?.length ?? 0) + 32;
  for (const h in r.headers) n += h.length + r.headers[h]!.length;
  return n;
}

export async function loadRecords(records: AsyncIterable<RecordedRecord>, sink: RecordSink, o: LoadOptions): Promise<LoadResult> {
  const now = o.now ?? Date.now;
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const maxBatch = o.maxBatch ?? DEFAULT_MAX_BATCH;
  const maxBytes = o.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES;
  const byTopic = new Map<string, number>();
  let written = 0;
  let batch: ProduceRecord[] = [];
  let batchTopic = '';
  let batchBytes = 0;
  /** Recorded time of the first record, and the wall clock it is mapped to. */
  let t0: { recorded: number; wall: number } | null = null;
  const stopped = (): boolean => o.signal?.aborted === true;

  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const out = batch;
    batch = [];
    batchBytes = 0;
    await sink.produce(batchTopic, out);
    written += out.length;
    byTopic.set(batchTopic, (byTopic.get(batchTopic) ?? 0) + out.length);
    o.onProgress?.(written);
  };

  for await (const r of records) {
    if (stopped()) break;
    const topic = targetName(r.topic, o.rename);
    if (o.pace === 'recorded') {
      t0 ??= { recorded: r.timestamp, wall: now() };
      // Records out of time order (several partitions) are released at once: pace never waits backwards.
      const wait = t0.wall + (r.timestamp - t0.recorded) - now();
      if (wait > PACE_SLACK_MS) {
        await flush();
        await sleep(wait);
        if (stopped()) break;
      }
    }
    const size = recordBytes(r);
    if (batch.length > 0 && (topic !== batchTopic || batch.length >= maxBatch || batchBytes + size > maxBytes)) await flush();
    batchTopic = topic;
    batch.push({ key: r.key, value: r.value, headers: r.headers, partition: r.partition });
    batchBytes += size;
  }
  const aborted = stopped();
  if (!aborted) await flush();
  return { records: written, byTopic, aborted };
}
