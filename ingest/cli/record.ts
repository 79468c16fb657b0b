import dgram from 'node:dgram';
import fs from 'node:fs';
import net from 'node:net';
import { expectOnly, parseArgs, UsageError } from '../../infra/args';
import { writePcap, writeU64lp } from '../capture';
import { formatFlag, hostPortFlag, numberFlag } from './flags';

// `meridian record --listen HOST:PORT --out FILE [--format u64lp|pcap] [--count N] [--duration S]`
// Writes every received datagram to a capture file until --count packets, --duration seconds, or SIGINT /
// SIGTERM. Packets are appended in chunks (each pcap chunk after the first without its global header), so a
// long recording does not sit in memory and an interrupt loses nothing already received.

const FLUSH_PACKETS = 1024;
const FLUSH_EVERY_MS = 1000;
const PCAP_GLOBAL_HDR_SZ = 24;
const RECV_BUFFER_BYTES = 64 * 1024 * 1024;

export async function run(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  expectOnly(args, ['listen', 'out', 'format', 'count', 'duration']);
  if (args.positional.length > 0) throw new UsageError(`unexpected argument "${args.positional[0]}"`);
  const listen = hostPortFlag(args, 'listen');
  const out = args.get('out');
  if (out === undefined) throw new UsageError('--out FILE is required');
  const format = formatFlag(args, ['u64lp', 'pcap'] as const) ?? 'u64lp';
  const count = numberFlag(args, 'count', { min: 1, integer: true });
  const duration = numberFlag(args, 'duration', { min: 0.001 });

  const fd = fs.openSync(out, 'w');
  let chunk: Buffer[] = [];
  let chunkTimes: number[] = [];
  let wroteHeader = false;
  let packets = 0;
  let bytes = 0;
  let dstPort = listen.port;
  const flush = (): void => {
    if (chunk.length === 0) return;
    let data = format === 'pcap' ? writePcap(chunk, { dstPort, timesMs: chunkTimes }) : writeU64lp(chunk);
    if (format === 'pcap' && wroteHeader) data = data.subarray(PCAP_GLOBAL_HDR_SZ);
    fs.writeSync(fd, data);
    wroteHeader = true;
    chunk = [];
    chunkTimes = [];
  };

  const socket = dgram.createSocket(net.isIPv6(listen.host) ? 'udp6' : 'udp4');
  let finish: () => void = () => undefined;
  const done = new Promise<void>((r) => (finish = r));
  socket.on('message', (msg) => {
    if (count !== undefined && packets >= count) return;
    chunk.push(msg);
    chunkTimes.push(Date.now());
    packets++;
    bytes += msg.length;
    if (chunk.length >= FLUSH_PACKETS) flush();
    if (count !== undefined && packets >= count) finish();
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(listen.port, listen.host, () => resolve());
  });
  try {
    socket.setRecvBufferSize(RECV_BUFFER_BYTES);
  } catch {
    // the kernel's cap applies; recording still works
  }
  const addr = socket.address();
  dstPort = addr.port;
  process.stderr.write(`record: listening on ${addr.address}:${addr.port}, writing ${format} to ${out}\n`);

  const timer = setInterval(flush, FLUSH_EVERY_MS);
  const stopTimer = duration === undefined ? undefined : setTimeout(finish, duration * 1000);
  const onSignal = (): void => finish();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  await done;
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
  clearInterval(timer);
  clearTimeout(stopTimer);
  await new Promise<void>((r) => socket.close(() => r()));
  flush();
  if (!wroteHeader && format === 'pcap') fs.writeSync(fd, writePcap([], { dstPort }));
  fs.closeSync(fd);
  process.stderr.write(`record: ${packets} packets (${bytes} bytes) written to ${out}\n`);
  return 0;
}
