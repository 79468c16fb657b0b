import dgram from 'node:dgram';
import { rng } from './prng';

// A UDP relay that loses a seeded share of datagrams, both ways: this machine's kernel has no `netem`, and QUIC
// is UDP, so a relay in front of a TPU server gives a lossy path anywhere. Each client address gets its own
// upstream socket (so the server sees one peer per client, as without the relay); datagrams are dropped by a
// seeded PRNG per direction (prng.ts), so a run's drop pattern is the same datagram for datagram. The share can
// be changed while running (the bench switches 0% ↔ 10% on one cluster). Sessions are capped and idle ones closed.

export interface LossRelayOptions {
  /** IP to listen on (port ephemeral). */
  listen: string;
  upstream: { host: string; port: number };
  /** Share of datagrams dropped each way, 0..1. */
  loss: number;
  seed: number;
  maxSessions?: number;
  idleMs?: number;
}

export interface RelayCounts {
  upForwarded: number;
  upDropped: number;
  downForwarded: number;
  downDropped: number;
  sessions: number;
  sessionsRefused: number;
}

interface Session {
  sock: dgram.Socket;
  lastMs: number;
}

export class LossRelay {
  loss: number;
  readonly counts: RelayCounts = { upForwarded: 0, upDropped: 0, downForwarded: 0, downDropped: 0, sessions: 0, sessionsRefused: 0 };
  private readonly sessions = new Map<string, Session>();
  private readonly upRand: () => number;
  private readonly downRand: () => number;
  private readonly sweep: NodeJS.Timeout;

  private constructor(
    private readonly front: dgram.Socket,
    private readonly o: LossRelayOptions,
  ) {
    this.loss = o.loss;
    this.upRand = rng(o.seed);
    this.downRand = rng(o.seed ^ 0x9e3779b9);
    front.on('message', (msg, rinfo) => this.fromClient(msg, rinfo));
    front.on('error', () => undefined);
    const idle = o.idleMs ?? 60_000;
    this.sweep = setInterval(() => {
      const cut = Date.now() - idle;
      for (const [k, s] of this.sessions) {
        if (s.lastMs >= cut) continue;
        this.sessions.delete(k);
        s.sock.close();
      }
    }, Math.min(idle, 10_000));
    this.sweep.unref();
  }

  static async start(o: LossRelayOptions): Promise<LossRelay> {
    const front = dgram.createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      front.once('error', reject);
      front.bind(0, o.listen, () => {
        front.off('error', reject);
        resolve();
      });
    });
    return new LossRelay(front, o);
  }

  /** "ip:port" clients send to. */
  get addr(): string {
    const a = this.front.address();
    return `${a.address}:${a.port}`;
  }

  private fromClient(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    if (this.loss > 0 && this.upRand() < this.loss) {
      this.counts.upDropped++;
      return;
    }
    const key = `${rinfo.address}:${rinfo.port}`;
    let s = this.sessions.get(key);
    if (s === undefined) {
      if (this.sessions.size >= (this.o.maxSessions ?? 256)) {
        this.counts.sessionsRefused++;
        return;
      }
      const sock = dgram.createSocket('udp4');
      const session: Session = { sock, lastMs: Date.now() };
      s = session;
      this.sessions.set(key, session);
      this.counts.sessions++;
      // Unconnected, so a server that is gone (ICMP port unreachable) is silence, as across a network.
      sock.on('error', () => undefined);
      sock.on('message', (back) => {
        session.lastMs = Date.now();
        if (this.loss > 0 && this.downRand() < this.loss) {
          this.counts.downDropped++;
          return;
        }
        this.counts.downForwarded++;
        this.front.send(back, rinfo.port, rinfo.address);
      });
      // Sends made while binding are queued by dgram until it is bound.
      sock.bind(0, '127.0.0.1');
    }
    s.lastMs = Date.now();
    this.counts.upForwarded++;
    s.sock.send(msg, this.o.upstream.port, this.o.upstream.host);
  }

  async close(): Promise<void> {
    clearInterval(this.sweep);
    for (const s of this.sessions.values()) s.sock.close();
    this.sessions.clear();
    await new Promise<void>((r) => this.front.close(() => r()));
  }
}
