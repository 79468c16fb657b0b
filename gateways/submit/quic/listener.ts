import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Rental } from '../../../bus/topics/rentals';
import type { Log } from '../../../infra/base/log';
import type { Outcome, Submission } from '../pipeline';
import { quicStatus, rejection } from '../rejections';
import { decodeFrame, encodeVerdict, FrameReader, STATUS_FRAME_BYTES, writeStatus, type InFrame } from './bridge-codec';
import { subjectCommonName } from './client-cert';
import type { QuicConfig } from './config';
import { QuicMetrics } from './metrics';
import { streamTransaction } from './stream-frame';
import { ensureTerminatorBinary } from './terminator-build';
import { Twins } from './twins';

// Submission over QUIC (:5000). The QUIC stack is a separate process (terminator/, Rust: quinn + rustls):
// this side owns every decision and speaks to it over a private Unix socket (bridge-codec.ts).
//
//   handshake done → OPEN(cert) → CN = API key → known? under its per-key and total caps? → VERDICT
//   stream/uni/datagram → TX → framing → stream+datagram twin? → pipeline.submitNow → STATUS (streams only)
//
// Nothing a refused connection sends is ever relayed (the terminator waits for the verdict first). The status
// byte is the pipeline's one rejection table's `quic` column; this transport adds no rule of its own.

/** Application error codes of CONNECTION_CLOSE (the SDK shows the code and the reason). */
export const CLOSE_CODES = {
  unknownKey: { code: 0x01, reason: 'unknown api key' },
  perKeyLimit: { code: 0x02, reason: 'too many connections for this api key' },
  capacity: { code: 0x03, reason: 'server at connection capacity' },
} as const;

/** The part of the submission pipeline this transport uses (SubmitPipeline has it). */
export interface QuicPipeline {
  /** The rental of a key now, or undefined (unknown key). */
  authorize(apiKey: string): Rental | undefined;
  submitNow(s: Submission): Outcome;
}

export interface QuicListenerOptions {
  config: QuicConfig;
  pipeline: QuicPipeline;
  log: Log;
  metrics?: QuicMetrics;
  /** How long the terminator may take to bind and report ready (after the build). */
  startTimeoutMs?: number;
}

interface Conn {
  key: string;
}

// A TX carries at most 1 + 1,233 bytes (the terminator caps streams and datagrams); OPEN a certificate.
const MAX_IN_FRAME = 16 * 1024;
const STATUS_BATCH = 256;
const CANNOT_DESERIALIZE = rejection('cannot_deserialize').quic;
const UNAUTHORIZED = rejection('unauthorized').quic;

export class QuicListener {
  readonly metrics: QuicMetrics;
  private readonly conns = new Map<number, Conn>();
  private readonly perKey = new Map<string, number>();
  private readonly twins: Twins;
  private readonly out = Buffer.allocUnsafe(STATUS_BATCH * STATUS_FRAME_BYTES);
  private outAt = 0;
  private socket: net.Socket | null = null;
  private child: ChildProcess | null = null;
  private stopping = false;
  private address_: { host: string; port: number } | null = null;
  private bin = '';
  private restartTimer: NodeJS.Timeout | undefined;
  private restarts = 0;
  /** Terminator processes that reported ready so far (1 after start; more after restarts). */
  starts = 0;

  private constructor(private readonly opts: QuicListenerOptions) {
    this.metrics = opts.metrics ?? new QuicMetrics();
    this.twins = new Twins(opts.config.twinWindowMs);
  }

  /** Builds the terminator if needed (first run), starts it and resolves once its UDP port is bound. */
  static async start(opts: QuicListenerOptions): Promise<QuicListener> {
    const l = new QuicListener(opts);
    l.bin = opts.config.terminatorBinary ?? (await ensureTerminatorBinary());
    await l.run(opts.config.port);
    return l;
  }

  /** The bound UDP address (the configured port, or the one picked for port 0). */
  get address(): { host: string; port: number } {
    if (this.address_ === null) throw new Error('QUIC listener not started');
    return this.address_;
  }

  /** The terminator's process id (tests kill it to see the restart). */
  get terminatorPid(): number | undefined {
    return this.child?.pid;
  }

  get openConnections(): number {
    return this.conns.size;
  }

