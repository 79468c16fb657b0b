import { randomBytes } from 'node:crypto';
import type { Bus, ConsumeOptions, Consumer, LogIdentity, ProduceRecord, TopicSpec } from './bus';
import { Cursor, type CursorHooks } from './embedded-cursor';
import { Group, type Member } from './embedded-group';
import { PartitionLog, type LogLimits } from './embedded-log';
import { partitionForKey } from './murmur2';
import { metrics } from '../infra/base/metrics';
import { rootLogger, type Log } from '../infra/base/log';
import { setOwn } from '../infra/base/set-own';

// The in-process bus for single-machine runs. It keeps the Kafka contract the components rely on:
//   - keyed records go to partitionForKey(key) (Kafka's murmur2 default partitioner), null keys round-robin;
//   - per-partition append-only logs, offsets as decimal strings, append timestamps;
//   - independent readers and consumer groups with per-partition committed offsets (after each batch);
//   - compacted topics keep the latest record per key; they refuse records without a key, as Kafka does.
// Differences by design: topics must be created before use (no auto-create); messages are shared between
// readers, not copied per reader, so handlers must treat them as read-only; produced buffers are copied once
// (unless copyOnProduce is false), so a producer may reuse its buffers as it could with Kafka.
// Nothing is kept on disk: a topic's records and offsets live as long as the bus instance (in a one-machine run,
// the process). So each topic gets a random log id when it is created (logIdentity): a restart starts new logs
// at offset 0 under new ids, and offsets kept elsewhere (billing ledgers) can tell. Not a UUID: the log scrubber
// takes UUIDs for API keys, and an operator must be able to read which log a ledger was archived from.

export interface EmbeddedBusOptions {
  /** Plain topics: messages kept per partition. */
  maxMessagesPerPartition?: number;
  /** Plain topics: key + value + header bytes kept per partition. */
  maxBytesPerPartition?: number;
  /** Per-topic overrides of the two bounds above (e.g. a longer backlog for usage.events than for the stream). */
  topicLimits?: Record<string, { maxMessagesPerPartition?: number; maxBytesPerPartition?: number }>;
  /** Plain topics without retentionMs in their spec: time bound; undefined = 7 days (Kafka's default). */
  defaultRetentionMs?: number;
  /** Compacted topics: how long a tombstone stays readable (Kafka's delete.retention.ms). */
  tombstoneRetentionMs?: number;
  /** Compacted topics: superseded records that trigger a compaction (also at least as many as are live). */
  compactMinDirty?: number;
  /** Messages per onBatch call at most. */
  maxBatchMessages?: number;
  /** Wait before redelivering a batch whose handler threw. */
  retryDelayMs?: number;
  /** How often time-based retention and tombstone expiry run on idle partitions. */
  sweepIntervalMs?: number;
  /**
   * Copy keys, values and headers on produce (default true), each record into one allocation of its own; false
   * when producers never reuse buffers (and then a retained record keeps whatever its buffers are slices of).
   */
  copyOnProduce?: boolean;
  log?: Log;
}

const DAY_MS = 86_400_000;
const SKIP_WARN_INTERVAL_MS = 10_000;

/**
 * What the open embedded buses of this process retain, per topic, read at scrape time: the memory the per-topic
 * bounds cap, made visible (a one-machine run's largest part outside the V8 heap). One series per topic for the
 * process however many buses are open (tests open several), so a scrape never carries duplicate series.
 */
const openBuses = new Set<EmbeddedBus>();
const retainedGauges = new Set<string>();
function watchRetained(topic: string): void {
  if (retainedGauges.has(topic)) return;
  retainedGauges.add(topic);
  const sum = (pick: (r: { messages: number; bytes: number; limitBytes: number }) => number): number => {
    let n = 0;
    for (const bus of openBuses) for (const r of bus.retainedIfAny(topic)) n += pick(r);
    return n;
  };
  metrics.gauge('meridian_bus_embedded_retained_bytes', 'Key, value and header bytes the embedded bus retains, all partitions of the topic (bounded by its maxBytesPerPartition)', { topic }, () => sum((r) => r.bytes));
  metrics.gauge('meridian_bus_embedded_retained_records', 'Records the embedded bus retains, all partitions of the topic (bounded by its maxMessagesPerPartition)', { topic }, () => sum((r) => r.messages));
  metrics.gauge('meridian_bus_embedded_limit_bytes', 'The byte bound of the topic in the embedded bus: maxBytesPerPartition times partitions (compacted topics: none, 0)', { topic }, () => sum((r) => r.limitBytes));
}

