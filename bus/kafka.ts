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
  type logCreator,
} from 'kafkajs';
import type { Bus, BusMessage, ConsumeOptions, Consumer, LogIdentity, ProduceRecord, TopicSpec } from './bus';
import { rootLogger, type Log } from '../infra/base/log';
import { DEFAULT_REPLICAS, replicationFor } from './replication';
import { asUnreachable, brokerMasker, maskError, type Masker } from './broker-address';

// The Bus on Apache Kafka through kafkajs.
//   produce: one producer.send per call, acks from all in-sync replicas, no client-side batching delay.
//   consume: kafkajs has no manual partition assignment, so an independent reader is a consumer group of one
//     with a random id that never commits and keeps its own positions; a group member commits after each
//     handled batch. Reader (below) adds what kafkajs lacks: fixed 'latest' positions and restarts.
//   logging: kafkajs's lines go to our logger at warn, and errors leave this module, with broker addresses
//     masked (the logging rule treats endpoints like URLs).
//   log identity: the cluster id (DescribeCluster, i.e. Metadata) and the topic name. Kafka has topic ids (KIP-516,
//     Metadata v10+), but kafkajs 2.2 speaks Metadata up to v6 and never sees them, so a topic deleted and recreated
//     keeps its identity here (exact: false) and callers check a marker with offsetsForTime. Topics this bus
//     creates use LogAppendTime, so append times only grow along a partition (with the broker's clock), which is
//     what that marker relies on.

export interface KafkaBusOptions {
  brokers: string[];
  clientId?: string;
  /**
   * Idempotent producer (the broker drops a batch it already has when the client retries it), for topics
   * where duplicates cost, e.g. usage.events. kafkajs marks it experimental and needs one request in flight,
   * which serializes concurrent produce() calls, so it is off by default.
   */
  idempotent?: boolean;
  /**
   * Longest an idle fetch waits on the broker (ms). The broker answers as soon as data arrives, so this does not
   * add latency; kept short because kafkajs applies seeks, pauses, heartbeats and close() between fetches.
   */
  maxWaitMs?: number;
  /**
   * kafkajs's retry budget for every request (default: 5 retries, at most 30 s). A caller with its own retry
   * loop (UsageProducer) may want produce() to fail sooner; consumers restart themselves either way.
   */
  retry?: { retries?: number; initialRetryTimeMs?: number; maxRetryTimeMs?: number };
  log?: Log;
  /** Where `brokers` came from, for the one line an unreachable cluster gets (default: the service's bus.brokers). */
  setting?: string;
}

type Positions = Map<string, string>; // "topic\0partition" → next offset to read
const tp = (topic: string, partition: number): string => `${topic}\0${partition}`;

/** Where the brokers are set when the caller does not say (the service's config). */
const BROKERS_SETTING = 'bus.brokers (MERIDIAN__BUS__BROKERS, or KAFKA_BROKERS)';

/** How long createTopics waits for every new partition to have a leader. */
const TOPIC_LEADERS_WAIT_MS = 30_000;

/**
 * Resolves once every partition of `topics` has a leader in the cluster's metadata; retriable errors (a topic not
 * yet known to the broker asked, a leader not yet elected) are retried until `timeoutMs`.
 */
