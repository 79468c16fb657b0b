import dgram from 'node:dgram';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { hostPortOption, noPositionals, numberOption, outputFileOption, parseCommand, UsageError, type CommandSpec } from '../../infra/base/args';
import { asListenError } from '../../infra/base/config-read';
import { writePcap, writeU64lp } from '../capture';
import { formatFlag, formatOptionSpec } from './flags';

// `meridian record --listen HOST:PORT --out FILE [--format u64lp|pcap] [--count N] [--duration S]`
// Writes every received datagram to a capture file until --count packets, --duration seconds, or SIGINT /
// SIGTERM. Packets are appended in chunks (each pcap chunk after the first without its global header), so a
// long recording does not sit in memory and an interrupt loses nothing already received. Without --format
// the file's extension decides (.pcap → pcap, anything else → u64lp), and both status lines name the format.

const RECORD_FORMATS = ['u64lp', 'pcap'] as const;
type RecordFormat = (typeof RECORD_FORMATS)[number];

export const RECORD_SPEC: CommandSpec = {
  command: 'meridian record',
  summary: 'Record received UDP datagrams to a capture file (e.g. a shred feed), until --count, --duration or Ctrl-C.',
  options: [
    { name: 'listen', value: 'HOST:PORT', help: 'UDP address to receive on (required; port 0 picks a free one)' },
    { name: 'out', value: 'FILE', help: 'capture file to write (required; its folder must exist)' },
    formatOptionSpec(RECORD_FORMATS, 'file format (default: from the extension of --out: .pcap → pcap, otherwise u64lp)'),
    { name: 'count', value: 'N', help: 'stop after N packets' },
    { name: 'duration', value: 'SECONDS', help: 'stop after this many seconds' },
  ],
};

/** The format named by --out's extension; .ar is a format record cannot write. */
export function formatForFile(file: string): RecordFormat {
  const ext = path.extname(file).toLowerCase();
  if (ext === '.pcap' || ext === '.cap') return 'pcap';
  if (ext === '.ar') throw new UsageError(`--out ${file}: record writes pcap or u64lp, not ar; choose a .pcap or .u64lp file or give --format`);
  return 'u64lp';
}

const FLUSH_PACKETS = 1024;
const FLUSH_EVERY_MS = 1000;
const PCAP_GLOBAL_HDR_SZ = 24;
const RECV_BUFFER_BYTES = 64 * 1024 * 1024;

export async function run(argv: string[]): Promise<number> {
  const args = parseCommand(argv, RECORD_SPEC);
  noPositionals(args);
  const listen = hostPortOption(args, 'listen');
  const out = outputFileOption(args, 'out');
  if (out === undefined) throw new UsageError('--out FILE is required');
  const format = formatFlag(args, RECORD_FORMATS) ?? formatForFile(out);
  const count = numberOption(args, 'count', { min: 1, integer: true });
  const duration = numberOption(args, 'duration', { min: 0.001 });

  const socket = dgram.createSocket(net.isIPv6(listen.host) ? 'udp6' : 'udp4');
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(listen.port, listen.host, () => {
        socket.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    socket.close();
    throw asListenError(e, '--listen');
  }
  // Opened only once the socket is bound, so a taken port leaves no empty file behind.
  let fd: number;
  try {
    fd = fs.openSync(out, 'w');
  } catch (e) {
    socket.close();
    throw e; // the CLI reports a file it cannot open in one line
  }
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
  process.stderr.write(`record: ${packets} packets (${bytes} bytes) written to ${out} as ${format}\n`);
  return 0;
}
