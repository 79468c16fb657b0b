import { spawn, type ChildProcessByStdio } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { ensureGoLoadClient } from './go-load-client-build';

// Drives the compiled load client (test/bench/loadclient) over its line protocol: commands on its stdin, one
// JSON line per answer (and per event: connected, ready, error) on its stdout. Answers come in command order.

export type GoLoadCounts = Omit<GoLoadStats, 'p50' | 'p99' | 'max'>;

export interface GoLoadStats {
  /** Messages that carried a publish stamp (transactions). */
  received: number;
  /** Every message, pongs and pings included. */
  messages: number;
  /** DATA payload bytes read (gRPC prefixes and messages as they came). */
  bytes: number;
  /** Latency samples since `record on`; p50/p99 are 10 µs bucket upper bounds, null without samples. */
  samples: number;
  p50: number | null;
  p99: number | null;
  max: number | null;
  /** Streams that got their first message (the pong to the request's ping). */
  pongs: number;
  streams: number;
  ended: number;
  connErrors: number;
  /** The client process's own CPU (user + system) since it started. */
  cpuMs: number;
  userMs: number;
  sysMs: number;
  /** The last non-OK status or connection error seen, '' when none. */
  status: string;
}

/** Streams other than v1's: the v2 path, its update layout, several request frames per stream, an encoding. */
export interface GoLoadOptions {
  path?: string;
  /** Responses are meridian.stream.v2 SubscribeUpdates. */
  v2?: boolean;
  /** `requests` holds this many consecutive frames per stream (default 1). */
  framesPerStream?: number;
  /** Sent as grpc-accept-encoding (gzip is decoded; zstd messages are counted, not decoded). */
  acceptEncoding?: string;
}

type Line = { type: string; message?: string } & Record<string, unknown>;

export class GoLoadClient {
  private readonly pending: { resolve: (l: Line) => void; reject: (e: Error) => void }[] = [];
  private readyWaiters: (() => void)[] = [];
  private isReady = false;
  private exited: Error | undefined;

  private constructor(
    private readonly child: ChildProcessByStdio<Writable, Readable, null>,
    private readonly dir: string,
  ) {
    readline.createInterface({ input: child.stdout }).on('line', (text) => this.onLine(text));
    child.once('exit', (code, signal) => {
      this.exited = new Error(`load client exited (${signal ?? code})`);
      for (const p of this.pending.splice(0)) p.reject(this.exited);
    });
  }

  /**
   * Builds (if needed) and starts the client: `requests[i]` (one gRPC-framed SubscribeRequest) goes on stream i,
   * on connection i % connections. Resolves once every connection is open and every request sent.
   */
  static async start(address: string, connections: number, requests: readonly Buffer[], opts: GoLoadOptions = {}): Promise<GoLoadClient> {
    const bin = await ensureGoLoadClient();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fanout-loadclient-'));
    const file = path.join(dir, 'requests.bin');
    fs.writeFileSync(file, Buffer.concat(requests));
    const more = [
      ...(opts.path === undefined ? [] : ['-path', opts.path]),
      ...(opts.v2 === true ? ['-v2'] : []),
      ...(opts.framesPerStream === undefined ? [] : ['-frames-per-stream', String(opts.framesPerStream)]),
      ...(opts.acceptEncoding === undefined ? [] : ['-accept-encoding', opts.acceptEncoding]),
    ];
    const child = spawn(bin, ['-addr', address, '-conns', String(connections), '-requests', file, ...more], { stdio: ['pipe', 'pipe', 'inherit'] });
    const c = new GoLoadClient(child, dir);
    await new Promise<void>((resolve, reject) => {
      c.pending.push({ resolve: () => resolve(), reject }); // the first line: connected (or error)
      child.once('error', reject);
    });
    return c;
  }

  private onLine(text: string): void {
    let l: Line;
    try {
      l = JSON.parse(text) as Line;
    } catch {
      return;
    }
    if (l.type === 'ready') {
      this.isReady = true;
      for (const w of this.readyWaiters.splice(0)) w();
      return;
    }
    const p = this.pending.shift();
    if (p === undefined) return;
    if (l.type === 'error') p.reject(new Error(`load client: ${l.message ?? text}`));
    else p.resolve(l);
  }

  private command(cmd: string): Promise<Line> {
    if (this.exited !== undefined) return Promise.reject(this.exited);
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.child.stdin.write(`${cmd}\n`);
    });
  }

  /** Resolves when every stream has had its first message, false after `timeoutMs`. */
  ready(timeoutMs: number): Promise<boolean> {
    if (this.isReady) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), timeoutMs);
      this.readyWaiters.push(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  /** Starts recording latency afresh (`on`, the histogram is cleared) or stops it. */
  async record(on: boolean): Promise<void> {
    await this.command(`record ${on ? 'on' : 'off'}`);
  }

  /** Counters and the latency quantiles (a scan of the client's histogram: not for tight polling). */
  async stats(): Promise<GoLoadStats> {
    return (await this.command('stats')) as unknown as GoLoadStats;
  }

  /** The counters only (p50, p99 and max left out), cheap enough to poll. */
  async counts(): Promise<GoLoadCounts> {
    return (await this.command('counts')) as unknown as GoLoadCounts;
  }

  async close(): Promise<void> {
    if (this.exited === undefined) {
      const gone = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
      this.child.stdin.end('quit\n');
      const t = setTimeout(() => this.child.kill('SIGKILL'), 2000);
      await gone;
      clearTimeout(t);
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
