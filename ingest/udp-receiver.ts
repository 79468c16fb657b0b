import dgram from 'node:dgram';
import net from 'node:net';
import type { Log } from '../infra/base/log';

// The socket side of ingest. Each datagram is stamped on arrival and queued; a drain step hands up to
// DRAIN_SLICE packets to the pipeline per event-loop turn, so produce acknowledgements and timers keep
// running under a flood. The queue is bounded (queuePackets): beyond it packets are dropped and counted
// here, where the loss is visible, rather than silently in the kernel. SO_RCVBUF is raised as configured;
// the kernel caps it at net.core.rmem_max (Linux reports double the granted size), so the effective size is
// reported and a shortfall is logged.
//
// Under a flood the queue sheds first what is least likely to matter: once it is half full, packets from
// addresses that have never sent a verified shred (`preferred` says which have) are dropped and counted as
// shed, so a known feed's shreds keep their place. The kernel's own drops (a socket buffer that overflowed
// because ingest did not read fast enough) are read from /proc by udp-drops.ts.
//
// The kernel drops before any of that, and without looking at the sender: when ingest is starved of CPU (a
// flood, a busy host) its one socket buffer fills with whatever arrives most, and a feed's shreds are lost
// with the flood's. So each known-good sender (addr:port, up to `dedicatedSockets`) gets a socket of its own:
// bound to the same address and port (SO_REUSEADDR on all of them) and connect()ed to that sender. Linux
// delivers a datagram to the best-matching socket, and a connected one matches its peer better than the
// listening socket does, so that sender's datagrams land in their own receive buffer, which a flood from
// anywhere else cannot fill. Packets from every socket go through the one queue above. Each may hold up to
// SO_RCVBUF of kernel memory (so at most dedicatedSockets + 1 buffers in all); one idle for a minute is given up
// when a new known-good sender needs the place.

const DRAIN_SLICE = 512;
/** A dedicated socket that received nothing for this long may be given to another known-good sender. */
const DEDICATED_IDLE_MS = 60_000;

/** `source`: the sender's address (no port: a feed may send from many ports, a spoofer can pick any). */
export type PacketHandler = (packet: Buffer, arrivalMs: number, source: string) => void;

export interface UdpReceiverOptions {
  host: string;
  port: number;
  recvBufferBytes: number;
  /** The operator asked for recvBufferBytes (production config): a kernel cap below it is logged at warn. */
  recvBufferExplicit?: boolean;
  queuePackets: number;
  /** Sources served first: past half the queue, packets from any other source are shed. Absent = no shedding. */
  preferred?: (source: string) => boolean;
  /** Senders (addr:port) of preferred sources given a connected socket of their own (default 64; 0 = none). */
  dedicatedSockets?: number;
  log?: Log;
  now?: () => number;
}

export interface UdpReceiverStats {
  received: number;
  queueDrops: number;
  /** Packets from non-preferred sources dropped because the queue was past half full. */
  shed: number;
  /** Connected sockets open for known-good senders. */
  dedicated: number;
  queued: number;
}

export interface UdpReceiver {
  readonly address: { host: string; port: number };
  /** SO_RCVBUF as the kernel reports it after the request (0 when it could not be read). */
  readonly recvBufferBytes: number;
  stats(): UdpReceiverStats;
  /** Stops receiving; packets already queued are still handed over before it resolves. */
  close(): Promise<void>;
}

function bindSocket(socket: dgram.Socket, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, host, () => {
      socket.off('error', reject);
      resolve();
    });
  });
}

