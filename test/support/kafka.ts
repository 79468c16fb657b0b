import { onRunEnd } from './global-fixtures';
import { startLocalBroker, type LocalBroker } from '../../infra/local/kafka/broker';
import { startBroker } from './recorded-broker';

// Kafka for tests, started once per run on first use and stopped when the run ends, by startBroker
// (test/support/recorded-broker.ts, also what users' CI calls). In order:
//   1. KAFKA_BROKERS from the environment (a cluster someone else runs; nothing to stop)
//   2. testcontainers, when a container engine answers: apache/kafka in KRaft mode
//   3. the local broker of infra/local/kafka (Maven jars + java), which needs no container engine

let shared: Promise<string[]> | null = null;

/** Bootstrap addresses of the run's shared broker. Tests must use their own topic names. */
export function kafkaBrokers(): Promise<string[]> {
  shared ??= startShared();
  return shared;
}

async function startShared(): Promise<string[]> {
  const broker = await startBroker();
  onRunEnd(() => broker.stop());
  return broker.brokers;
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