/** Counters of one bus instance (the process-wide metrics registry holds the same, summed over instances). */
export interface EmbeddedBusStats {
  /** Messages readers did not get because retention dropped them first (a reader fell too far behind). */
  skipped: number;
  handlerErrors: number;
}

interface Topic {
  spec: TopicSpec;
  logs: PartitionLog[];
  roundRobin: number;
  /** This incarnation of the topic's log (see the header). */
  logId: string;
}

/**
 * Produced records are copied into allocations of their own (Buffer.allocUnsafeSlow), never Buffer.from per
 * field: a copy smaller than half of Buffer.poolSize is a slice of a shared pool slab (8 KiB on Node 20, 64 KiB on
 * Node 24), and a record the log keeps pins its whole slab, with every short-lived buffer cut from the same slab,
 * for as long as the record is retained, far beyond the bytes that maxBytes counts. Measured in
 * test/fanout/hostile-load.test.ts on Node 24: 1,000 retained records pinned 709 slabs of 64 KiB (44 MiB held
 * after GC) with per-field copies.
 * A plain topic's records of one produce call that go to one partition share an allocation (up to
 * GROUP_MAX_BYTES): they sit side by side in that partition's log and leave it together, oldest first, so what
 * the log keeps beyond its counted bytes is at most the part of one group per partition whose neighbours were
 * evicted already. One allocation per record was the largest part of what the service's own event producers
 * cost the embedded bus (test/bench/submit.ts, traces on: an ArrayBuffer and its backing store per event, and the
 * garbage collection they drive). A compacted topic removes superseded records one by one, so each of its
 * records keeps an allocation of its own.
 */
const GROUP_MAX_BYTES = 256 * 1024;

function recordBytes(r: ProduceRecord): number {
  let size = (r.key?.length ?? 0) + (r.value?.length ?? 0);
  if (r.headers !== undefined) for (const h in r.headers) size += r.headers[h]!.length;
  return size;
}

/** `b` copied into `own` at `at`: the copy's view. */
const put = (own: Buffer, at: number, b: Buffer): Buffer => own.subarray(at, at + b.copy(own, at));

/** Copies one record's headers, key and value into `own` from `at` (the caller made room for recordBytes(r)). */
function copyRecordInto(r: ProduceRecord, own: Buffer, at: number): { key: Buffer | null; value: Buffer | null; headers: Record<string, Buffer> } {
  let off = at;
  const headers: Record<string, Buffer> = {};
  if (r.headers !== undefined) {
    for (const h in r.headers) {
      const v = put(own, off, r.headers[h]!);
      off += v.length;
      setOwn(headers, h, v);
    }
  }
  const key = r.key === null ? null : put(own, off, r.key);
  const value = r.value === null ? null : put(own, off + (key?.length ?? 0), r.value);
  return { key, value, headers };
}

export class EmbeddedBus implements Bus {
  readonly kind = 'embedded' as const;
  readonly stats: EmbeddedBusStats = { skipped: 0, handlerErrors: 0 };
  private readonly topics = new Map<string, Topic>();
  private readonly groups = new Map<string, Group>();
  private readonly consumers = new Set<Consumer>();
  private readonly hooks: CursorHooks;
  private readonly log: Log;
  private readonly sweeper: NodeJS.Timeout;
  private readonly lastSkipWarn = new Map<string, number>();
  private closed = false;

  constructor(private readonly opts: EmbeddedBusOptions = {}) {
    this.log = opts.log ?? rootLogger().child({ component: 'bus.embedded' });
    this.hooks = {
      maxBatch: opts.maxBatchMessages ?? 1000,
      retryDelayMs: opts.retryDelayMs ?? 200,
      onSkip: (log, n) => {
        this.stats.skipped += n;
        metrics.counter('meridian_bus_embedded_skipped_total', 'Messages a lagging embedded-bus reader lost to retention', { topic: log.topic }).inc(n);
        // A reader that stays slow skips on every batch: one line per topic per interval is enough to notice.
        const now = Date.now();
        if (now - (this.lastSkipWarn.get(log.topic) ?? 0) >= SKIP_WARN_INTERVAL_MS) {
          this.lastSkipWarn.set(log.topic, now);
          this.log.warn({ topic: log.topic, partition: log.partition, skipped: n, totalSkipped: this.stats.skipped }, 'reader fell behind retention and skipped ahead');
        }
      },
      onHandlerError: (log, batch, err) => {
        this.stats.handlerErrors++;
        metrics.counter('meridian_bus_embedded_handler_errors_total', 'Batch handlers that threw (the batch is retried)', { topic: log.topic }).inc();
        this.log.error({ err, topic: log.topic, partition: log.partition, firstOffset: batch[0]?.offset, count: batch.length }, 'batch handler failed; retrying');
      },
    };
    this.sweeper = setInterval(() => this.sweep(), opts.sweepIntervalMs ?? 1000);
    this.sweeper.unref(); // retention housekeeping must not keep a process alive
  }

