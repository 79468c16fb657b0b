import { openBus } from '../../bus/open';
import { RecordingError, type RecordingMeta } from '../../bus/recording';
import { fileChunks, readRecording, verifyRecordingFile } from '../../bus/recording-io';
import { loadRecords, prepareTopics, type LoadResult, type Pace } from '../../bus/topic-load';
import { createLogger } from '../../infra/base/log';
import { freePort, startLocalBroker, waitForKafka } from '../../infra/local/kafka/broker';

// A Kafka broker holding a recording (`meridian topics record`), for tests: ours and users' own CI. The broker is
// found or started exactly as this project's tests get theirs (test/support/kafka.ts uses startBroker):
//   1. KAFKA_BROKERS from the environment (someone else's; nothing to stop)
//   2. testcontainers, when a container engine answers: apache/kafka in KRaft mode
//   3. the local KRaft broker of infra/local/kafka (Maven-fetched jars and java; no container engine)
//
//   const b = await startRecordedBroker('test/fixtures/topics/demo-stream.mrec');
//   // … point the code under test at b.brokers; b.loaded.byTopic says what went in …
//   await b.stop();

const KAFKA_IMAGE = 'apache/kafka:3.9.1';
const RUNTIME_PROBE_MS = 5_000;
const READY_TIMEOUT_MS = 120_000;

export interface Broker {
  brokers: string[];
  /** Where it came from: the environment, a container, or the local broker from jars. */
  how: 'env' | 'container' | 'local';
  /** Stops what startBroker started (nothing for 'env'). */
  stop(): Promise<void>;
}

/** A broker: KAFKA_BROKERS, else testcontainers when a container engine answers, else the local KRaft broker. */
export async function startBroker(): Promise<Broker> {
  const fromEnv = (process.env.KAFKA_BROKERS ?? '').split(',').map((b) => b.trim()).filter((b) => b.length > 0);
  if (fromEnv.length > 0) return { brokers: fromEnv, how: 'env', stop: async () => undefined };
  const container = await startContainer();
  if (container !== null) return container;
  const local = await startLocalBroker();
  return { brokers: local.brokers, how: 'local', stop: () => local.destroy() };
}

/** null when no container engine answers: getContainerRuntimeClient() rejects within milliseconds then. */
async function startContainer(): Promise<Broker | null> {
  // A user's project may not have testcontainers installed (it is a devDependency here): then no container.
  const tc = await import('testcontainers').catch(() => null);
  if (tc === null) return null;
  let host: string;
  try {
    const probe = tc.getContainerRuntimeClient();
    const timeout = new Promise<never>((_r, reject) => setTimeout(() => reject(new Error('container runtime probe timed out')), RUNTIME_PROBE_MS).unref());
    host = (await Promise.race([probe, timeout])).info.containerRuntime.host;
  } catch {
    return null;
  }
  // @testcontainers/kafka is not a dependency, so configure the official image directly. The advertised
  // listener must name the host-side port, which is only known in advance with a fixed binding.
  const port = await freePort();
  const container = await new tc.GenericContainer(KAFKA_IMAGE)
    .withExposedPorts({ container: 9092, host: port })
    .withEnvironment({
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: 'PLAINTEXT://:9092,CONTROLLER://:9093',
      KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://${host}:${port}`,
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS: '1',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
      KAFKA_HEAP_OPTS: '-Xmx512m -Xms128m',
    })
    .withWaitStrategy(tc.Wait.forLogMessage(/Kafka Server started/))
    .withStartupTimeout(READY_TIMEOUT_MS)
    .start();
  const brokers = [`${host}:${port}`];
  try {
    await waitForKafka(brokers, READY_TIMEOUT_MS);
  } catch (e) {
    await container.stop();
    throw e;
  }
  return { brokers, how: 'container', stop: async () => void (await container.stop()) };
}

export interface LoadOptions {
  /** Recorded topic → topic to write (tests on a shared broker use names of their own). */
  rename?: Record<string, string>;
  /** Default 'fast'. */
  pace?: Pace;
}

export interface Loaded extends LoadResult {
  meta: RecordingMeta;
}

/**
 * Writes a recording file into the brokers: the file is checked whole first (a corrupt or cut-short file throws a
 * RecordingError and nothing is written), topics are created where missing with the recorded partitions.
 */
export async function loadRecording(brokers: string[], file: string, o: LoadOptions = {}): Promise<Loaded> {
  const { meta } = await verifyRecordingFile(file);
  const rename = new Map(Object.entries(o.rename ?? {}));
  const log = createLogger({ level: process.env.LOG_LEVEL ?? 'error', destination: process.stderr });
  const bus = await openBus({ kind: 'kafka', brokers, clientId: 'meridian-recorded-broker', createTopics: false, streamPartitions: 1 }, { log });
  try {
    const problem = await prepareTopics(bus, meta, rename);
    if (problem !== null) throw new RecordingError(problem);
    const r = await loadRecords(readRecording(fileChunks(file)), bus, { pace: o.pace ?? 'fast', rename });
    return { ...r, meta };
  } finally {
    await bus.close();
  }
}

export interface RecordedBroker extends Broker {
  loaded: Loaded;
}

/** A broker (startBroker, or the one given) with the recording loaded into it. */
export async function startRecordedBroker(file: string, o: LoadOptions & { brokers?: string[] } = {}): Promise<RecordedBroker> {
  const broker: Broker = o.brokers !== undefined ? { brokers: o.brokers, how: 'env', stop: async () => undefined } : await startBroker();
  try {
    return { ...broker, loaded: await loadRecording(broker.brokers, file, o) };
  } catch (e) {
    await broker.stop();
    throw e;
  }
}
