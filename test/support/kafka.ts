import { onRunEnd } from './global-fixtures';
import { freePort, startLocalBroker, waitForKafka, type LocalBroker } from '../../infra/local/kafka/broker';

// Kafka for tests, started once per run on first use and stopped when the run ends. In order:
//   1. KAFKA_BROKERS from the environment (a cluster someone else runs; nothing to stop)
//   2. testcontainers, when a container engine answers: apache/kafka in KRaft mode
//   3. the local broker of infra/local/kafka (Maven jars + java), which needs no container engine

const KAFKA_IMAGE = 'apache/kafka:3.9.1';
const RUNTIME_PROBE_MS = 5_000;
const READY_TIMEOUT_MS = 120_000;

let shared: Promise<string[]> | null = null;

/** Bootstrap addresses of the run's shared broker. Tests must use their own topic names. */
export function kafkaBrokers(): Promise<string[]> {
  shared ??= startShared();
  return shared;
}

async function startShared(): Promise<string[]> {
  const fromEnv = (process.env.KAFKA_BROKERS ?? '').split(',').map((b) => b.trim()).filter((b) => b.length > 0);
  if (fromEnv.length > 0) return fromEnv;
  const container = await startContainer();
  if (container !== null) return container;
  const broker = await startLocalBroker();
  onRunEnd(() => broker.destroy());
  return broker.brokers;
}

/** null when no container engine answers: getContainerRuntimeClient() rejects within milliseconds then. */
async function startContainer(): Promise<string[] | null> {
  const tc = await import('testcontainers');
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
  onRunEnd(async () => {
    await container.stop();
  });
  const brokers = [`${host}:${port}`];
  await waitForKafka(brokers, READY_TIMEOUT_MS);
  return brokers;
}

/**
 * A broker of the caller's own that it may stop and start (fault tests); never the shared one. Always the
 * local broker, since restarts need the same port and data. Destroyed at the end of the run at the latest.
 */
export async function restartableBroker(): Promise<LocalBroker> {
  const broker = await startLocalBroker();
  onRunEnd(() => broker.destroy());
  return broker;
}
