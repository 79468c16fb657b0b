import fs from 'node:fs';
import type { Bus, BusMessage } from '../../bus/bus';
import { openBus } from '../../bus/open';
import { CLI_BROKERS_SETTING } from '../../bus/broker-address';
import { RecordingError, type RecordingMeta } from '../../bus/recording';
import { RecordingWriter, fileChunks, readRecording, verifyRecordingFile } from '../../bus/recording-io';
import { formatRangePoint, parseRangePoint, readRange, type RangePoint } from '../../bus/topic-range';
import { loadRecords, prepareTopics, targetName, type Pace, type RecordSink } from '../../bus/topic-load';
import { choiceOption, groupHelpText, outputFileOption, parseCommand, positionals, subcommand, UsageError, type CommandSpec, type OptionSpec, type ParsedArgs } from '../base/args';
import { createLogger } from '../base/log';
import { adminAddress, DEFAULT_ENDPOINTS_FILE } from '../ops/admin/client';
import { adminSink, fetchRecording } from '../ops/admin/topics-client';

// `meridian topics record|replay`: a topic's records to a file (bus/recording.ts documents the format) and back
// into a broker. Kafka with KAFKA_BROKERS or --brokers; otherwise the running single-machine service's embedded
// bus, through its loopback admin endpoint (the embedded bus lives inside that process and has no port).

const TARGET_OPTIONS: OptionSpec[] = [
  { name: 'brokers', value: 'HOST:PORT,...', help: 'Kafka bootstrap servers', default: 'KAFKA_BROKERS' },
  { name: 'admin', value: 'HOST:PORT', help: "a running single-machine service's admin endpoint (used when no Kafka is given)" },
  { name: 'endpoints', value: 'FILE', help: 'find the admin endpoint in this endpoints file (key "admin")', default: DEFAULT_ENDPOINTS_FILE },
];

const TOPICS_HELP = groupHelpText({
  command: 'meridian topics',
  summary: 'Record topics to a file and replay them into a broker: Kafka when KAFKA_BROKERS (or --brokers) is set, else the running single-machine service through its loopback admin endpoint.',
  commands: [
    { name: 'record', summary: "write topics' records (key, value, headers, timestamp, partition, offset) to a recording file" },
    { name: 'replay', summary: 'write a recording into a broker, keys, headers and partitions kept, fast or at recorded pace' },
  ],
});

const RECORD_SPEC: CommandSpec = {
  command: 'meridian topics record',
  summary: "Write topics' records to a recording file, from --from up to --to (default: the end the topics have when the command starts).",
  options: [
    { name: 'topic', value: 'T', multi: true, help: 'a topic to record (repeat for several; one file keeps their interleaving)' },
    { name: 'from', value: 'TIME|OFFSET', help: 'first record: an offset (in every partition) or a time (inclusive)', default: 'the first retained record' },
    { name: 'to', value: 'TIME|OFFSET', help: 'stop before this offset or time; a time or offset not reached yet follows the live topic until it is', default: 'the end at start' },
    { name: 'out', value: 'FILE', help: 'the recording file to write (replaced only once the recording is complete)' },
    { name: 'note', value: 'TEXT', help: 'free text kept in the header, e.g. how the recording was made' },
    ...TARGET_OPTIONS,
  ],
  notes: [
    'TIME is an ISO-8601 date-time with a zone (2026-11-25T14:00:00Z), or now, now-30s, now+2m (units ms, s, m, h);',
    'a whole number is an OFFSET. Offsets are [from, to) in each partition; times compare with the append time.',
    'Progress goes to stderr every 5 s; Ctrl-C ends the file cleanly with what was read so far.',
  ].join('\n'),
};

