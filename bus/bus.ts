// The one seam between components and the event log. Components depend on this file only; which
// implementation runs (Kafka or embedded) is chosen once at start by bus/open.ts.

/** A record as handed to produce(). Keys decide the partition, so ordering holds per key. */
export interface ProduceRecord {
  key: Buffer | null;
  value: Buffer | null; // null = tombstone (compacted topics delete the key)
  headers?: Record<string, Buffer>;
  /**
   * The partition to append to, instead of the one the key picks (a replay of recorded records keeps theirs).
   * Must exist: a partition the topic lacks fails the whole produce call.
   */
  partition?: number;
}

/**
 * A record as read back. offset is the partition-local position, as a decimal string (Kafka's form).
 * Read-only: the embedded bus shares one message object between readers.
 */
export interface BusMessage {
  topic: string;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer>;
  /** Broker (or embedded log) append time, ms since epoch. */
  timestamp: number;
}

export interface TopicSpec {
  name: string;
  partitions: number;
  /** Log compaction: the latest value per key survives; a null value deletes the key. Records need a key. */
  compacted: boolean;
  /** Retention for non-compacted topics, ms; undefined = implementation default. */
  retentionMs?: number;
  /** Copies on a Kafka cluster (capped at its broker count; bus/replication.ts); undefined = 3. The embedded bus keeps one. */
  replicas?: number;
  /** min.insync.replicas on Kafka (what an acks=all produce waits for); undefined = 2. */
  minInsync?: number;
}

/**
 * Explicit start offsets of an independent reader: topic → partition → the offset of the first message to read
 * (a decimal string, as BusMessage.offset). A partition not named starts at its first retained offset; an offset
 * retention has already dropped starts there too (the embedded bus counts the skip, Kafka resets to earliest).
 * This is how a reader resumes where another left off, or replays from a bus position.
 */
export interface StartAt {
  offsets: ReadonlyMap<string, ReadonlyMap<number, string>>;
}

export type StartFrom = 'latest' | 'beginning' | StartAt;

export interface ConsumeOptions {
  topics: string[];
  /**
   * Without groupId: an independent reader that sees every message of every partition from `from`.
   * With groupId: a member of that group; partitions are shared between members, offsets are committed
   * after each batch handler resolves, and `from` applies only when the group has no committed offset.
   */
  groupId?: string;
  from: StartFrom;
  /**
   * Kafka: the most bytes one fetch may bring for this reader (default kafkajs's 10 MiB; 1 MiB per partition).
   * Replays set it low, so a reader that waits for its client holds little. The embedded bus shares its records.
   */
  maxBytes?: number;
  /** Called with messages of one partition, in order. The next batch of that partition waits for it. */
  onBatch: (messages: BusMessage[]) => Promise<void> | void;
}

export interface Consumer {
  /** Resolves once the consumer has its partitions and positions, i.e. a message produced after this is seen. */
  readonly ready: Promise<void>;
  /** Idempotent; resolves after the running batch has finished (and, in a group, been committed). */
  close(): Promise<void>;
}

/**
 * Which log a topic's offsets belong to. An offset is a position in one log: whoever keeps offsets outside the bus
 * (billing ledgers) must not read them against another log that happens to carry the same topic name.
 */
export interface LogIdentity {
  /** Names the log, e.g. `embedded:<uuid>` or `kafka:<cluster id>/<topic>`. */
  id: string;
  /**
   * True when the id changes whenever the topic's offsets start over (the embedded bus: a new id per topic created).
   * False when a topic deleted and recreated keeps it (Kafka: the cluster id and the name, see kafka.ts): then a
   * marker must be checked as well (offsetsForTime).
   */
  exact: boolean;
}

export interface Bus {
  readonly kind: 'kafka' | 'embedded';
  createTopics(specs: TopicSpec[]): Promise<void>;
  /** One call = one batch; the topic must exist. Resolves once every record is accepted by the log (acks from all in-sync replicas). */
  produce(topic: string, records: ProduceRecord[]): Promise<void>;
  consume(options: ConsumeOptions): Promise<Consumer>;
  /** Per partition, the offset the next produced message will get (Kafka's high watermark). */
  endOffsets(topic: string): Promise<Map<number, string>>;
  /**
   * Per partition, the offset of the first record still retained (Kafka's log start offset; equals the end
   * offset when retention has dropped everything). What a reader from 'beginning' gets first.
   */
  startOffsets(topic: string): Promise<Map<number, string>>;
  /** The log behind a topic (the topic must exist). */
  logIdentity(topic: string): Promise<LogIdentity>;
  /**
   * Per partition, the first retained offset whose append time is ≥ timeMs, or the end offset when there is none
   * (Kafka's ListOffsets by timestamp).
   */
  offsetsForTime(topic: string, timeMs: number): Promise<Map<number, string>>;
  close(): Promise<void>;
}