export async function startUdpReceiver(opts: UdpReceiverOptions, handle: PacketHandler): Promise<UdpReceiver> {
  const now = opts.now ?? (() => performance.timeOrigin + performance.now());
  const type = net.isIPv6(opts.host) ? 'udp6' : 'udp4';
  const maxDedicated = opts.preferred === undefined ? 0 : (opts.dedicatedSockets ?? 64);
  const socket = dgram.createSocket({ type, reuseAddr: maxDedicated > 0 });
  /** addr:port → its connected socket (null while binding, or when it could not be made: not retried). */
  const dedicated = new Map<string, dgram.Socket | null>();
  /** When each dedicated socket last received (ms): a sender gone quiet gives its place up to a new one. */
  const lastHeard = new Map<string, number>();
  let lastReclaimMs = -Infinity;
  /** The bound address, once bound (dedicated sockets bind to the same). */
  let local = { address: '', port: 0 };
  // A ring of packets and arrival times.
  const cap = opts.queuePackets;
  const packets = new Array<Buffer | undefined>(cap);
  const times = new Float64Array(cap);
  const sources = new Array<string>(cap);
  const shedAbove = cap >>> 1;
  const preferred = opts.preferred;
  let head = 0;
  let size = 0;
  let received = 0;
  let queueDrops = 0;
  let shed = 0;
  let scheduled = false;
  let closed = false;
  let drained: (() => void) | null = null;

  const drain = (): void => {
    scheduled = false;
    for (let n = 0; n < DRAIN_SLICE && size > 0; n++) {
      const p = packets[head]!;
      const t = times[head]!;
      const src = sources[head]!;
      packets[head] = undefined;
      head = (head + 1) % cap;
      size--;
      handle(p, t, src); // the pipeline never throws
    }
    if (size > 0) schedule();
    else if (drained !== null) drained();
  };
  const schedule = (): void => {
    if (!scheduled) {
      scheduled = true;
      setImmediate(drain);
    }
  };

  const enqueue = (msg: Buffer, source: string): void => {
    const i = (head + size) % cap;
    packets[i] = msg;
    times[i] = now();
    sources[i] = source;
    size++;
    schedule();
  };
  /** At most once a second when the table is full: closes the socket idle longest, if idle over DEDICATED_IDLE_MS. */
  const reclaim = (t: number): void => {
    if (t - lastReclaimMs < 1000) return;
    lastReclaimMs = t;
    let oldest: string | undefined;
    let oldestMs = t - DEDICATED_IDLE_MS;
    for (const [key, ms] of lastHeard) {
      if (ms < oldestMs) {
        oldest = key;
        oldestMs = ms;
      }
    }
    if (oldest === undefined) return;
    dedicated.get(oldest)?.close();
    dedicated.delete(oldest);
    lastHeard.delete(oldest);
  };
  const dedicate = (source: string, port: number): void => {
    const key = `${source}:${port}`;
    if (dedicated.has(key) || closed) return;
    if (dedicated.size >= maxDedicated) {
      reclaim(now());
      if (dedicated.size >= maxDedicated) return;
    }
    dedicated.set(key, null);
    lastHeard.set(key, now()); // a socket that fails to bind stays null and is reclaimed like an idle one
    const d = dgram.createSocket({ type, reuseAddr: true });
    d.on('message', (msg, rinfo) => {
      // Between bind() and connect() (Node has no way to do both at once) this socket is a second listener on the
      // port, and Linux hands the newest bound socket what would have gone to the shared one: anyone's datagrams,
      // a flood's included, can land here, and some may still sit in its buffer after connect(). Only the peer's
      // are the peer's; the rest are judged as the shared socket judges them (so a forgery is never charged to
      // the good feed's budget: the flood test saw exactly that, now and then).
      if (rinfo.port !== port || rinfo.address !== source) {
        onShared(msg, rinfo);
        return;
      }
      received++;
      lastHeard.set(key, now());
      if (size >= cap) queueDrops++;
      else enqueue(msg, source);
    });
    d.once('error', (err) => {
      opts.log?.debug({ err }, 'ingest: no dedicated socket for a known-good sender; its shreds stay on the shared socket');
      d.close();
    });
    d.bind(local.port, local.address, () => {
      d.connect(port, source, () => {
        if (closed) d.close();
        else {
          try {
            if (opts.recvBufferBytes > 0) d.setRecvBufferSize(opts.recvBufferBytes);
          } catch {
            // the kernel default buffer still isolates this sender from the flood
          }
          dedicated.set(key, d);
          lastHeard.set(key, now());
        }
      });
    });
  };

  const onShared = (msg: Buffer, rinfo: dgram.RemoteInfo): void => {
    received++;
    if (size >= cap) {
      queueDrops++;
      return;
    }
    const source = rinfo.address;
    if (preferred !== undefined && (size >= shedAbove || maxDedicated > 0)) {
      const good = preferred(source);
      if (!good && size >= shedAbove) {
        shed++;
        return;
      }
      if (good && maxDedicated > 0) dedicate(source, rinfo.port);
    }
    enqueue(msg, source);
  };
  socket.on('message', onShared);
  try {
    // SO_REUSEADDR (for the dedicated sockets) would let this bind share a port another process holds with the
    // option set, a second ingest say, and split the feed silently. A plain socket bound first fails on a port
    // anyone holds: that is the check, and it picks the port when 0 was asked for.
    let port = opts.port;
    if (maxDedicated > 0) {
      const probe = dgram.createSocket({ type });
      try {
        await bindSocket(probe, port, opts.host);
        port = probe.address().port;
      } finally {
        await new Promise<void>((r) => probe.close(() => r()));
      }
    }
    await bindSocket(socket, port, opts.host);
  } catch (e) {
    socket.close();
    throw e; // the caller names the setting (a bind failure is reported once, by whoever chose the address)
  }
  socket.on('error', (err) => opts.log?.warn({ err }, 'ingest UDP socket error'));

  let effective = 0;
  try {
    if (opts.recvBufferBytes > 0) socket.setRecvBufferSize(opts.recvBufferBytes);
    effective = socket.getRecvBufferSize();
  } catch (e) {
    opts.log?.warn({ err: e }, 'could not set SO_RCVBUF');
  }
  const a = socket.address();
  local = { address: a.address, port: a.port };
  opts.log?.info({ host: a.address, port: a.port, recvBufferRequested: opts.recvBufferBytes, recvBufferEffective: effective }, 'ingest listening (UDP)');
  // Linux grants min(request, rmem_max) and reports twice that. The built-in default is a wish, and most
  // desktops cap it: info, once. A size the config asks for is the operator's requirement: warn.
  if (opts.recvBufferBytes > 0 && effective > 0 && effective < opts.recvBufferBytes) {
    const fields = { requested: opts.recvBufferBytes, effective };
    if (opts.recvBufferExplicit === true) opts.log?.warn(fields, 'SO_RCVBUF capped by the kernel below ingest.recvBufferBytes; raise net.core.rmem_max to absorb bursts');
    else opts.log?.info(fields, 'SO_RCVBUF capped by the kernel (default request; raise net.core.rmem_max for bursty feeds)');
  }

  return {
    address: { host: a.address, port: a.port },
    recvBufferBytes: effective,
    stats: () => ({ received, queueDrops, shed, dedicated: [...dedicated.values()].filter((d) => d !== null).length, queued: size }),
    async close() {
      if (closed) return;
      closed = true;
      for (const d of dedicated.values()) if (d !== null) d.close();
      await new Promise<void>((r) => socket.close(() => r()));
      if (size > 0) await new Promise<void>((r) => (drained = r));
    },
  };
}
