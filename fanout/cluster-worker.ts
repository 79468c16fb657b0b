import cluster from 'node:cluster';
import { metrics } from '../infra/base/metrics';
import type { FromWorker, ToWorker } from './cluster';
import type { FanoutHandle } from './server';

// The worker side of cluster.ts: a worker entry script calls serveFanoutWorker() with the function that starts
// its fanout (own bus reader, own budgets) from the primary's payload. It reports the address once listening,
// answers stats/metrics (and the entry's own request kinds), and stops gracefully (streams end UNAVAILABLE)
// when the primary asks or on SIGTERM/SIGINT/SIGHUP.

export interface WorkerStart {
  /** 0..N-1: the worker's place, stable across restarts (its metrics label and log field). */
  slot: number;
  payload: unknown;
}

export interface WorkerRunning {
  fanout: FanoutHandle;
  /** Closes the fanout and everything the entry opened for it (bus, rentals, usage producer). */
  close(): Promise<void>;
}

export type WorkerRequestHandler = (body: Record<string, unknown>) => Promise<unknown>;

function send(m: FromWorker): void {
  process.send?.(m);
}

export function serveFanoutWorker(start: (s: WorkerStart) => Promise<WorkerRunning>, handlers: Record<string, WorkerRequestHandler> = {}): void {
  if (!cluster.isWorker) throw new Error('serveFanoutWorker runs in a cluster worker (fanout/cluster.ts starts it)');
  let running: WorkerRunning | undefined;
  let slot = -1;
  let stopping: Promise<never> | undefined;

  const stop = (): Promise<never> =>
    (stopping ??= (async () => {
      try {
        await running?.close();
      } finally {
        process.exit(0);
      }
    })());

  const answer = async (id: number, body: { kind: string } & Record<string, unknown>): Promise<void> => {
    try {
      if (running === undefined) throw new Error('not started');
      let out: unknown;
      if (body.kind === 'stats') out = running.fanout.stats();
      else if (body.kind === 'v2stats') out = running.fanout.v2Stats() ?? null;
      else if (body.kind === 'metrics') out = await metrics.linesAll({ worker: String(slot) });
      else {
        const h = handlers[body.kind];
        if (h === undefined) throw new Error(`unknown request ${body.kind}`);
        out = await h(body);
      }
      send({ fanoutCluster: 1, type: 'reply', id, ok: true, body: out });
    } catch (e) {
      send({ fanoutCluster: 1, type: 'reply', id, ok: false, message: (e as Error).message });
    }
  };

  process.on('message', (raw: unknown) => {
    const m = raw as ToWorker;
    if (typeof m !== 'object' || m === null || m.fanoutCluster !== 1) return;
    if (m.type === 'start') {
      slot = m.slot;
      start({ slot: m.slot, payload: m.payload }).then(
        (r) => {
          running = r;
          if (stopping !== undefined) return;
          send({ fanoutCluster: 1, type: 'ready', address: r.fanout.address });
        },
        (e: unknown) => {
          send({ fanoutCluster: 1, type: 'failed', message: (e as Error).message });
          process.exit(1);
        },
      );
    } else if (m.type === 'request') {
      void answer(m.id, m.body);
    } else if (m.type === 'close') {
      void stop();
    }
  });
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
  process.once('SIGHUP', () => void stop()); // the terminal went away: as the primary does, stop cleanly
  // When the primary itself dies, node:cluster exits the worker at once (its 'disconnect' handler): the
  // connections drop and clients reconnect to whatever replaces the service.
}
