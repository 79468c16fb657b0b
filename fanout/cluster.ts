import cluster, { type Worker } from 'node:cluster';
import type { FamilyLines } from '../infra/base/metrics';
import type { Log } from '../infra/base/log';
import type { FanoutStats } from './v1/hub';

// The primary side of fanout.workers > 1: N processes (node:cluster) serve Subscribe streams on one listen port.
// The primary only accepts connections and hands each to the next worker in turn (cluster's round-robin, the
// default on Linux), so streams spread by connection. Every worker reads the bus itself (an independent reader:
// every worker sees every transaction) and holds the per-process budgets (queue budget, stream caps, filter key
// caps) of its own. The primary asks the workers for their stats and metrics over the IPC channel, restarts a
// worker that crashes, and on close() lets each one end its streams (UNAVAILABLE) before it exits. A worker
// also stops gracefully on its own SIGTERM/SIGINT (exit 0: not restarted), so a signal to the whole process
// group (Ctrl-C, systemd) ends everything cleanly.
//
// Worker side: cluster-worker.ts. Messages (all tagged `fanoutCluster`, so nothing else on the channel is taken
// for them):
//   primary → worker  start {slot, payload}  |  request {id, body}  |  close
//   worker → primary  ready {address}  |  reply {id, ok, body | message}  |  failed {message}
// Built-in request bodies: {kind: 'stats'} → FanoutStats, {kind: 'v2stats'} → FanoutHandle.v2Stats() (null with
// v2 off), {kind: 'metrics'} → FamilyLines[] labelled worker="<slot>". A worker entry may answer more kinds (the benchmark's feed).

export type ToWorker =
  | { fanoutCluster: 1; type: 'start'; slot: number; payload: unknown }
  | { fanoutCluster: 1; type: 'request'; id: number; body: { kind: string } & Record<string, unknown> }
  | { fanoutCluster: 1; type: 'close' };

export type FromWorker =
  | { fanoutCluster: 1; type: 'ready'; address: string }
  | { fanoutCluster: 1; type: 'reply'; id: number; ok: true; body: unknown }
  | { fanoutCluster: 1; type: 'reply'; id: number; ok: false; message: string }
  | { fanoutCluster: 1; type: 'failed'; message: string };

export interface FanoutWorkersOptions {
  count: number;
  /** The worker's script: it calls serveFanoutWorker() (cluster-worker.ts). */
  exec: string;
  execArgv?: string[];
  /** Sent to every worker when it starts (JSON: the config it needs). */
  payload: unknown;
  log: Log;
  /** How long a worker may take to report its listen address. */
  startTimeoutMs?: number;
  /** How long close() waits for a worker to exit after asking it to, before SIGKILL. */
  stopTimeoutMs?: number;
  /** How long after an unexpected exit a worker is started again. */
  restartDelayMs?: number;
}

export interface WorkerInfo {
  slot: number;
  pid: number;
}

export interface FanoutWorkers {
  /** host:port the workers share. */
  address: string;
  /** The running workers, by slot. */
  workers(): WorkerInfo[];
  /** Every slot has a worker that reported ready. */
  healthy(): boolean;
  /** Sends `body` to every running worker; one answer per worker, in slot order. */
  request<T>(body: { kind: string } & Record<string, unknown>, timeoutMs?: number): Promise<Array<{ slot: number; pid: number; body: T }>>;
  stats(): Promise<Array<{ slot: number; pid: number; body: FanoutStats }>>;
  /** Each worker's metric families, labelled worker="<slot>". */
  metrics(): Promise<FamilyLines[][]>;
  /** Asks every worker to end its streams and exit; kills those that do not within stopTimeoutMs. */
  close(): Promise<void>;
}

interface Slot {
  slot: number;
  worker: Worker | undefined;
  ready: boolean;
}

const isFromWorker = (m: unknown): m is FromWorker => typeof m === 'object' && m !== null && (m as { fanoutCluster?: unknown }).fanoutCluster === 1;