async function waitForLeaders(admin: Admin, topics: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const meta = await admin.fetchTopicMetadata({ topics });
      if (meta.topics.length === topics.length && meta.topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) return;
    } catch (e) {
      if ((e as { retriable?: boolean }).retriable !== true || Date.now() >= deadline) throw e;
    }
    if (Date.now() >= deadline) throw new Error(`topics ${topics.join(', ')}: no leader for every partition within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** How long createTopics waits, at most, for every new partition's leader to answer ListOffsets. */
const TOPIC_PRODUCE_READY_MS = 5_000;

/** ListOffsets attempts on retriable errors (about 4.5 s of backoff in all). */
const END_OFFSETS_ATTEMPTS = 10;

/**
 * kafkajs's own log lines, at warn and above only, without broker addresses (they are endpoints). Until the client
 * has reached a broker once, connection failures are not logged: the call that needed the connection fails with one
 * KafkaUnreachable naming the setting, and a dozen retry lines before it would say the same thing worse. A
 * CreateTopics answer is the caller's to judge (a topic that exists is not an error), so kafkajs's line for it goes,
 * as does its line for a ListOffsets answer (listOffsets() retries and reports).
 */
function kafkajsLogCreator(log: Log, mask: Masker, connected: () => boolean): logCreator {
  return () =>
    ({ namespace, level, log: entry }: LogEntry): void => {
      if (level !== logLevel.ERROR && level !== logLevel.WARN) return;
      if (entry.message.startsWith('Response CreateTopics')) return;
      // Nor a ListOffsets answer: the admin's go through listOffsets() below, which retries the retriable ones (a
      // KRaft broker answers "not the leader" for a moment after a topic's creation) and throws the last; a
      // consumer's own, when it fails for good, crashes the consumer, which the reader logs as it restarts it.
      if (entry.message.startsWith('Response ListOffsets')) return;
      if (!connected() && (namespace === 'Connection' || namespace === 'BrokerPool') && /connect|Connection (error|timeout)/i.test(entry.message)) return;
      const fields = { kafkajs: namespace, error: typeof entry.error === 'string' ? mask(entry.error) : undefined };
      log.warn(fields, mask(entry.message));
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
  private readonly mask: Masker;
  /** Some connection to a broker has opened (kafkajs's connection failures are logged from then on). */
  private connected = false;

  constructor(private readonly opts: KafkaBusOptions) {
    this.log = opts.log ?? rootLogger().child({ component: 'kafka' });
    this.maxWaitMs = opts.maxWaitMs ?? 25;
    this.mask = brokerMasker(opts.brokers);
    const r = opts.retry;
    this.kafka = new Kafka({
      brokers: opts.brokers,
      clientId: opts.clientId ?? 'meridian',
      logLevel: logLevel.WARN,
      logCreator: kafkajsLogCreator(this.log, this.mask, () => this.connected),
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
      this.connected = true;
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
      this.connected = true;
      return p;
    });
  }

  /**
   * An error leaving this module: a connection that never opened becomes one KafkaUnreachable line naming the
   * setting; anything else keeps its kind with broker addresses masked, so whoever logs it downstream keeps the
   * logging rule without knowing about Kafka.
   */
  private scrubError(e: unknown): Error {
    return asUnreachable(e, this.opts.brokers, this.opts.setting ?? BROKERS_SETTING) ?? maskError(e, this.mask);
  }

  /** Runs a kafkajs call, rethrowing its error scrubbed. */
  private async kafkaCall<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      throw this.scrubError(e);
    }
  }

  async createTopics(specs: TopicSpec[]): Promise<void> {
    if (specs.length === 0) return;
    const admin = await this.kafkaCall(() => this.getAdmin());
    // Only the missing ones are asked for: a second instance starting on the same cluster finds them all, and
    // existing settings are left alone. A topic another instance creates in between answers TOPIC_ALREADY_EXISTS,
    // which kafkajs swallows (and its log line is dropped above).
    const existing = new Set(await this.kafkaCall(() => admin.listTopics()));
    const missing = specs.filter((s) => !existing.has(s.name));
    if (missing.length === 0) return;
    // Replicas are capped at the brokers that answer now (bus/replication.ts): one node cannot hold three copies.
    // A broker still registering (a cluster just started) is missing from one answer: a topic made then would keep
    // fewer copies for good, so a short count is asked again a few times (at most ~3 s) before it is believed.
    const wanted = Math.max(...missing.map((s) => s.replicas ?? DEFAULT_REPLICAS));
    // One broker answering is believed at once only when one was configured (a single-node cluster: every test's
    // broker). With several bootstrap addresses, a broker whose metadata has not yet caught up with the others'
    // registration answers with itself alone (seen in CI on a 3-broker KRaft cluster just started).
    const configured = new Set(this.opts.brokers).size;
    let brokers = 0;
    for (let attempt = 0; attempt < 4 && brokers < wanted && (attempt === 0 || brokers > 1 || configured > 1); attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, 1000));
      brokers = Math.max(brokers, (await this.kafkaCall(() => admin.describeCluster())).brokers.length);
    }
    const planned = missing.map((s) => ({ s, r: replicationFor(s, brokers) }));
    // kafkajs's own waitForLeaders asks the controller's metadata once per 100 ms and gives up on the first
    // UNKNOWN_TOPIC_OR_PARTITION, which a cluster of several brokers answers while the new topic's metadata is
    // still spreading (seen on a 3-broker KRaft cluster): the wait below retries that too, and is used on any
    // cluster, since how many brokers there are is only what one of them said.
    await this.kafkaCall(() => admin.createTopics({
      waitForLeaders: false,
      topics: planned.map(({ s, r }) => ({
        topic: s.name,
        numPartitions: s.partitions,
        replicationFactor: r.replicationFactor,
        configEntries: [
          { name: 'min.insync.replicas', value: String(r.minInsync) },
          { name: 'cleanup.policy', value: s.compacted ? 'compact' : 'delete' },
          // BusMessage.timestamp is the append time, as on the embedded bus, not the producer's clock.
          { name: 'message.timestamp.type', value: 'LogAppendTime' },
          ...(s.retentionMs !== undefined && !s.compacted ? [{ name: 'retention.ms', value: String(s.retentionMs) }] : []),
        ],
      })),
    }));
    await this.kafkaCall(() => waitForLeaders(admin, planned.map(({ s }) => s.name), TOPIC_LEADERS_WAIT_MS));
    // A KRaft broker lists itself as a new partition's leader in its metadata a moment before its replica manager
    // has become the leader; a produce in that moment gets "not the leader" for that partition, and kafkajs's
    // producer (not idempotent) then resends its whole request to that broker, so the partitions that had taken it
    // hold it twice (seen in CI: 13 records for 10 on a just-made 2-partition topic). ListOffsets is answered by the
    // replica manager too, and listOffsets() retries "not the leader": once every partition answers, they take
    // produces. Best effort, within TOPIC_PRODUCE_READY_MS: the topics exist by now, and a produce that meets the
    // moment still lands (twice at worst), so this never fails the call. Through an admin client of its own, closed
    // after: kafkajs's fetchTopicOffsets adds the topic to its client's metadata targets for good, and a client whose
    // target was later deleted fails every metadata refresh with "does not host this topic-partition" (seen: making
    // a deleted topic again failed on every try).
    const deadline = new Promise<void>((r) => setTimeout(r, TOPIC_PRODUCE_READY_MS).unref());
    const probe = this.kafka.admin();
    try {
      await Promise.race([
        (async () => {
          await probe.connect();
          await Promise.all(planned.map(({ s }) => this.listOffsets(s.name, (a) => a.fetchTopicOffsets(s.name), probe)));
        })().catch(() => undefined),
        deadline,
      ]);
    } finally {
      await probe.disconnect().catch(() => undefined);
    }
  }

  async produce(topic: string, records: ProduceRecord[]): Promise<void> {
    if (records.length === 0) return;
    // kafkajs sends nothing, and reports success, for a partition the topic lacks: check explicit ones first.
    const highest = records.reduce((m, r) => (r.partition === undefined ? m : Math.max(m, r.partition)), -1);
    if (highest >= 0) await this.checkPartition(topic, highest);
    const producer = await this.kafkaCall(() => this.getProducer());
    await this.kafkaCall(() =>
      producer.send({
        topic,
        acks: -1,
        messages: records.map((r) => ({ key: r.key, value: r.value, ...(r.headers === undefined ? {} : { headers: r.headers }), ...(r.partition === undefined ? {} : { partition: r.partition }) })),
      }),
    );
  }

  /** Partition counts seen, so a replay's explicit partitions cost one metadata call per topic, not per batch. */
  private readonly partitionCounts = new Map<string, number>();

  private async checkPartition(topic: string, partition: number): Promise<void> {
    let n = this.partitionCounts.get(topic);
    // Unknown, or too small (partitions may have been added since): ask the cluster.
    if (n === undefined || partition >= n) {
      n = (await this.offsets(topic)).length;
      this.partitionCounts.set(topic, n);
    }
    if (!Number.isInteger(partition) || partition >= n) throw new RangeError(`topic ${topic} has ${n} partitions: no partition ${partition}`);
  }

  async endOffsets(topic: string): Promise<Map<number, string>> {
    return new Map((await this.offsets(topic)).map((o) => [o.partition, o.high]));
  }

  async startOffsets(topic: string): Promise<Map<number, string>> {
    return new Map((await this.offsets(topic)).map((o) => [o.partition, o.low]));
  }

  private offsets(topic: string): Promise<Array<{ partition: number; high: string; low: string }>> {
    return this.listOffsets(topic, (admin) => admin.fetchTopicOffsets(topic));
  }

  async offsetsForTime(topic: string, timeMs: number): Promise<Map<number, string>> {
    // kafkajs answers the end offset for a partition with no record at or after timeMs.
    return this.listOffsets(topic, async (admin) => new Map((await admin.fetchTopicOffsetsByTimestamp(topic, timeMs)).map((o) => [o.partition, o.offset])));
  }

  async logIdentity(topic: string): Promise<LogIdentity> {
    return this.listOffsets(topic, async (admin) => {
      const { clusterId } = await admin.describeCluster();
      await admin.fetchTopicMetadata({ topics: [topic] }); // the topic must exist, as on the embedded bus
      return { id: `kafka:${clusterId}/${topic}`, exact: false };
    });
  }

  /** A call about one topic's partitions, retried as ListOffsets needs it (below). */
  private async listOffsets<T>(topic: string, f: (admin: Admin) => Promise<T>, through?: Admin): Promise<T> {
    const admin = through ?? (await this.kafkaCall(() => this.getAdmin()));
    // Right after createTopics (waitForLeaders), a KRaft broker can still answer ListOffsets with "not the leader"
    // for a moment; kafkajs's admin does not retry it. Retry retriable errors briefly, re-reading the metadata.
    for (let attempt = 1; ; attempt++) {
      try {
        return await f(admin);
      } catch (e) {
        if (attempt >= END_OFFSETS_ATTEMPTS || (e as { retriable?: unknown }).retriable !== true) throw this.scrubError(e);
        await new Promise((r) => setTimeout(r, 100 * attempt));
        await admin.fetchTopicMetadata({ topics: [topic] }).catch(() => undefined);
      }
    }
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
    if (options.groupId !== undefined && typeof options.from === 'object') throw new Error('consume: explicit start offsets are for independent readers only');
    const from = options.from;
    let ends: Positions;
    if (from === 'latest') ends = await this.snapshotEnds(options.topics);
    else if (from === 'beginning') ends = new Map();
    else {
      // Explicit offsets are the reader's positions from the start: its join seeks to them (onJoin).
      ends = new Map();
      for (const [topic, parts] of from.offsets) for (const [p, o] of parts) ends.set(tp(topic, p), o);
    }
    const makeConsumer = (groupId: string): KConsumer =>
      this.kafka.consumer({
        groupId,
        ...(options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes, maxBytesPerPartition: Math.min(options.maxBytes, 1 << 20) }),
        maxWaitTimeInMs: this.maxWaitMs,
        minBytes: 1,
        // A member learns of a rebalance on its heartbeat (default every 3 s), so joins settle sooner; a dead
        // member is given up after 10 s instead of 30.
        heartbeatInterval: 1000,
        sessionTimeout: 10_000,
        allowAutoTopicCreation: false,
        // Restarts are the Reader's, not kafkajs's: kafkajs restarts only some crashes, and always as a new member.
        retry: { restartOnFailure: async () => false },
      });
    const reader = new Reader(makeConsumer, options, ends, () => this.getAdmin(), this.log, (e) => this.scrubError(e), () => {
      this.connected = true;
    });
    this.readers.add(reader);
    reader.onClose = () => this.readers.delete(reader);
    try {
      await reader.start();
    } catch (e) {
      await reader.close().catch(() => undefined);
      throw this.scrubError(e);
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
 * positions of independent readers across rejoins, and restarts after any crash (a reader must outlive a
 * broker outage; kafkajs gives up for good on errors it deems non-retriable, such as no group coordinator).
 * A restart is a new kafkajs consumer. An independent reader also takes a new group id then: its previous
 * member id is lost with the old consumer, and the coordinator would hold the join until that ghost's session
 * expired.
 */
class Reader implements Consumer {
  private readonly ready_ = deferred();
  private readonly independent: boolean;
  /** Independent readers: next offset per partition (they never commit), once the handler has settled. */
  private readonly positions: Positions;
  /**
   * Independent readers: next offset per partition handed to the handler, set before it is called. A rejoin while
   * a batch is in the handler seeks to `positions` (not yet moved past it), so kafkajs fetches the batch again: what
   * was already handed over is dropped rather than delivered twice. A crash restarts from `positions` (the batch
   * in the handler may not have been handled), so a restart clears this.
   */
  private readonly handed = new Map<string, bigint>();
  private kc: KConsumer;
  private groupId: string;
  private joined = false;
  private closed = false;
  private restartDelay = RESTART_MIN_MS;
  private restartTimer: NodeJS.Timeout | undefined;
  onClose: () => void = () => undefined;

  constructor(
    private readonly makeConsumer: (groupId: string) => KConsumer,
    private readonly options: ConsumeOptions,
    private readonly ends: Positions,
    private readonly admin: () => Promise<Admin>,
    private readonly log: Log,
    private readonly scrubError: (e: unknown) => Error,
    private readonly onConnected: () => void,
  ) {
    this.independent = options.groupId === undefined;
    this.positions = this.independent ? new Map(ends) : new Map();
    this.groupId = options.groupId ?? '';
    this.kc = this.newConsumer();
  }

  get ready(): Promise<void> {
    return this.ready_.promise;
  }

  private newConsumer(): KConsumer {
    if (this.independent) this.groupId = `meridian-reader-${randomUUID()}`;
    const kc = this.makeConsumer(this.groupId);
    kc.on(kc.events.GROUP_JOIN, ({ payload }) => this.onJoin(kc, payload.memberAssignment));
    kc.on(kc.events.CRASH, ({ payload }) => this.onCrash(kc, payload.error));
    return kc;
  }

  /** Connects, subscribes and starts fetching; the first join resolves `ready`. */
  async start(): Promise<void> {
    const kc = this.kc;
    await kc.connect();
    this.onConnected();
    // Explicit offsets: partitions not named start at the beginning; the named ones are sought in onJoin.
    await kc.subscribe({ topics: this.options.topics, fromBeginning: this.options.from !== 'latest' });
    // run() resolves after the first join; later failures arrive as CRASH events.
    kc.run({
      // Group members: kafkajs commits what was resolved after each batch; we resolve only after the
      // handler's promise settles, so nothing is committed before it is handled (at-least-once).
      autoCommit: !this.independent,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset }) => {
        if (batch.messages.length === 0) return;
        const last = batch.lastOffset();
        const after = BigInt(last) + 1n;
        let messages = batch.messages;
        const key = this.independent ? tp(batch.topic, batch.partition) : '';
        if (this.independent) {
          const handed = this.handed.get(key);
          if (handed !== undefined && BigInt(messages[0]!.offset) < handed) messages = messages.filter((m) => BigInt(m.offset) >= handed);
          this.handed.set(key, after);
        }
        if (messages.length > 0) {
          try {
            await this.options.onBatch(messages.map((m) => toBusMessage(batch.topic, batch.partition, m)));
          } catch (e) {
            // Not handled: kafkajs fetches it again, and that delivery must go through.
            if (this.independent) this.handed.delete(key);
            throw e;
          }
        }
        resolveOffset(last);
        if (this.independent) this.positions.set(key, after.toString());
      },
    }).catch((e: unknown) => this.onCrash(kc, e instanceof Error ? e : new Error(String(e))));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.restartTimer);
    this.ready_.reject(new Error('consumer closed before it was ready'));
    this.onClose();
    await this.kc.disconnect();
  }

  /** Runs synchronously inside kafkajs's join, before its first fetch, so seeks and pauses made here hold from the start. */
  private onJoin(kc: KConsumer, assignment: Record<string, number[]>): void {
    const assigned = Object.entries(assignment).flatMap(([topic, ps]) => ps.map((partition) => ({ topic, partition })));
    const first = !this.joined;
    this.joined = true;
    this.restartDelay = RESTART_MIN_MS;
    if (this.independent) {
      // A restarted reader is a new group that would begin at 'from'; put it back where it was.
      for (const a of assigned) {
        const at = this.positions.get(tp(a.topic, a.partition));
        if (at !== undefined) kc.seek({ ...a, offset: at });
      }
      this.ready_.resolve();
    } else if (first && this.options.from === 'latest' && assigned.length > 0) {
      this.startGroupAtEnds(kc, assigned).then(this.ready_.resolve, (e: unknown) => this.ready_.reject(this.scrubError(e)));
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
  private async startGroupAtEnds(kc: KConsumer, assigned: Array<{ topic: string; partition: number }>): Promise<void> {
    const byTopic = [...new Set(assigned.map((a) => a.topic))].map((topic) => ({ topic, partitions: assigned.filter((a) => a.topic === topic).map((a) => a.partition) }));
    kc.pause(byTopic); // before the first await: still inside the join
    try {
      const committed = await (await this.admin()).fetchOffsets({ groupId: this.groupId, topics: byTopic.map((t) => t.topic) });
      const hasCommit = new Set(committed.flatMap((t) => t.partitions.filter((p) => p.offset !== '-1').map((p) => tp(t.topic, p.partition))));
      for (const a of assigned) {
        const end = this.ends.get(tp(a.topic, a.partition));
        if (end !== undefined && !hasCommit.has(tp(a.topic, a.partition))) kc.seek({ ...a, offset: end });
      }
    } finally {
      kc.resume(byTopic);
    }
  }

  private onCrash(kc: KConsumer, error: Error): void {
    if (this.closed || kc !== this.kc) return;
    this.log.warn({ err: this.scrubError(error), retryInMs: this.restartDelay }, 'kafka consumer crashed; restarting it');
    const delay = this.restartDelay;
    this.restartDelay = Math.min(delay * 2, RESTART_MAX_MS);
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => void this.restart(kc), delay);
  }

  private async restart(old: KConsumer): Promise<void> {
    if (this.closed) return;
    await old.disconnect().catch(() => undefined); // kafkajs has already disconnected it after a crash; make sure
    this.handed.clear();
    this.kc = this.newConsumer();
    try {
      await this.start();
    } catch (e) {
      this.onCrash(this.kc, e instanceof Error ? e : new Error(String(e)));
    }
    if (this.closed) await this.kc.disconnect().catch(() => undefined); // closed while starting
  }
}