const REPLAY_SPEC: CommandSpec = {
  command: 'meridian topics replay',
  args: '<file>',
  summary: 'Write a recording into a broker: keys, values, headers and partitions as recorded; offsets and timestamps are the broker\'s own. The file is checked whole before anything is written.',
  options: [
    { name: 'pace', value: 'fast|recorded', help: 'fast: as fast as the broker acknowledges; recorded: the recorded gaps between records', default: 'fast' },
    { name: 'rename', value: 'FROM=TO', multi: true, help: 'write records of topic FROM into topic TO' },
    ...TARGET_OPTIONS,
  ],
};

const PROGRESS_MS = 5_000;

function brokersOf(args: ParsedArgs): string[] {
  return (args.get('brokers') ?? process.env.KAFKA_BROKERS ?? '').split(',').map((b) => b.trim()).filter((b) => b.length > 0);
}

async function kafkaBus(brokers: string[], clientId: string): Promise<Bus> {
  // The CLI's output is its answer; the Kafka client's chatter goes to stderr, errors only.
  const log = createLogger({ level: process.env.LOG_LEVEL ?? 'error', destination: process.stderr });
  return openBus({ kind: 'kafka', brokers, clientId, createTopics: false, streamPartitions: 1 }, { log, setting: CLI_BROKERS_SETTING });
}

function pointOption(args: ParsedArgs, name: string): RangePoint | undefined {
  const v = args.get(name);
  if (v === undefined) return undefined;
  const p = parseRangePoint(v);
  if (p === null) throw new UsageError(`--${name}: expected an offset, now[±N(ms|s|m|h)] or an ISO-8601 date-time with a zone, got ${JSON.stringify(v)}`);
  return p;
}

