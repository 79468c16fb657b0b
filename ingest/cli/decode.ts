import { numberOption, parseCommand, UsageError, type CommandSpec } from '../../infra/base/args';
import { CAPTURE_FORMATS, type CaptureFormat } from '../capture';
import { Pipeline, type PipelineStats } from '../pipeline';
import { fixedLeader, type LeaderKeys } from '../shred/leader-keys';
import { formatFlag, formatOptionSpec, onePositional, loadCapture } from './flags';
import { txJson } from './tx-json';

// `meridian decode <capture> [--format pcap|ar|u64lp] [--shred-version N] [--leader <base58>]`
// Runs a capture through the same Pipeline as the live worker, with an in-memory sink instead of the bus:
// one JSON line per decoded transaction on stdout, then one summary line. Exit 0 even when packets were
// dropped (the summary says why); 1 when the capture cannot be read or is not a capture.

export const DECODE_SPEC: CommandSpec = {
  command: 'meridian decode',
  args: '<capture>',
  summary: 'Decode a shred capture through the ingest pipeline: one JSON line per transaction on stdout, then a summary line.',
  options: [
    formatOptionSpec(CAPTURE_FORMATS, 'capture format (default: detected from the content)'),
    { name: 'shred-version', value: 'N', help: 'drop shreds of another shred version (0..65535)', default: 'any' },
    { name: 'leader', value: 'KEY', help: "check every FEC set's signature against this base58 leader key", default: 'no check' },
  ],
  notes: 'Exit 0 when the capture was read (the summary counts drops and why), 1 when it cannot be read, 2 on bad options.',
};

export interface DecodeSummary {
  type: 'summary';
  /** The capture's format, as given or as detected from the content. */
  format: CaptureFormat;
  packets: number;
  shreds: PipelineStats['shreds'];
  drops: PipelineStats['drops'];
  setsCompleted: number;
  setsRecovered: number;
  shredsRecovered: number;
  equivocations: number;
  slots: number;
  batches: number;
  batchesInvalid: PipelineStats['batchesInvalid'];
  entries: number;
  transactions: number;
  transactionsInvalid: PipelineStats['transactionsInvalid'];
  captureSkipped: number;
}

export async function run(argv: string[]): Promise<number> {
  const args = parseCommand(argv, DECODE_SPEC);
  const file = onePositional(args, 'capture file');
  const format = formatFlag(args);
  const shredVersion = numberOption(args, 'shred-version', { min: 0, max: 0xffff, integer: true }) ?? null;
  const leaderArg = args.get('leader');
  let leaders: LeaderKeys | null = null;
  if (leaderArg !== undefined) {
    try {
      leaders = fixedLeader(leaderArg);
    } catch {
      throw new UsageError(`--leader: expected a base58 public key (32 bytes), got "${leaderArg}"`);
    }
  }

  const capture = loadCapture('decode', file, format);
  if (capture === null) return 1;

  let pending: string[] = [];
  const pipeline = new Pipeline({
    shredVersion,
    leaders,
    sink: {
      batch: (out) => {
        for (const d of out.txs) pending.push(JSON.stringify(txJson(d)));
      },
      slot: () => undefined,
    },
  });
  const times = capture.timesMs;
  const base = Date.now();
  for (let i = 0; i < capture.packets.length; i++) {
    // Captures without timestamps get evenly spaced synthetic arrivals (only batch observed-at uses them).
    pipeline.push(capture.packets[i]!, times?.[i] ?? base + i * 0.001);
    if (pending.length >= 256) pending = await flush(pending);
  }
  await flush(pending);

  const s = pipeline.stats();
  const summary: DecodeSummary = {
    type: 'summary',
    format: capture.format,
    packets: s.packets,
    shreds: s.shreds,
    drops: s.drops,
    setsCompleted: s.setsCompleted,
    setsRecovered: s.setsRecovered,
    shredsRecovered: s.shredsRecovered,
    equivocations: s.equivocations,
    slots: s.slots,
    batches: s.batches,
    batchesInvalid: s.batchesInvalid,
    entries: s.entries,
    transactions: s.transactions,
    transactionsInvalid: s.transactionsInvalid,
    captureSkipped: capture.skipped,
  };
  await flush([JSON.stringify(summary)]);
  return 0;
}

/** Writes lines to stdout, waiting for it to drain when a pipe is slow. */
async function flush(lines: string[]): Promise<string[]> {
  if (lines.length > 0 && !process.stdout.write(lines.join('\n') + '\n')) {
    await new Promise<void>((r) => process.stdout.once('drain', () => r()));
  }
  return [];
}
