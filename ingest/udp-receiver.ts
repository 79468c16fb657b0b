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

const DRAIN_SLICE = 512;

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
  log?: Log;
  now?: () => number;
}

export interface UdpReceiverStats {
  received: number;
  queueDrops: number;
  /** Packets from non-preferred sources dropped because the queue was past half full. */
  shed: number;
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

export async function startUdpReceiver(opts: UdpReceiverOptions, handle: PacketHandler): Promise<UdpReceiver> {
  const now = opts.now ?? (() => performance.timeOrigin + performance.now());
  const socket = dgram.createSocket({ type: net.isIPv6(opts.host) ? 'udp6' : 'udp4' });
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

  socket.on('message', (msg, rinfo) => {
    received++;
    if (size >= cap) {
      queueDrops++;
      return;
    }
    const source = rinfo.address;
    if (size >= shedAbove && preferred !== undefined && !preferred(source)) {
      shed++;
      return;
    }
    const i = (head + size) % cap;
    packets[i] = msg;
    times[i] = now();
    sources[i] = source;
    size++;
    schedule();
  });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(opts.port, opts.host, () => {
        socket.off('error', reject);
        resolve();
      });
    });
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
    stats: () => ({ received, queueDrops, shed, queued: size }),
    async close() {
      if (closed) return;
      closed = true;
      await new Promise<void>((r) => socket.close(() => r()));
      if (size > 0) await new Promise<void>((r) => (drained = r));
    },
  };
}
