import { randomUUID } from 'node:crypto';
import {
  Kafka,
  Partitioners,
  logLevel,
  type Admin,
  type Consumer as KConsumer,
  type IHeaders,
  type KafkaMessage,
  type LogEntry,
  type Producer,
} from 'kafkajs';
import type { Bus, BusMessage, ConsumeOptions, Consumer, ProduceRecord, TopicSpec } from './bus';
import { rootLogger, type Log } from '../infra/log';

// The Bus on Apache Kafka through kafkajs. kafkajs has no manual partition assignment, so an independent
// reader is a consumer group of one with a random id that never commits, and it keeps its own positions.

export interface KafkaBusOptions {
  brokers: string[];
  clientId?: string;
  /**
   * Idempotent producer (the broker drops a batch it already has when the client retries it), for topics
   * where duplicates cost, e.g. usage.events. kafkajs marks it experimental and needs one request in flight,
   * which serializes concurrent produce() calls, so it is off by default.
   */
  idempotent?: boolean;
  /** Longest a fetch waits on the broker for data; small for low latency (the broker answers as soon as 1 byte is there). */
  maxWaitMs?: number;
  /**
   * kafkajs's retry budget for every request (default: 5 retries, at most 30 s). A caller with its own retry
   * loop (UsageProducer) may want produce() to fail sooner; consumers restart themselves either way.
   */
  retry?: { retries?: number; initialRetryTimeMs?: number; maxRetryTimeMs?: number };
  log?: Log;
}

type Positions = Map<string, string>; // "topic\0partition" → next offset to read
const tp = (topic: string, partition: number): string => `${topic}\0${partition}`;
/** Kafka's "host:port" text, which the logging rule treats like a URL. */
const HOST_PORT_RE = /\b[\w.-]+:\d{2,5}\b/g;

/** kafkajs's own log lines, at warn and above only, without broker addresses (they are endpoints). */
function kafkajsLogCreator(log: Log) {
  return () =>
    ({ namespace, level, log: entry }: LogEntry): void => {
      const fields = { kafkajs: namespace, error: typeof entry.error === 'string' ? entry.error.replace(HOST_PORT_RE, '[broker]') : undefined };
      const msg = entry.message.replace(HOST_PORT_RE, '[broker]');
      if (level === logLevel.ERROR || level === logLevel.WARN) log.warn(fields, msg);
    };
}

function toHeaders(h: IHeaders | undefined): Record<string, Buffer> {
  const out: Record<string, Buffer> = {};
  if (h === undefined) return out;
  for (const [k, v] of Object.entries(h)) {
    // Kafka allows repeated header keys (kafkajs gives an array); the last one wins, like Java's lastHeader().
    const last = Array.isArray(v) ? v[v.length - 1] : v;
    if (last !== undefined) out[k] = Buffer.isBuffer(last) ? last : Buffer.from(last);
  }
  return out;
}

function toBusMessage(topic: string, partition: number, m: KafkaMessage): BusMessage {
  return { topic, partition, offset: m.offset, key: m.key, value: m.value, headers: toHeaders(m.headers), timestamp: Number(m.timestamp) };
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
  reject: (e: Error) => void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined); // nobody may await `ready`; a rejection must not be unhandled
  return { promise, resolve, reject };
}

export class KafkaBus implements Bus {
  readonly kind = 'kafka' as const;
  private readonly kafka: Kafka;
  private readonly log: Log;
  private readonly maxWaitMs: number;
  private readonly readers = new Set<Reader>();
  private admin: Promise<Admin> | null = null;
  private producer: Promise<Producer> | null = null;

  constructor(private readonly opts: KafkaBusOptions) {
    this.log = opts.log ?? rootLogger().child({ component: 'kafka' });
    this.maxWaitMs = opts.maxWaitMs ?? 25;
    const r = opts.retry;
    this.kafka = new Kafka({
      brokers: opts.brokers,
      clientId: opts.clientId ?? 'meridian',
      logLevel: logLevel.WARN,
      logCreator: kafkajsLogCreator(this.log),
      ...(r === undefined ? {} : { retry: { retries: r.retries, initialRetryTime: r.initialRetryTimeMs, maxRetryTime: r.maxRetryTimeMs } }),
    });
  }

  /** Connects once on first use; a failed connect is forgotten so the next call tries again. */
  private lazy<T>(get: () => Promise<T> | null, set: (p: Promise<T> | null) => void, make: () => Promise<T>): Promise<T> {
    const existing = get();
    if (existing !== null) return existing;
    const p = make();
    set(p);
    p.catch(() => {
      if (get() === p) set(null);
    });
    return p;
  }

  private getAdmin(): Promise<Admin> {
    return this.lazy(() => this.admin, (p) => (this.admin = p), async () => {
      const a = this.kafka.admin();
      await a.connect();
      return a;
    });
  }