export async function startFanoutWorkers(o: FanoutWorkersOptions): Promise<FanoutWorkers> {
  if (!cluster.isPrimary) throw new Error('fanout workers are started from the primary process');
  const slots: Slot[] = Array.from({ length: o.count }, (_v, slot) => ({ slot, worker: undefined, ready: false }));
  const pending = new Map<number, { resolve: (b: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  let closing = false;
  let address = '';

  /** Forks the worker of `s` and resolves with its address once it listens (rejects if it fails or exits first). */
  const spawn = (s: Slot): Promise<string> => {
    // 'advanced': structured clone, so the payload (a parsed config) may hold BigInts and Buffers.
    cluster.setupPrimary({ exec: o.exec, execArgv: o.execArgv ?? process.execArgv, args: [], serialization: 'advanced' });
    const w = cluster.fork();
    s.worker = w;
    s.ready = false;
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`fanout worker ${s.slot} did not listen within ${o.startTimeoutMs ?? 60_000} ms`));
        w.kill('SIGKILL');
      }, o.startTimeoutMs ?? 60_000);
      // A send to a worker that is exiting fails on the channel; the exit handler deals with the worker.
      w.on('error', (e: Error) => o.log.warn({ worker: s.slot, err: e.message }, 'fanout worker channel error'));
      w.on('message', (m: unknown) => {
        if (!isFromWorker(m)) return;
        if (m.type === 'ready') {
          clearTimeout(timer);
          s.ready = true;
          resolve(m.address);
        } else if (m.type === 'failed') {
          clearTimeout(timer);
          reject(new Error(`fanout worker ${s.slot}: ${m.message}`));
        } else if (m.type === 'reply') {
          const p = pending.get(m.id);
          if (p === undefined) return;
          pending.delete(m.id);
          if (m.ok) p.resolve(m.body);
          else p.reject(new Error(`fanout worker ${s.slot}: ${m.message}`));
        }
      });
      w.once('online', () => {
        try {
          w.send({ fanoutCluster: 1, type: 'start', slot: s.slot, payload: o.payload } satisfies ToWorker);
        } catch (e) {
          reject(e as Error);
          w.kill('SIGKILL');
        }
      });
      w.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`fanout worker ${s.slot} exited (${code ?? signal}) before it listened`));
        if (s.worker !== w) return;
        s.ready = false;
        s.worker = undefined;
        if (closing) return;
        // Exit 0: it was told to stop (a signal sent to it alone); the slot stays empty and healthy() says so.
        if (code === 0) {
          o.log.warn({ worker: s.slot, pid: w.process.pid }, 'fanout worker stopped on its own');
          return;
        }
        // A crash: its streams are gone with it (clients see the connection drop and reconnect); refill the slot.
        o.log.error({ worker: s.slot, pid: w.process.pid, code, signal }, 'fanout worker exited; starting another');
        const t = setTimeout(() => {
          if (closing) return;
          spawn(s).catch((e: unknown) => o.log.error({ worker: s.slot, err: (e as Error).message }, 'fanout worker did not restart'));
        }, o.restartDelayMs ?? 1000);
        t.unref();
      });
    });
  };

  const stopAll = async (): Promise<void> => {
    closing = true;
    await Promise.all(
      slots.map(async (s) => {
        const w = s.worker;
        if (w === undefined || w.isDead()) return;
        const exited = new Promise<void>((r) => w.once('exit', () => r()));
        try {
          w.send({ fanoutCluster: 1, type: 'close' } satisfies ToWorker);
        } catch {
          w.kill('SIGKILL'); // the channel is gone already
        }
        const kill = setTimeout(() => {
          o.log.warn({ worker: s.slot, pid: w.process.pid }, 'fanout worker did not stop in time; killing it');
          w.kill('SIGKILL');
        }, o.stopTimeoutMs ?? 10_000);
        await exited;
        clearTimeout(kill);
      }),
    );
    for (const p of pending.values()) p.reject(new Error('fanout workers closed'));
    pending.clear();
  };

  try {
    const addresses = await Promise.all(slots.map((s) => spawn(s)));
    address = addresses[0]!;
    if (addresses.some((a) => a !== address)) throw new Error(`fanout workers listen on different addresses: ${addresses.join(', ')}`);
  } catch (e) {
    await stopAll();
    throw e;
  }
  o.log.info({ workers: o.count, pids: slots.map((s) => s.worker?.process.pid) }, 'fanout workers listening');

  const request = async <T>(body: { kind: string } & Record<string, unknown>, timeoutMs = 10_000): Promise<Array<{ slot: number; pid: number; body: T }>> => {
    const live = slots.filter((s) => s.ready && s.worker !== undefined && !s.worker.isDead());
    return Promise.all(
      live.map(async (s) => {
        const w = s.worker!;
        const id = nextId++;
        const answer = new Promise<T>((resolve, reject) => {
          const timer = setTimeout(() => {
            pending.delete(id);
            reject(new Error(`fanout worker ${s.slot}: no answer to ${body.kind} within ${timeoutMs} ms`));
          }, timeoutMs);
          pending.set(id, {
            resolve: (b) => {
              clearTimeout(timer);
              resolve(b as T);
            },
            reject: (e) => {
              clearTimeout(timer);
              reject(e);
            },
          });
        });
        w.send({ fanoutCluster: 1, type: 'request', id, body } satisfies ToWorker);
        return { slot: s.slot, pid: w.process.pid ?? 0, body: await answer };
      }),
    );
  };

  let closed: Promise<void> | undefined;
  return {
    address,
    workers: () => slots.flatMap((s) => (s.worker === undefined || !s.ready ? [] : [{ slot: s.slot, pid: s.worker.process.pid ?? 0 }])),
    healthy: () => !closing && slots.every((s) => s.ready && s.worker !== undefined && !s.worker.isDead()),
    request,
    stats: () => request<FanoutStats>({ kind: 'stats' }),
    metrics: async () => (await request<FamilyLines[]>({ kind: 'metrics' })).map((r) => r.body),
    close: () => (closed ??= stopAll().then(() => o.log.info('fanout workers stopped'))),
  };
}

/** A worker entry script in `dir`: the compiled .js, or the .ts through ts-node when `callerFile` is TypeScript. */
export function workerScript(dir: string, base: string, callerFile: string): { exec: string; execArgv: string[] } {
  const compiled = callerFile.endsWith('.js');
  return { exec: `${dir}/${base}${compiled ? '.js' : '.ts'}`, execArgv: compiled ? [] : ['-r', 'ts-node/register/transpile-only'] };
}
