import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { classpath, ensureKafkaJars } from './jars';

// One Apache Kafka broker in KRaft mode (broker and controller in one JVM) on loopback, for tests and
// single-machine runs. Layout of its folder:
//   server.properties, log4j.properties   written at every start (same ports, same data)
//   broker.log                            the JVM's stdout and stderr, appended across restarts
//   data/                                 log.dirs, which also holds the KRaft metadata log

export interface LocalBrokerOptions {
  /** Client port; default a free one. The controller port is always a free one. */
  port?: number;
  /** Folder for data and logs, kept after stop; default a fresh temp folder removed by destroy(). */
  dir?: string;
  /** JVM heap in MiB; 256 is plenty for tests. */
  heapMb?: number;
  /** Per attempt: JVM start to a successful describeCluster. */
  startTimeoutMs?: number;
  /** Start attempts before giving up (quorum formation can stall on a loaded machine). */
  attempts?: number;
}

export interface LocalBroker {
  /** Bootstrap addresses, e.g. ["127.0.0.1:40123"]. */
  readonly brokers: string[];
  readonly dir: string;
  readonly logFile: string;
  /** Restarts the same broker (same ports, same data) after stop(). */
  start(): Promise<void>;
  /** SIGTERM (controlled shutdown), SIGKILL if it has not exited in time. Data is kept. */
  stop(): Promise<void>;
  /** stop(), then removes the folder if startLocalBroker made it. */
  destroy(): Promise<void>;
}

const DEFAULT_HEAP_MB = 256;
const DEFAULT_START_TIMEOUT_MS = 90_000;
const STOP_GRACE_MS = 30_000;