  async createTopics(specs: TopicSpec[]): Promise<void> {
    this.assertOpen();
    for (const spec of specs) {
      // Like Kafka's "topic already exists": creating twice is fine and keeps the first layout.
      if (this.topics.has(spec.name)) continue;
      if (!Number.isInteger(spec.partitions) || spec.partitions < 1) throw new RangeError(`topic ${spec.name}: partitions must be a positive integer`);
      const own = this.opts.topicLimits?.[spec.name];
      const limits: LogLimits = {
        compacted: spec.compacted,
        maxMessages: own?.maxMessagesPerPartition ?? this.opts.maxMessagesPerPartition ?? 200_000,
        maxBytes: own?.maxBytesPerPartition ?? this.opts.maxBytesPerPartition ?? 256 * 1024 * 1024,
        retentionMs: spec.retentionMs ?? this.opts.defaultRetentionMs ?? 7 * DAY_MS,
        tombstoneRetentionMs: this.opts.tombstoneRetentionMs ?? DAY_MS,
        compactMinDirty: this.opts.compactMinDirty ?? 1000,
      };
      const logs = Array.from({ length: spec.partitions }, (_, p) => new PartitionLog(spec.name, p, limits));
      this.topics.set(spec.name, { spec: { ...spec }, logs, roundRobin: 0, logId: `embedded:${randomBytes(12).toString('hex')}` });
      openBuses.add(this);
      watchRetained(spec.name);
    }
  }

  async produce(topic: string, records: ProduceRecord[]): Promise<void> {
    this.assertOpen();
    const t = this.topic(topic);
    // Validate the whole batch first, so a bad record appends nothing (a Kafka produce request fails whole).
    if (t.spec.compacted && records.some((r) => r.key === null)) throw new Error(`topic ${topic} is compacted: every record needs a key`);
    const n = t.logs.length;
    const outside = records.find((r) => r.partition !== undefined && (!Number.isInteger(r.partition) || r.partition < 0 || r.partition >= n));
    if (outside !== undefined) throw new RangeError(`topic ${topic} has ${n} partitions: no partition ${outside.partition}`);
    const copyIn = this.opts.copyOnProduce ?? true;
    const now = Date.now();
    const touched = new Set<PartitionLog>();
    const partitionOf = (r: ProduceRecord): number => r.partition ?? (r.key === null ? t.roundRobin++ % n : partitionForKey(r.key, n));
    if (!copyIn) {
      for (const r of records) {
        const log = t.logs[partitionOf(r)]!;
        log.append(r.key, r.value, { ...r.headers }, now);
        touched.add(log);
      }
    } else {
      // Two passes: each record's partition and size, so each partition's share is one allocation (see
      // GROUP_MAX_BYTES; a compacted topic's cap of 0 gives each record its own), then the copies.
      const cap = t.spec.compacted ? 0 : GROUP_MAX_BYTES;
      const parts = new Array<number>(records.length);
      const sizes = new Array<number>(records.length);
      const left = new Array<number>(n).fill(0);
      for (let i = 0; i < records.length; i++) {
        const r = records[i]!;
        const p = partitionOf(r);
        const size = recordBytes(r);
        parts[i] = p;
        sizes[i] = size;
        left[p]! += size;
      }
      const chunks = new Array<Buffer | null>(n).fill(null);
      const used = new Array<number>(n).fill(0);
      for (let i = 0; i < records.length; i++) {
        const p = parts[i]!;
        const size = sizes[i]!;
        let chunk = chunks[p] ?? null;
        if (chunk === null || used[p]! + size > chunk.length) {
          chunk = chunks[p] = Buffer.allocUnsafeSlow(Math.max(size, Math.min(left[p]!, cap)));
          used[p] = 0;
        }
        const c = copyRecordInto(records[i]!, chunk, used[p]!);
        used[p]! += size;
        left[p]! -= size;
        const log = t.logs[p]!;
        log.append(c.key, c.value, c.headers, now);
        touched.add(log);
      }
    }
    for (const log of touched) for (const reader of log.readers) reader.wake();
  }