function progress(what: string, count: () => number): () => void {
  const started = Date.now();
  const timer = setInterval(() => {
    const s = (Date.now() - started) / 1000;
    process.stderr.write(`${what} ${count()} records in ${s.toFixed(0)} s\n`);
  }, PROGRESS_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** Ctrl-C stops the work cleanly instead of killing the process mid-file. */
function interruptSignal(): { signal: AbortSignal; dispose: () => void } {
  const ac = new AbortController();
  const on = (): void => ac.abort();
  process.once('SIGINT', on);
  process.once('SIGTERM', on);
  return { signal: ac.signal, dispose: () => (process.off('SIGINT', on), process.off('SIGTERM', on)) };
}

async function record(args: ParsedArgs): Promise<number> {
  positionals(args, 'argument', 0);
  const topics = args.all('topic');
  if (topics.length === 0) throw new UsageError('--topic T is required (repeat it for several topics)');
  const out = outputFileOption(args, 'out');
  if (out === undefined) throw new UsageError('--out FILE is required');
  const from = pointOption(args, 'from');
  const to = pointOption(args, 'to');
  const note = args.get('note');
  const range = { ...(from === undefined ? {} : { from: formatRangePoint(from) }), ...(to === undefined ? {} : { to: formatRangePoint(to) }) };
  const brokers = brokersOf(args);
  const partial = `${out}.partial`;
  const file = fs.createWriteStream(partial);
  const { signal, dispose } = interruptSignal();
  let writer: RecordingWriter | null = null;
  const stopProgress = progress('recorded', () => writer?.records ?? 0);
  let complete = false;
  try {
    if (brokers.length > 0) {
      const bus = await kafkaBus(brokers, 'meridian-topics-cli');
      try {
        const parts: RecordingMeta['topics'] = [];
        for (const t of topics) {
          const ends = await bus.endOffsets(t).catch(() => new Map<number, string>());
          if (ends.size === 0) throw new UsageError(`no topic ${t} on the brokers`);
          parts.push({ name: t, partitions: ends.size });
        }
        const meta: RecordingMeta = { topics: parts, source: { bus: 'kafka', recordedAt: new Date().toISOString() }, range, ...(note === undefined ? {} : { note }) };
        const w = (writer = new RecordingWriter(file, meta));
        await readRange(bus, { topics, ...(from === undefined ? {} : { from }), ...(to === undefined ? {} : { to }), signal, onRecords: (ms) => w.write(ms) });
      } finally {
        await bus.close();
      }
    } else {
      const addr = adminAddress(args.get('admin'), args.get('endpoints'));
      const res = await fetchRecording(addr, { topics, ...(from === undefined ? {} : { from }), ...(to === undefined ? {} : { to }) }, signal);
      const batch: BusMessage[] = [];
      try {
        for await (const r of readRecording(res, (meta) => (writer = new RecordingWriter(file, { ...meta, ...(note === undefined ? {} : { note }) })))) {
          batch.push({ ...r });
          if (batch.length >= 256) await writer!.write(batch.splice(0));
        }
      } catch (e) {
        // Ctrl-C aborts the request: keep what arrived, as a whole recording.
        if (!signal.aborted || writer === null) throw e;
      }
      await writer!.write(batch.splice(0));
    }
    const totals = writer!.end();
    await new Promise<void>((resolve, reject) => file.end((e?: Error | null) => (e ? reject(e) : resolve())));
    fs.renameSync(partial, out);
    complete = true;
    process.stdout.write(`${signal.aborted ? 'stopped early: ' : ''}recorded ${totals.records} records of ${topics.join(', ')} to ${out} (${writer!.bytes} bytes)\n`);
    return 0;
  } finally {
    stopProgress();
    dispose();
    if (!complete) {
      file.destroy();
      fs.rmSync(partial, { force: true });
    }
  }
}

function renames(args: ParsedArgs): Map<string, string> {
  const m = new Map<string, string>();
  for (const r of args.all('rename')) {
    const i = r.indexOf('=');
    if (i <= 0 || i === r.length - 1) throw new UsageError(`--rename: expected FROM=TO, got ${JSON.stringify(r)}`);
    m.set(r.slice(0, i), r.slice(i + 1));
  }
  return m;
}

async function replay(args: ParsedArgs): Promise<number> {
  const [file] = positionals(args, 'recording file');
  const pace: Pace = choiceOption(args, 'pace', ['fast', 'recorded'] as const) ?? 'fast';
  const rename = renames(args);
  let checked: Awaited<ReturnType<typeof verifyRecordingFile>>;
  try {
    checked = await verifyRecordingFile(file!);
  } catch (e) {
    if (e instanceof RecordingError) throw new RecordingError(`${file}: ${e.message}`); // one line, exit 1 (infra/cli.ts)
    throw e;
  }
  const { meta } = checked;
  const brokers = brokersOf(args);
  let bus: Bus | null = null;
  let sink: RecordSink;
  if (brokers.length > 0) {
    bus = await kafkaBus(brokers, 'meridian-topics-cli');
    const problem = await prepareTopics(bus, meta, rename);
    if (problem !== null) {
      await bus.close();
      throw new UsageError(problem);
    }
    sink = bus;
  } else {
    const partitions = new Map(meta.topics.map((t) => [targetName(t.name, rename), t.partitions]));
    sink = adminSink(adminAddress(args.get('admin'), args.get('endpoints')), partitions, meta.source);
  }
  const { signal, dispose } = interruptSignal();
  let written = 0;
  const stopProgress = progress('replayed', () => written);
  try {
    const r = await loadRecords(readRecording(fileChunks(file!)), sink, { pace, rename, signal, onProgress: (n) => (written = n) });
    const per = [...r.byTopic].map(([t, n]) => `${t} ${n}`).join(', ');
    process.stdout.write(`${r.aborted ? 'stopped early: ' : ''}replayed ${r.records} of ${checked.totals.records} records${per === '' ? '' : ` (${per})`}\n`);
    return r.aborted ? 1 : 0;
  } finally {
    stopProgress();
    dispose();
    await bus?.close();
  }
}

export async function run(argv: string[]): Promise<number> {
  const [sub, rest] = subcommand(argv, { command: 'meridian topics', names: ['record', 'replay'] as const, help: TOPICS_HELP });
  if (sub === 'record') return record(parseCommand(rest, RECORD_SPEC));
  return replay(parseCommand(rest, REPLAY_SPEC));
}
