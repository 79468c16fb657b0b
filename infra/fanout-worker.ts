import type { Bus } from '../bus/bus';
import { openBus } from '../bus/open';
import { UsageProducer } from '../bus/usage-producer';
import { serveFanoutWorker, type WorkerRunning, type WorkerStart } from '../fanout/cluster-worker';
import { startFanout } from '../fanout/server';
import type { Config } from './config';
import { createLogger, setRootLogger } from './base/log';
import { metrics } from './base/metrics';
import { exportRuntimeMetrics } from './base/runtime-metrics';
import { openRentals, type OpenedRentals } from '../bus/rentals-source';

// The entry script of one fanout worker process (fanout.workers > 1; the launcher starts them through
// fanout/cluster.ts). A worker is a small composition root of its own: its own bus connection and independent
// reader of the stream topics, its own projection of the rentals topic, its own usage producer, and the fanout
// with every per-process budget of fanout.* — the same as a one-process fanout, on the shared listen port.

export interface FanoutWorkerPayload {
  config: Config;
}

async function startWorker(s: WorkerStart): Promise<WorkerRunning> {
  const { config } = s.payload as FanoutWorkerPayload;
  const log = createLogger({ level: config.log.level }).child({ worker: s.slot });
  setRootLogger(log);
  exportRuntimeMetrics(metrics); // this worker's memory and event loop, labelled worker="N" on the primary's /metrics
  const opened: Array<{ close(): Promise<void> }> = [];
  const closeAll = async (): Promise<void> => {
    for (const c of opened.splice(0).reverse()) await c.close().catch((e: unknown) => log.warn({ err: (e as Error).message }, 'error while stopping a fanout worker part'));
  };
  try {
    // The primary created the topics and seeded the rentals; a worker only reads.
    const bus: Bus = await openBus({ ...config.bus, createTopics: false });
    opened.push(bus);
    const rentals: OpenedRentals = await openRentals({ ...config.rentals, seed: false }, bus, log.child({ component: 'rentals' }));
    opened.push(rentals);
    const usage = new UsageProducer(bus, { log: log.child({ component: 'usage' }) });
    opened.push(usage);
    const fanout = await startFanout(config.fanout, bus, rentals.registry, log.child({ component: 'fanout' }), { usage });
    opened.push(fanout);
    return { fanout, close: closeAll };
  } catch (e) {
    await closeAll();
    throw e;
  }
}

serveFanoutWorker(startWorker);
