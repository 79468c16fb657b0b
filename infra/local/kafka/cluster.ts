import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { freePort, javaCommand, LOG4J, newClusterId, serverProperties, tail, waitForKafka, type NodeLayout } from './broker';
import { ensureKafkaJars } from './jars';

// Several KRaft nodes (broker and controller in each JVM) on loopback, one cluster: a cluster to stop and kill
// brokers in (fault tests). Each node may bind its own loopback address (127.0.0.11, .12, …), so that a "host" is
// an address. Layout of its folder:
//   node-<id>/server.properties, log4j.properties, broker.log, data/   one per node, as broker.ts lays out one
// Durability as in production: internal topics and new topics at `replication` replicas, min.insync.replicas
// `minInsync` (3 and 2 by default): an acknowledged produce (acks=all) survives the loss of any one broker.
// A SIGKILLed broker is noticed after broker.session.timeout.ms, lowered here (3 s, heartbeat 0.5 s; Kafka's
// defaults are 9 s and 2 s) so a fault test does not wait for it; SIGTERM moves leadership at once.

export interface LocalClusterOptions {
  /** One loopback address per node (their count is the cluster's size); default three nodes on 127.0.0.1. */
  hosts?: string[];
  heapMb?: number;
  replication?: number;
  minInsync?: number;
  session?: { timeoutMs: number; heartbeatMs: number };
  /** Per attempt: JVM starts to every node registered. */
  startTimeoutMs?: number;
  attempts?: number;
  dir?: string;
}

export interface ClusterNode {
  readonly nodeId: number;
  /** HOST:PORT of its client listener. */
  readonly address: string;
  running(): boolean;
  /** SIGTERM: controlled shutdown (leadership moves before it exits). Data is kept. */
  stop(): Promise<void>;
  /** SIGKILL: the cluster notices after the session timeout. Data is kept. */
  kill(): Promise<void>;
  /** Starts it again (same ports, same data) and waits until the cluster lists it. */
  start(): Promise<void>;
}

export interface LocalCluster {
  /** Bootstrap addresses, one per node. */
  readonly brokers: string[];
  readonly nodes: readonly ClusterNode[];
  readonly dir: string;
  /** The node id leading `topic`'s partition, from the metadata of any node that answers. */
  leaderOf(topic: string, partition?: number): Promise<number>;
  /** Stops every node and removes the folder if this made it. */
  destroy(): Promise<void>;
}

const STOP_GRACE_MS = 30_000;

class Node implements ClusterNode {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  readonly dir: string;
  private readonly killOnExit = (): void => void this.child?.kill('SIGKILL');

  constructor(
    readonly layout: NodeLayout,
    private readonly cluster: Cluster,
  ) {
    this.dir = path.dirname(layout.dataDir);
  }

  get nodeId(): number {
    return this.layout.nodeId;
  }

  get address(): string {
    return `${this.layout.host}:${this.layout.port}`;
  }

  get logFile(): string {
    return path.join(this.dir, 'broker.log');
  }

  running(): boolean {
    return this.child !== null;
  }

  props(): string {
    fs.mkdirSync(this.layout.dataDir, { recursive: true });
    const file = path.join(this.dir, 'server.properties');
    fs.writeFileSync(file, serverProperties(this.layout));
    fs.writeFileSync(path.join(this.dir, 'log4j.properties'), LOG4J);
    return file;
  }

  /** Formats the data folder with the cluster's id (once; a formatted folder is left alone). */
  format(clusterId: string): Promise<void> {
    const props = this.props();
    if (fs.existsSync(path.join(this.layout.dataDir, 'meta.properties'))) return Promise.resolve();
    const j = javaCommand(this.cluster.jars, this.cluster.heapMb, this.dir, 'kafka.tools.StorageTool', ['format', '-t', clusterId, '-c', props, '--ignore-formatted']);
    return new Promise((resolve, reject) => {
      const out = fs.openSync(this.logFile, 'a');
      const c = spawn(j.cmd, j.args, { stdio: ['ignore', out, out] });
      fs.closeSync(out);
      c.once('error', reject);
      c.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`kafka StorageTool format of node ${this.nodeId} failed (exit ${code}); see ${this.logFile}`))));
    });
  }

  /** Spawns the JVM; the promise returned resolves with an error when it exits. */
  spawn(): Promise<Error> {
    const props = this.props();
    const out = fs.openSync(this.logFile, 'a');
    const j = javaCommand(this.cluster.jars, this.cluster.heapMb, this.dir, 'kafka.Kafka', [props]);
    const child = spawn(j.cmd, j.args, { stdio: ['ignore', out, out] });
    fs.closeSync(out);
    this.child = child;
    process.once('exit', this.killOnExit);
    let onExit: (e: Error) => void = () => undefined;
    const died = new Promise<Error>((r) => (onExit = r));
    this.exited = new Promise<void>((resolve) => {
      const done = (why: string): void => {
        if (this.child === child) this.child = null;
        process.removeListener('exit', this.killOnExit);
        onExit(new Error(`Kafka node ${this.nodeId} exited (${why}):\n${tail(this.logFile)}`));
        resolve();
      };
      child.once('exit', (code, signal) => done(signal ?? `code ${code}`));
      child.once('error', (e) => done(e.message));
    });
    return died;
  }

  private async signal(sig: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (child === null) return this.exited;
    child.kill(sig);
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await this.exited;
    clearTimeout(timer);
  }

  stop(): Promise<void> {
    return this.signal('SIGTERM');
  }

  kill(): Promise<void> {
    return this.signal('SIGKILL');
  }

  async start(): Promise<void> {
    if (this.child !== null) return;
    const died = this.spawn();
    await this.cluster.waitRegistered([this.nodeId], this.cluster.startTimeoutMs, died);
  }
}

