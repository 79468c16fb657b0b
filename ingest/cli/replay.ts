import dgram from 'node:dgram';
import dns from 'node:dns/promises';
import net from 'node:net';
import { hostPortOption, numberOption, parseCommand, UsageError, type CommandSpec } from '../../infra/base/args';
import { CAPTURE_FORMATS } from '../capture';
import { formatFlag, formatOptionSpec, onePositional, loadCapture } from './flags';

// `meridian replay <capture> --to HOST:PORT [--rate PPS] [--loop N] [--format F]`
// Sends a capture's packets as UDP datagrams, in capture order. With --rate the sends are paced to that many
// packets per second (against a schedule, so timer jitter does not accumulate); without it they go as fast
// as the socket takes them, a bounded number in flight. stderr shows a progress bar on a TTY, otherwise one
// summary line at the end. SIGINT stops early (the summary still prints). The --to host is resolved once,
// before anything is sent: a name that does not resolve fails at once instead of once per packet.

export const REPLAY_SPEC: CommandSpec = {
  command: 'meridian replay',
  args: '<capture>',
  summary: "Send a capture's packets as UDP datagrams, in capture order (e.g. to a running ingest).",
  options: [
    { name: 'to', value: 'HOST:PORT', help: 'where to send (required)' },
    { name: 'rate', value: 'PPS', help: 'pace the sends to this many packets per second', default: 'as fast as the socket takes them' },
    { name: 'loop', value: 'N', help: 'send the capture N times', default: '1' },
    formatOptionSpec(CAPTURE_FORMATS, 'capture format (default: detected from the content)'),
  ],
  notes: 'Exit 0 when every packet was sent, 1 on send errors or an unreadable capture, 2 on bad options or a --to host that does not resolve.',
};

/** The --to host as an address: literal IPs as they are, names through the system resolver (once). */
async function resolveTarget(host: string): Promise<{ address: string; family: 4 | 6 }> {
  const literal = net.isIP(host);
  if (literal !== 0) return { address: host, family: literal as 4 | 6 };
  try {
    const r = await dns.lookup(host);
    return { address: r.address, family: r.family === 6 ? 6 : 4 };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    throw new UsageError(`--to: host "${host}" does not resolve (${code}); give an IP address or a resolvable name`);
  }
}

const IN_FLIGHT = 64;
const BAR_WIDTH = 30;
const BAR_EVERY_MS = 100;

export async function run(argv: string[]): Promise<number> {
  const args = parseCommand(argv, REPLAY_SPEC);
  const file = onePositional(args, 'capture file');
  const to = hostPortOption(args, 'to');
  const rate = numberOption(args, 'rate', { min: 1, max: 10_000_000 });
  const loops = numberOption(args, 'loop', { min: 1, integer: true }) ?? 1;
  const format = formatFlag(args);

  const capture = loadCapture('replay', file, format);
  if (capture === null) return 1;
  const target = await resolveTarget(to.host);
  const total = capture.packets.length * loops;
  const socket = dgram.createSocket(target.family === 6 ? 'udp6' : 'udp4');
  let stop = false;
  const onSigint = (): void => {
    stop = true;
  };
  process.on('SIGINT', onSigint);

  const tty = process.stderr.isTTY === true;
  const started = performance.now();
  let sent = 0;
  let bytes = 0;
  let errors = 0;
  let firstError = '';
  let lastBar = 0;
  const bar = (force = false): void => {
    const t = performance.now();
    if (!tty || (!force && t - lastBar < BAR_EVERY_MS)) return;
    lastBar = t;
    const filled = total === 0 ? BAR_WIDTH : Math.round((sent / total) * BAR_WIDTH);
    const pps = sent / Math.max((t - started) / 1000, 1e-3);
    process.stderr.write(`\r[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${sent}/${total} packets  ${Math.round(pps)} pps`);
  };

  let inFlight = 0;
  let wake: (() => void) | null = null;
  const sendOne = (p: Buffer): void => {
    inFlight++;
    socket.send(p, to.port, target.address, (err) => {
      inFlight--;
      if (err) {
        if (errors++ === 0) firstError = (err as NodeJS.ErrnoException).code ?? err.message;
      }
      wake?.();
    });
  };
  const waitBelow = async (n: number): Promise<void> => {
    while (inFlight > n) await new Promise<void>((r) => (wake = r));
    wake = null;
  };

  try {
    outer: for (let l = 0; l < loops; l++) {
      for (const p of capture.packets) {
        if (stop) break outer;
        if (rate !== undefined) {
          const due = started + (sent * 1000) / rate;
          const wait = due - performance.now();
          if (wait > 1) await new Promise((r) => setTimeout(r, wait));
        }
        await waitBelow(IN_FLIGHT - 1);
        sendOne(p);
        sent++;
        bytes += p.length;
        bar();
      }
    }
    await waitBelow(0);
  } finally {
    process.off('SIGINT', onSigint);
    socket.close();
  }
  const secs = (performance.now() - started) / 1000;
  if (tty) {
    bar(true);
    process.stderr.write('\n');
  }
  process.stderr.write(
    `replay: sent ${sent}/${total} packets (${bytes} bytes) to ${to.host}:${to.port} in ${secs.toFixed(2)} s (${Math.round(sent / Math.max(secs, 1e-3))} pps)` +
      `${errors > 0 ? `, ${errors} send errors (first: ${firstError})` : ''}${stop ? ', interrupted' : ''}\n`,
  );
  return errors > 0 ? 1 : 0;
}