  private getProducer(): Promise<Producer> {
    return this.lazy(() => this.producer, (p) => (this.producer = p), async () => {
      const p = this.kafka.producer({
        // Passing the partitioner explicitly silences kafkajs's v2 partitioner warning; same (Java-compatible) choice.
        createPartitioner: Partitioners.DefaultPartitioner,
        allowAutoTopicCreation: false,
        ...(this.opts.idempotent === true ? { idempotent: true, maxInFlightRequests: 1 } : {}),
      });
      await p.connect();
      return p;
    });
  }

  async createTopics(specs: TopicSpec[]): Promise<void> {
    if (specs.length === 0) return;
    const admin = await this.getAdmin();
    // false = all existed already (kafkajs swallows TOPIC_ALREADY_EXISTS); existing settings are left alone.
    await admin.createTopics({
      waitForLeaders: true,
      topics: specs.map((s) => ({
        topic: s.name,
        numPartitions: s.partitions,
        configEntries: [
          { name: 'cleanup.policy', value: s.compacted ? 'compact' : 'delete' },
          // BusMessage.timestamp is the append time, as on the embedded bus, not the producer's clock.
          { name: 'message.timestamp.type', value: 'LogAppendTime' },
          ...(s.retentionMs !== undefined && !s.compacted ? [{ name: 'retention.ms', value: String(s.retentionMs) }] : []),
        ],
      })),
    });
  }

  async produce(topic: string, records: ProduceRecord[]): Promise<void> {
    if (records.length === 0) return;
    const producer = await this.getProducer();
    await producer.send({
      topic,
      acks: -1,
      messages: records.map((r) => ({ key: r.key, value: r.value, ...(r.headers === undefined ? {} : { headers: r.headers }) })),
    });
  }

  async endOffsets(topic: string): Promise<Map<number, string>> {
    const admin = await this.getAdmin();
    const offsets = await admin.fetchTopicOffsets(topic);
    return new Map(offsets.map((o) => [o.partition, o.high]));
  }

  private async snapshotEnds(topics: string[]): Promise<Positions> {
    const out: Positions = new Map();
    for (const t of topics) for (const [p, o] of await this.endOffsets(t)) out.set(tp(t, p), o);
    return out;
  }

  async consume(options: ConsumeOptions): Promise<Consumer> {
    // 'latest' means: everything produced after consume() was called. kafkajs would resolve "latest" lazily at
    // its first fetch, after the join, so a message produced in between would be skipped. Take the end
    // offsets now and seek to them instead.
    const ends = options.from === 'latest' ? await this.snapshotEnds(options.topics) : new Map<string, string>();
    const groupId = options.groupId ?? `meridian-reader-${randomUUID()}`;
    // Heartbeats every second (default 3 s): a member learns of a rebalance on its heartbeat, so joins settle sooner.
    const kc = this.kafka.consumer({ groupId, maxWaitTimeInMs: this.maxWaitMs, minBytes: 1, heartbeatInterval: 1000, allowAutoTopicCreation: false });
    const reader = new Reader(kc, groupId, options, ends, () => this.getAdmin(), this.log);
    this.readers.add(reader);
    reader.onClose = () => this.readers.delete(reader);
    try {
      await reader.start();
    } catch (e) {
      await reader.close();
      throw e;
    }
    return reader;
  }

  async close(): Promise<void> {
    const errors: unknown[] = [];
    const attempt = async (f: () => Promise<void>): Promise<void> => {
      try {
        await f();
      } catch (e) {
        errors.push(e);
      }
    };
    await Promise.all([...this.readers].map((r) => attempt(() => r.close())));
    const producer = this.producer;
    const admin = this.admin;
    this.producer = null;
    this.admin = null;
    if (producer !== null) await attempt(async () => (await producer).disconnect());
    if (admin !== null) await attempt(async () => (await admin).disconnect());
    if (errors.length > 0) this.log.warn({ errors: errors.length }, 'errors while closing the Kafka bus');
  }
}

const RESTART_MIN_MS = 500;
const RESTART_MAX_MS = 10_000;

/**
 * One consume() call: a kafkajs consumer plus what kafkajs does not do for us — fixed 'latest' positions,
 * positions of independent readers across rejoins, and restarts after crashes kafkajs gives up on (it stops
 * for good on errors it deems non-retriable, e.g. no group coordinator during a broker outage).
 */
class Reader implements Consumer {
  private readonly ready_ = deferred();
  private readonly independent: boolean;
  /** Independent readers: next offset per partition (they never commit). */
  private readonly positions: Positions;
  private joined = false;
  private closed = false;
  private restartDelay = RESTART_MIN_MS;
  private restartTimer: NodeJS.Timeout | undefined;
  onClose: () => void = () => undefined;