class Cluster implements LocalCluster {
  readonly nodes: Node[] = [];

  constructor(
    readonly dir: string,
    readonly jars: string,
    readonly heapMb: number,
    readonly startTimeoutMs: number,
  ) {}

  get brokers(): string[] {
    return this.nodes.map((n) => n.address);
  }

  private client(brokers: string[] = this.brokers): Kafka {
    return new Kafka({ brokers, clientId: 'meridian-cluster-probe', logLevel: logLevel.NOTHING, connectionTimeout: 1000, retry: { retries: 0 } });
  }

  /**
   * Resolves once describeCluster, asked of each running node alone, lists every id of `ids` there: a node's
   * metadata catches up with the others' registration in its own time, and a client that bootstraps from one that
   * has not would count fewer brokers (and create topics with fewer replicas).
   */
  async waitRegistered(ids: number[], timeoutMs: number, abort?: Promise<Error>): Promise<void> {
    const running = this.nodes.filter((n) => n.running()).map((n) => n.address);
    await waitForKafka(running, timeoutMs, abort);
    const deadline = Date.now() + timeoutMs;
    let aborted: Error | null = null;
    void abort?.then((e) => (aborted = e));
    let seen: number[] = [];
    const pending = new Set(running);
    while (Date.now() < deadline) {
      if (aborted !== null) throw aborted;
      for (const address of [...pending]) {
        const admin = this.client([address]).admin();
        try {
          await admin.connect();
          seen = (await admin.describeCluster()).brokers.map((b) => b.nodeId);
          if (ids.every((id) => seen.includes(id))) pending.delete(address);
        } catch {
          // a node that is not up yet; try the next round
        } finally {
          await admin.disconnect().catch(() => undefined);
        }
      }
      if (pending.size === 0) return;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`Kafka cluster did not list nodes ${ids.join(', ')} within ${timeoutMs} ms on ${pending.size} node(s) (last listed: ${seen.join(', ') || 'none'})`);
  }

  async leaderOf(topic: string, partition = 0): Promise<number> {
    const admin = this.client().admin();
    try {
      await admin.connect();
      const meta = await admin.fetchTopicMetadata({ topics: [topic] });
      const p = meta.topics[0]?.partitions.find((x) => x.partitionId === partition);
      if (p === undefined) throw new Error(`no partition ${partition} of ${topic}`);
      return p.leader;
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
  }

  async destroy(): Promise<void> {
    await this.stopAll();
  }
}

/** Gathers the jars if needed, formats and starts every node, and waits until the cluster lists them all. */
export async function startLocalCluster(opts: LocalClusterOptions = {}): Promise<LocalCluster> {
  const jars = await ensureKafkaJars();
  const hosts = opts.hosts ?? ['127.0.0.1', '127.0.0.1', '127.0.0.1'];
  const ownsDir = opts.dir === undefined;
  const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'meridian-kafka-cluster-'));
  const replication = Math.min(opts.replication ?? 3, hosts.length);
  const minInsync = Math.min(opts.minInsync ?? 2, replication);
  const session = opts.session ?? { timeoutMs: 3000, heartbeatMs: 500 };
  const cluster = new Cluster(dir, jars, opts.heapMb ?? 256, opts.startTimeoutMs ?? 120_000);
  const destroy = cluster.destroy.bind(cluster);
  cluster.destroy = async () => {
    await destroy();
    if (ownsDir) fs.rmSync(dir, { recursive: true, force: true });
  };
  const attempts = opts.attempts ?? 3;
  let lastError: unknown = null;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    // Fresh ports and folders each attempt: the voter set is static configuration, so a port taken between our
    // probe and a JVM's bind means a new layout for every node.
    const ports = await Promise.all(hosts.map(async (h) => ({ port: await freePort(h), controllerPort: await freePort(h) })));
    const voters = hosts.map((h, i) => `${i + 1}@${h}:${ports[i]!.controllerPort}`).join(',');
    cluster.nodes.length = 0;
    for (let i = 0; i < hosts.length; i++) {
      const nodeDir = path.join(dir, `attempt-${attempt}`, `node-${i + 1}`);
      fs.mkdirSync(nodeDir, { recursive: true });
      cluster.nodes.push(new Node({ nodeId: i + 1, host: hosts[i]!, ...ports[i]!, voters, dataDir: path.join(nodeDir, 'data'), replication, minInsync, session }, cluster));
    }
    try {
      const clusterId = newClusterId();
      await Promise.all(cluster.nodes.map((n) => n.format(clusterId)));
      const died = Promise.race(cluster.nodes.map((n) => n.spawn()));
      await cluster.waitRegistered(cluster.nodes.map((n) => n.nodeId), cluster.startTimeoutMs, died);
      return cluster;
    } catch (e) {
      lastError = e;
      await cluster.stopAll();
    }
  }
  await cluster.destroy();
  throw lastError instanceof Error ? lastError : new Error(String(lastError));
}
