import dgram from 'node:dgram';
import net from 'node:net';
import { expectOnly, parseArgs } from '../../infra/args';
import { formatFlag, hostPortFlag, numberFlag, onePositional, loadCapture } from './flags';

// `meridian replay <capture> --to HOST:PORT [--rate PPS] [--loop N] [--format F]`
// Sends a capture's packets as UDP datagrams, in capture order. With --rate the sends are paced to that many
// packets per second (against a schedule, so timer jitter does not accumulate); without it they go as fast
// as the socket takes them, a bounded number in flight. stderr shows a progress bar on a TTY, otherwise one
// summary line at the end. SIGINT stops early (the summary still prints).

const IN_FLIGHT = 64;
const BAR_WIDTH = 30;
const BAR_EVERY_MS = 100;

export async function run(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  expectOnly(args, ['to', 'rate', 'loop', 'format']);
  const file = onePositional(args, 'capture file');
  const to = hostPortFlag(args, 'to');
  const rate = numberFlag(args, 'rate', { min: 1, max: 10_000_000 });
  const loops = numberFlag(args, 'loop', { min: 1, integer: true }) ?? 1;
  const format = formatFlag(args);

  const capture = loadCapture('replay', file, format);
  if (capture === null) return 1;
  const total = capture.packets.length * loops;
  const socket = dgram.createSocket(net.isIPv6(to.host) ? 'udp6' : 'udp4');
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
    socket.send(p, to.port, to.host, (err) => {
      inFlight--;
      if (err) errors++;
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
      `${errors > 0 ? `, ${errors} send errors` : ''}${stop ? ', interrupted' : ''}\n`,
  );
  return errors > 0 ? 1 : 0;
}