  /**
   * The terminator died while serving: its connections are gone (clients reconnect, the SDK does so on its next
   * send). Start a new one on the same port after a short pause, backing off while it keeps failing.
   */
  private restart(): void {
    this.conns.clear();
    this.perKey.clear();
    this.metrics.open.set(0);
    this.metrics.restarts.inc();
    const delay = Math.min(30_000, 500 * 2 ** Math.min(this.restarts++, 6));
    this.restartTimer = setTimeout(() => {
      this.run(this.address_!.port).then(
        () => {
          this.restarts = 0;
          this.opts.log.warn('quic terminator restarted');
        },
        (e: unknown) => {
          this.opts.log.error({ err: (e as Error).message }, 'quic terminator restart failed');
          if (!this.stopping) this.restart();
        },
      );
    }, delay);
  }

  private run(port: number): Promise<void> {
    const bin = this.bin;
    const c = this.opts.config;
    const sockPath = path.join(os.tmpdir(), `meridian-quic-${process.pid}-${crypto.randomBytes(6).toString('hex')}.sock`);
    const server = net.createServer();
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      let ready = false;
      const fail = (e: Error): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        server.close();
        this.child?.kill('SIGKILL');
        reject(e);
      };
      const timer = setTimeout(() => fail(new Error('QUIC terminator did not report ready in time')), this.opts.startTimeoutMs ?? 15_000);
      server.once('error', fail);
      server.once('connection', (sock) => {
        server.close(); // one terminator, one bridge connection: accept no other
        this.socket = sock;
        sock.setNoDelay(true);
        const reader = new FrameReader(MAX_IN_FRAME, (body) => {
          const f = decodeFrame(body);
          if (f.type === 'ready') {
            this.address_ = { host: c.host, port: Number(f.addr.slice(f.addr.lastIndexOf(':') + 1)) };
            this.starts++;
            ready = true;
            if (!settled) {
              settled = true;
              clearTimeout(timer);
              resolve();
            }
          } else this.onFrame(f);
        });
        sock.on('data', (chunk: Buffer) => {
          try {
            reader.push(chunk);
          } catch (e) {
            this.opts.log.error({ err: (e as Error).message }, 'quic bridge: broken frame stream, stopping the terminator');
            sock.destroy();
            return;
          }
          this.flush();
        });
        sock.on('error', () => undefined); // the close handler reports
        sock.on('close', () => {
          if (!this.stopping) this.opts.log.warn('quic bridge closed');
          fail(new Error('QUIC terminator closed the bridge before it was ready'));
        });
      });
      server.listen(sockPath, () => {
        const args = [
          '--listen', `${c.host.includes(':') ? `[${c.host}]` : c.host}:${port}`,
          '--bridge', sockPath,
          '--max-bidi-streams', String(c.maxStreamsPerConnection),
          '--max-uni-streams', String(c.maxUniStreamsPerConnection),
          '--idle-timeout-ms', String(c.idleTimeoutMs),
          '--handshakes-per-sec', String(c.handshakesPerSecPerIp),
          '--handshake-burst', String(c.handshakeBurstPerIp),
          '--max-connections', String(c.maxConnections),
          '--datagram-buffer-bytes', String(c.datagramBufferBytes),
        ];
        // Its own process group: a terminal's Ctrl-C goes to the foreground group, and the terminator must be
        // stopped by this service (close() closes the bridge, and it exits), not die under it and be "restarted".
        // If this process dies without close(), the bridge closes with it and the terminator exits by itself.
        const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
        this.child = child;
        const killOnExit = (): void => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        };
        process.once('exit', killOnExit);
        child.once('exit', () => process.removeListener('exit', killOnExit));
        child.stderr!.on('data', (b: Buffer) => {
          for (const line of b.toString('utf8').split('\n')) if (line.trim() !== '') this.opts.log.warn({ terminator: line.trim() }, 'quic terminator');
        });
        child.once('error', (e) => fail(new Error(`cannot start the QUIC terminator: ${e.message}`)));
        child.once('exit', (code, signal) => {
          if (this.stopping) return;
          if (ready) {
            this.opts.log.error({ code, signal }, 'quic terminator exited while serving; restarting it');
            this.restart();
          } else fail(new Error(`QUIC terminator exited (${code ?? signal}) before it was ready`));
        });
      });
    });
  }

  private onFrame(f: InFrame): void {
    switch (f.type) {
      case 'tx':
        this.onTx(f.conn, f.req, f.kind, f.bytes);
        return;
      case 'open':
        this.onOpen(f.conn, f.cert);
        return;
      case 'closed': {
        const c = this.conns.get(f.conn);
        if (c === undefined) return; // a refused connection: never counted
        this.conns.delete(f.conn);
        const n = (this.perKey.get(c.key) ?? 1) - 1;
        if (n <= 0) this.perKey.delete(c.key);
        else this.perKey.set(c.key, n);
        this.metrics.open.set(this.conns.size);
        this.metrics.closed(f.reason);
        return;
      }
      case 'event':
        this.metrics.event(f.event);
        return;
      case 'bad':
        this.opts.log.warn({ why: f.why }, 'quic bridge: unreadable frame ignored');
        return;
      case 'ready':
        return;
    }
  }

  private onOpen(conn: number, cert: Buffer): void {
    const cn = subjectCommonName(cert);
    const key = cn === null ? null : cn.toLowerCase();
    let verdict: { code: number; reason: string } | null = null;
    if (key === null || this.opts.pipeline.authorize(key) === undefined) {
      verdict = CLOSE_CODES.unknownKey;
      this.metrics.admission('unknown_key');
    } else if ((this.perKey.get(key) ?? 0) >= this.opts.config.maxConnectionsPerKey) {
      verdict = CLOSE_CODES.perKeyLimit;
      this.metrics.admission('per_key_limit');
    } else if (this.conns.size >= this.opts.config.maxConnections) {
      verdict = CLOSE_CODES.capacity;
      this.metrics.admission('capacity');
    }
    if (verdict !== null) {
      this.socket?.write(encodeVerdict(conn, verdict.code, verdict.reason));
      return;
    }
    this.conns.set(conn, { key: key! });
    this.perKey.set(key!, (this.perKey.get(key!) ?? 0) + 1);
    this.metrics.open.set(this.conns.size);
    this.metrics.admission('admitted');
    this.socket?.write(encodeVerdict(conn, 0, ''));
  }

  private onTx(conn: number, req: number, kind: 'stream' | 'uni' | 'datagram', bytes: Buffer): void {
    this.metrics.receivedBy(kind);
    const c = this.conns.get(conn);
    if (c === undefined) {
      // Cannot happen while the terminator holds streams until the verdict; answer as the table says for no key.
      this.metrics.strays.inc();
      if (kind === 'stream') this.answer(req, UNAUTHORIZED);
      return;
    }
    let tx: Buffer | null = bytes;
    if (kind === 'stream') {
      tx = streamTransaction(bytes);
      if (tx === null) {
        this.metrics.framingErrors.inc();
        this.answer(req, CANNOT_DESERIALIZE);
        return;
      }
    }
    const pathKind = kind === 'datagram' ? 'datagram' : 'stream';
    const now = Date.now();
    let status = this.twins.take(conn, tx, pathKind, now);
    if (status !== undefined) {
      this.metrics.twins.inc();
    } else {
      let o: Outcome;
      try {
        o = this.opts.pipeline.submitNow({ apiKey: c.key, bytes: tx, transport: 'quic' });
      } catch (e) {
        // The pipeline answers with Outcomes; a throw is a bug there. Answer it as not sent, keep serving.
        this.opts.log.error({ err: (e as Error).message }, 'quic: the pipeline threw');
        o = { ok: false, reason: 'forward_failed' };
      }
      status = quicStatus(o);
      this.twins.note(conn, tx, pathKind, status, now);
    }
    if (kind === 'stream') this.answer(req, status);
  }

  /** Queues a STATUS frame; frames of one incoming chunk leave in one write (flush()). */
  private answer(req: number, status: number): void {
    this.metrics.status(status);
    if (this.outAt + STATUS_FRAME_BYTES > this.out.length) this.flush();
    this.outAt = writeStatus(this.out, this.outAt, req, status);
  }

  private flush(): void {
    if (this.outAt === 0) return;
    this.socket?.write(Buffer.from(this.out.subarray(0, this.outAt)));
    this.outAt = 0;
  }

  /**
   * Stops the listener: closing the bridge makes the terminator close every connection (CONNECTION_CLOSE, so
   * clients learn at once) and exit; a terminator that does not is killed.
   */
  async close(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    this.socket?.end();
    if (child !== null && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      const term = setTimeout(() => child.kill('SIGTERM'), 2_000);
      const kill = setTimeout(() => child.kill('SIGKILL'), 4_000);
      await exited;
      clearTimeout(term);
      clearTimeout(kill);
    }
    this.socket?.destroy();
    this.conns.clear();
    this.perKey.clear();
    this.metrics.open.set(0);
  }
}