  async consume(options: ConsumeOptions): Promise<Consumer> {
    this.assertOpen();
    if (options.topics.length === 0) throw new Error('consume: no topics');
    if (options.groupId !== undefined && typeof options.from === 'object') throw new Error('consume: explicit start offsets are for independent readers only');
    const logsByTopic = options.topics.map((name) => this.topic(name).logs);
    const consumer = options.groupId === undefined ? this.reader(logsByTopic.flat(), options) : this.member(options.groupId, options);
    this.consumers.add(consumer);
    return consumer;
  }

  async endOffsets(topic: string): Promise<Map<number, string>> {
    this.assertOpen();
    return new Map(this.topic(topic).logs.map((log) => [log.partition, String(log.end)]));
  }

  async startOffsets(topic: string): Promise<Map<number, string>> {
    this.assertOpen();
    return new Map(this.topic(topic).logs.map((log) => [log.partition, String(log.start)]));
  }

  async logIdentity(topic: string): Promise<LogIdentity> {
    this.assertOpen();
    return { id: this.topic(topic).logId, exact: true };
  }

  async offsetsForTime(topic: string, timeMs: number): Promise<Map<number, string>> {
    this.assertOpen();
    return new Map(this.topic(topic).logs.map((log) => [log.partition, String(log.offsetForTime(timeMs))]));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    openBuses.delete(this);
    clearInterval(this.sweeper);
    await Promise.all([...this.consumers].map((c) => c.close()));
    await Promise.all([...this.groups.values()].map((g) => g.stop()));
    this.groups.clear();
    this.topics.clear();
  }

  /** Messages and bytes held per partition (the memory bound, observable). */
  retained(topic: string): Array<{ partition: number; start: string; end: string; messages: number; bytes: number }> {
    return this.topic(topic).logs.map((l) => ({ partition: l.partition, start: String(l.start), end: String(l.end), messages: l.retained, bytes: l.retainedBytes }));
  }

  /** What each partition of the topic retains, and its byte bound (compacted: 0); nothing for a topic this bus lacks. */
  retainedIfAny(topic: string): Array<{ messages: number; bytes: number; limitBytes: number }> {
    const t = this.topics.get(topic);
    if (t === undefined) return [];
    return t.logs.map((l) => ({ messages: l.retained, bytes: l.retainedBytes, limitBytes: l.limitBytes }));
  }

  /** A group's committed offsets ("topic/partition" → next offset), or an empty map for an unknown group. */
  committed(groupId: string): Map<string, number> {
    return this.groups.get(groupId)?.committed() ?? new Map();
  }

  private reader(logs: PartitionLog[], options: ConsumeOptions): Consumer {
    const from = options.from;
    const startOf = (log: PartitionLog): number => {
      if (from === 'beginning') return log.start;
      if (from === 'latest') return log.end;
      const at = from.offsets.get(log.topic)?.get(log.partition);
      return at === undefined ? log.start : Number(at);
    };
    const cursors = logs.map((log) => {
      const c = new Cursor(log, startOf(log), this.hooks);
      c.handler = options.onBatch;
      return c;
    });
    // Messages already retained when a 'beginning' reader starts are delivered without waiting for an append.
    for (const c of cursors) c.wake();
    let closing: Promise<void> | null = null;
    const consumer: Consumer = {
      ready: Promise.resolve(),
      close: () => {
        closing ??= Promise.all(cursors.map((c) => c.stop())).then(() => void this.consumers.delete(consumer));
        return closing;
      },
    };
    return consumer;
  }

  private member(groupId: string, options: ConsumeOptions): Consumer {
    let group = this.groups.get(groupId);
    if (group === undefined) {
      group = new Group(groupId, (t) => this.topic(t).logs, (log, next) => new Cursor(log, next, this.hooks));
      this.groups.set(groupId, group);
    }
    const g = group;
    const m: Member = { topics: [...options.topics], from: options.from === 'beginning' ? 'beginning' : 'latest', onBatch: options.onBatch, owned: [] };
    g.join(m);
    let closing: Promise<void> | null = null;
    const consumer: Consumer = {
      ready: Promise.resolve(),
      close: () => {
        closing ??= g.leave(m).then(() => void this.consumers.delete(consumer));
        return closing;
      },
    };
    return consumer;
  }

  private topic(name: string): Topic {
    const t = this.topics.get(name);
    if (t === undefined) throw new Error(`unknown topic ${name} (create it first)`);
    return t;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('bus closed');
  }

  private sweep(): void {
    const now = Date.now();
    for (const t of this.topics.values()) for (const log of t.logs) log.sweep(now);
  }
}