/** A port nobody listens on right now (the kernel's pick for port 0). Another process may take it before the JVM binds: start() retries. */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const a = srv.address();
      srv.close(() => (a !== null && typeof a === 'object' ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

/** KRaft cluster ids are a UUID's 16 bytes in base64url (22 characters); no JVM start needed to make one. */
export function newClusterId(): string {
  return randomBytes(16).toString('base64url');
}

/** One KRaft node's place: its id, the address it binds, and the quorum it votes in. */
export interface NodeLayout {
  nodeId: number;
  host: string;
  port: number;
  controllerPort: number;
  /** controller.quorum.voters, e.g. "1@127.0.0.1:9093" (one node) or three such entries. */
  voters: string;
  dataDir: string;
  /** Replication of internal topics and the default for new ones, and min.insync.replicas: 1 and 1 on one node. */
  replication: number;
  minInsync: number;
  /** broker.session.timeout.ms and broker.heartbeat.interval.ms when set (a cluster whose brokers are killed in tests). */
  session?: { timeoutMs: number; heartbeatMs: number };
}

export function serverProperties(n: NodeLayout): string {
  const props: Record<string, string | number | boolean> = {
    'process.roles': 'broker,controller',
    'node.id': n.nodeId,
    'controller.quorum.voters': n.voters,
    listeners: `PLAINTEXT://${n.host}:${n.port},CONTROLLER://${n.host}:${n.controllerPort}`,
    'advertised.listeners': `PLAINTEXT://${n.host}:${n.port}`,
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'log.dirs': n.dataDir,
    // Internal topics at the cluster's replication (one node: one replica), and one offsets partition keeps the
    // first group join fast (the default 50 are created on the first FindCoordinator).
    'offsets.topic.replication.factor': n.replication,
    'offsets.topic.num.partitions': 1,
    'transaction.state.log.replication.factor': n.replication,
    'transaction.state.log.min.isr': n.minInsync,
    'transaction.state.log.num.partitions': 1,
    'min.insync.replicas': n.minInsync,
    'default.replication.factor': n.replication,
    'num.partitions': 1,
    // The default 3 s delay would hold every group's first join.
    'group.initial.rebalance.delay.ms': 0,
    // Topics are created explicitly (bus.createTopics); a typo should fail, not make a topic.
    'auto.create.topics.enable': false,
    // The cleaner allocates its dedupe buffer (128 MiB by default) on the heap at start; a small heap cannot.
    'log.cleaner.dedupe.buffer.size': 16 * 1024 * 1024,
    // Few threads: the machines this runs on have two cores.
    'num.network.threads': 2,
    'num.io.threads': 2,
    'background.threads': 2,
    'num.recovery.threads.per.data.dir': 1,
    ...(n.session === undefined ? {} : { 'broker.session.timeout.ms': n.session.timeoutMs, 'broker.heartbeat.interval.ms': n.session.heartbeatMs }),
  };
  return `${Object.entries(props).map(([k, v]) => `${k}=${v}`).join('\n')}\n`;
}

// The JVM's output goes to broker.log; without a log4j configuration reload4j prints nothing useful.
export const LOG4J = [
  'log4j.rootLogger=INFO, stdout',
  'log4j.appender.stdout=org.apache.log4j.ConsoleAppender',
  'log4j.appender.stdout.layout=org.apache.log4j.PatternLayout',
  'log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n',
  'log4j.logger.kafka.request.logger=WARN',
  'log4j.logger.state.change.logger=WARN',
  '',
].join('\n');

export function tail(file: string, bytes = 4000): string {
  try {
    const text = fs.readFileSync(file, 'utf8');
    return text.slice(-bytes);
  } catch {
    return '(no broker log)';
  }
}

/** Resolves once an admin client's describeCluster succeeds; rejects at the deadline or when `abort` fires. */
export async function waitForKafka(brokers: string[], timeoutMs: number, abort?: Promise<Error>): Promise<void> {
  const kafka = new Kafka({ brokers, clientId: 'meridian-probe', logLevel: logLevel.NOTHING, connectionTimeout: 1000, retry: { retries: 0 } });
  const deadline = Date.now() + timeoutMs;
  let aborted: Error | null = null;
  void abort?.then((e) => (aborted = e));
  let last: unknown = null;
  while (Date.now() < deadline) {
    if (aborted !== null) throw aborted;
    const admin = kafka.admin();
    try {
      await admin.connect();
      await admin.describeCluster();
      return;
    } catch (e) {
      last = e;
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  if (aborted !== null) throw aborted;
  throw new Error(`Kafka did not answer describeCluster within ${timeoutMs} ms (last error: ${last instanceof Error ? last.message : String(last)})`);
}

/** java with a small heap, serial GC and the folder's log4j.properties, running one of Kafka's main classes. */
export function javaCommand(jars: string, heapMb: number, dir: string, mainClass: string, args: string[]): { cmd: string; args: string[] } {
  return {
    cmd: 'java',
    args: [
      `-Xmx${heapMb}m`,
      `-Xms${Math.min(heapMb, 64)}m`,
      // Serial GC: one GC thread instead of one per core on a two-core machine; the heap is small anyway.
      '-XX:+UseSerialGC',
      '-Djava.awt.headless=true',
      `-Dlog4j.configuration=file:${path.join(dir, 'log4j.properties')}`,
      '-cp',
      classpath(jars),
      mainClass,
      ...args,
    ],
  };
}

class Broker implements LocalBroker {
  readonly logFile: string;
  private child: ChildProcess | null = null;
  /** Once clients know the address, restarts must keep the client port. */
  private startedOnce = false;
  private exited: Promise<void> = Promise.resolve();
  private readonly killOnExit = (): void => {
    // A process that exits without stopping us (a failed test run, process.exit) must not leave a JVM, or a
    // temporary folder, behind on a shared machine. Only synchronous work is possible here.
    this.child?.kill('SIGKILL');
    if (this.ownsDir) fs.rmSync(this.dir, { recursive: true, force: true });
  };

  constructor(
    readonly dir: string,
    private port: number,
    private controllerPort: number,
    private readonly portFixed: boolean,
    private readonly ownsDir: boolean,
    private readonly jars: string,
    private readonly opts: Required<Pick<LocalBrokerOptions, 'heapMb' | 'startTimeoutMs' | 'attempts'>>,
  ) {
    this.logFile = path.join(dir, 'broker.log');
  }

  get brokers(): string[] {
    return [`127.0.0.1:${this.port}`];
  }

  private get dataDir(): string {
    return path.join(this.dir, 'data');
  }

  private java(mainClass: string, args: string[]): { cmd: string; args: string[] } {
    return javaCommand(this.jars, this.opts.heapMb, this.dir, mainClass, args);
  }

  private writeConfig(): string {
    fs.mkdirSync(this.dataDir, { recursive: true });
    const props = path.join(this.dir, 'server.properties');
    const host = '127.0.0.1';
    fs.writeFileSync(props, serverProperties({ nodeId: 1, host, port: this.port, controllerPort: this.controllerPort, voters: `1@${host}:${this.controllerPort}`, dataDir: this.dataDir, replication: 1, minInsync: 1 }));
    fs.writeFileSync(path.join(this.dir, 'log4j.properties'), LOG4J);
    return props;
  }

  /** Formats the data folder once; an existing meta.properties holds the cluster id of earlier runs. */
  private format(props: string): void {
    if (fs.existsSync(path.join(this.dataDir, 'meta.properties'))) return;
    const j = this.java('kafka.tools.StorageTool', ['format', '-t', newClusterId(), '-c', props, '--ignore-formatted']);
    const r = spawnSync(j.cmd, j.args, { encoding: 'utf8', timeout: 120_000 });
    fs.appendFileSync(this.logFile, `${r.stdout ?? ''}${r.stderr ?? ''}`);
    if (r.status !== 0) throw new Error(`kafka StorageTool format failed (${r.error?.message ?? `exit ${r.status}`}); see ${this.logFile}`);
  }

  private spawnBroker(props: string): Promise<Error> {
    const out = fs.openSync(this.logFile, 'a');
    const j = this.java('kafka.Kafka', [props]);
    const child = spawn(j.cmd, j.args, { stdio: ['ignore', out, out] });
    fs.closeSync(out); // the child holds its own descriptor
    this.child = child;
    process.once('exit', this.killOnExit);
    let onExit: (e: Error) => void = () => undefined;
    const died = new Promise<Error>((r) => (onExit = r));
    this.exited = new Promise<void>((resolve) => {
      const done = (why: string): void => {
        if (this.child === child) this.child = null;
        process.removeListener('exit', this.killOnExit);
        onExit(new Error(`Kafka broker exited (${why}) before it was ready:\n${tail(this.logFile)}`));
        resolve();
      };
      child.once('exit', (code, signal) => done(signal ?? `code ${code}`));
      child.once('error', (e) => done(e.message));
    });
    return died;
  }

  async start(): Promise<void> {
    if (this.child !== null) return;
    let lastError: unknown = null;
    for (let attempt = 1; attempt <= this.opts.attempts; attempt++) {
      try {
        const props = this.writeConfig();
        this.format(props);
        const died = this.spawnBroker(props);
        await waitForKafka(this.brokers, this.opts.startTimeoutMs, died);
        this.startedOnce = true;
        return;
      } catch (e) {
        lastError = e;
        await this.stop();
        fs.appendFileSync(this.logFile, `\n--- meridian: start attempt ${attempt} failed: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}\n`);
        // A port taken between our probe and the JVM's bind is the usual cause: pick new ones, but keep a
        // client port that was asked for or that clients already use. The controller port is ours alone
        // (the voter set is static configuration), so it may always change.
        if (!this.portFixed && !this.startedOnce) this.port = await freePort();
        this.controllerPort = await freePort();
      }
    }
    throw lastError instanceof Error ? lastError : new Error(String(lastError));
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child === null) return this.exited;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await this.exited;
    clearTimeout(timer);
  }

  async destroy(): Promise<void> {
    await this.stop();
    if (this.ownsDir) fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Gathers the jars if needed, then starts a broker and waits until it answers. */
export async function startLocalBroker(opts: LocalBrokerOptions = {}): Promise<LocalBroker> {
  const jars = await ensureKafkaJars();
  const ownsDir = opts.dir === undefined;
  const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'meridian-kafka-'));
  fs.mkdirSync(dir, { recursive: true });
  const broker = new Broker(dir, opts.port ?? (await freePort()), await freePort(), opts.port !== undefined, ownsDir, jars, {
    heapMb: opts.heapMb ?? DEFAULT_HEAP_MB,
    startTimeoutMs: opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS,
    attempts: opts.attempts ?? 3,
  });
  try {
    await broker.start();
  } catch (e) {
    await broker.destroy();
    throw e;
  }
  return broker;
}