  constructor(
    private readonly kc: KConsumer,
    private readonly groupId: string,
    private readonly options: ConsumeOptions,
    private readonly ends: Positions,
    private readonly admin: () => Promise<Admin>,
    private readonly log: Log,
  ) {
    this.independent = options.groupId === undefined;
    this.positions = this.independent ? new Map(ends) : new Map();
    kc.on(kc.events.GROUP_JOIN, ({ payload }) => this.onJoin(payload.memberAssignment));
    kc.on(kc.events.CRASH, ({ payload }) => this.onCrash(payload.error, payload.restart));
  }

  get ready(): Promise<void> {
    return this.ready_.promise;
  }

  async start(): Promise<void> {
    await this.kc.connect();
    await this.kc.subscribe({ topics: this.options.topics, fromBeginning: this.options.from === 'beginning' });
    this.run();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.restartTimer);
    this.ready_.reject(new Error('consumer closed before it was ready'));
    this.onClose();
    await this.kc.disconnect();
  }

  private run(): void {
    // run() resolves after the first join; failures after that arrive as CRASH events.
    this.kc
      .run({
        // Group members: kafkajs commits what was resolved after each batch; we resolve only after the
        // handler's promise settles, so nothing is committed before it is handled (at-least-once).
        autoCommit: !this.independent,
        eachBatchAutoResolve: false,
        eachBatch: async ({ batch, resolveOffset }) => {
          if (batch.messages.length === 0) return;
          await this.options.onBatch(batch.messages.map((m) => toBusMessage(batch.topic, batch.partition, m)));
          const last = batch.lastOffset();
          resolveOffset(last);
          if (this.independent) this.positions.set(tp(batch.topic, batch.partition), (BigInt(last) + 1n).toString());
        },
      })
      .catch((e: unknown) => this.onCrash(e instanceof Error ? e : new Error(String(e)), false));
  }

  /** Runs synchronously inside kafkajs's join, before its first fetch, so seeks and pauses made here hold from the start. */
  private onJoin(assignment: Record<string, number[]>): void {
    const assigned = Object.entries(assignment).flatMap(([topic, ps]) => ps.map((partition) => ({ topic, partition })));
    const first = !this.joined;
    this.joined = true;
    this.restartDelay = RESTART_MIN_MS;
    if (this.independent) {
      // kafkajs would start a rejoined reader over at 'from'; put it back where it was.
      for (const a of assigned) {
        const at = this.positions.get(tp(a.topic, a.partition));
        if (at !== undefined) this.kc.seek({ ...a, offset: at });
      }
      this.ready_.resolve();
    } else if (first && this.options.from === 'latest' && assigned.length > 0) {
      this.startGroupAtEnds(assigned).then(this.ready_.resolve, this.ready_.reject);
    } else {
      this.ready_.resolve();
    }
  }

  /**
   * A group member starting at 'latest': partitions the group has never committed start at the end offsets
   * taken in consume(). They are paused while the group's committed offsets are read (another member may
   * have committed since), then sought and resumed. With autoCommit, kafkajs commits a seek, so a later
   * rebalance keeps this start point instead of resolving 'latest' again.
   */
  private async startGroupAtEnds(assigned: Array<{ topic: string; partition: number }>): Promise<void> {
    const byTopic = [...new Set(assigned.map((a) => a.topic))].map((topic) => ({ topic, partitions: assigned.filter((a) => a.topic === topic).map((a) => a.partition) }));
    this.kc.pause(byTopic); // before the first await: still inside the join
    try {
      const committed = await (await this.admin()).fetchOffsets({ groupId: this.groupId, topics: byTopic.map((t) => t.topic) });
      const hasCommit = new Set(committed.flatMap((t) => t.partitions.filter((p) => p.offset !== '-1').map((p) => tp(t.topic, p.partition))));
      for (const a of assigned) {
        const end = this.ends.get(tp(a.topic, a.partition));
        if (end !== undefined && !hasCommit.has(tp(a.topic, a.partition))) this.kc.seek({ ...a, offset: end });
      }
    } finally {
      this.kc.resume(byTopic);
    }
  }

  private onCrash(error: Error, kafkajsRestarts: boolean): void {
    if (this.closed) return;
    this.log.warn({ err: error, restart: kafkajsRestarts }, 'kafka consumer crashed');
    if (kafkajsRestarts) return;
    // kafkajs has disconnected the consumer and will not restart it; a reader must outlive a broker outage.
    const delay = this.restartDelay;
    this.restartDelay = Math.min(delay * 2, RESTART_MAX_MS);
    this.restartTimer = setTimeout(() => {
      if (this.closed) return;
      this.kc.connect().then(
        () => (this.closed ? void this.kc.disconnect().catch(() => undefined) : this.run()),
        (e: unknown) => this.onCrash(e instanceof Error ? e : new Error(String(e)), false),
      );
    }, delay);
  }
}
