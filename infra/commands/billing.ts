import fs from 'node:fs';
import path from 'node:path';
import { openBus } from '../../bus/open';
import { CLI_BROKERS_SETTING } from '../../bus/broker-address';
import { TOPIC, defaultTopicSpecs } from '../../bus/topics';
import { groupHelpText, noPositionals, parseCommand, subcommand, UsageError, type CommandSpec } from '../base/args';
import { createLogger, setRootLogger } from '../base/log';
import { startBillingJob, type BillingJob } from '../ops/billing/job';
import { showProgress } from '../ops/billing/progress';
import { formatReport, reportOf, toCsv } from '../ops/billing/report';

// `meridian billing run --group NAME --out DIR`: a billing job on usage.events (Kafka), until SIGINT/SIGTERM.
// `meridian billing report --out DIR [--json|--csv]`: the totals of a billing directory.

const BILLING_HELP = groupHelpText({
  command: 'meridian billing',
  summary: 'Billing on the usage.events topic: per-partition ledgers written durably before offsets are committed, so a restart neither loses nor double-counts a unit.',
  commands: [
    { name: 'run', summary: 'a billing job: consume usage.events in a consumer group until Ctrl-C' },
    { name: 'report', summary: 'print the totals of a billing directory' },
  ],
});

const RUN_SPEC: CommandSpec = {
  command: 'meridian billing run',
  summary: 'Consume usage.events as a member of a consumer group, drop duplicate event ids, sum units per rental × surface × method × hour, and keep DIR/report.json and DIR/report.csv current. Progress (events/s, lag) goes to stderr. Jobs that share one DIR hand partitions over exactly.',
  options: [
    { name: 'group', value: 'NAME', help: 'consumer group (required)' },
    { name: 'out', value: 'DIR', help: 'ledgers and reports (required; created if its parent exists)' },
    { name: 'brokers', value: 'HOST:PORT,...', help: 'Kafka bootstrap servers', default: 'KAFKA_BROKERS' },
    { name: 'topic', value: 'TOPIC', help: 'the usage topic', default: TOPIC.usageEvents },
  ],
  notes: 'A single-machine `meridian start` runs its own billing job on the embedded bus (billing.outDir).',
};

const REPORT_SPEC: CommandSpec = {
  command: 'meridian billing report',
  summary: 'Print the totals of a billing directory per rental × surface × method (all hours), then per log (a restarted embedded bus or a recreated topic is a new log) and summed.',
  options: [
    { name: 'out', value: 'DIR', help: 'the billing directory (required)' },
    { name: 'json', help: 'the whole report as JSON (rows per hour, partitions, totals per log and summed)' },
    { name: 'csv', help: 'the rows as CSV' },
  ],
};

export async function run(argv: string[]): Promise<number> {
  const [sub, rest] = subcommand(argv, { command: 'meridian billing', names: ['run', 'report'] as const, help: BILLING_HELP });
  const args = parseCommand(rest, sub === 'run' ? RUN_SPEC : REPORT_SPEC);
  noPositionals(args);
  const out = args.get('out');
  if (sub === 'report') {
    if (out === undefined) throw new UsageError('report needs --out DIR', REPORT_SPEC.command);
    if (!fs.existsSync(out)) throw new UsageError(`--out: no billing directory at ${out}`, REPORT_SPEC.command);
    const report = reportOf(out);
    process.stdout.write(args.bool('json') ? JSON.stringify(report, null, 2) + '\n' : args.bool('csv') ? toCsv(report.rows) : formatReport(report));
    return 0;
  }
  const topic = args.get('topic') ?? TOPIC.usageEvents;
  const group = args.get('group');
  if (group === undefined || group === '') throw new UsageError('run needs --group NAME');
  if (out === undefined) throw new UsageError('run needs --out DIR');
  if (!fs.existsSync(path.dirname(path.resolve(out)))) throw new UsageError(`--out: the parent directory of ${out} does not exist`);
  const brokers = (args.get('brokers') ?? process.env.KAFKA_BROKERS ?? '').split(',').map((b) => b.trim()).filter((b) => b.length > 0);
  if (brokers.length === 0) throw new UsageError('run needs Kafka: set KAFKA_BROKERS or pass --brokers (a single-machine `meridian start` already runs a billing job)');

  const log = createLogger({ level: process.env.LOG_LEVEL ?? 'warn', destination: process.stderr });
  setRootLogger(log);
  let stopping = false;
  const stopped = new Promise<void>((resolve) => {
    const onSignal = (): void => {
      stopping = true;
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  const bus = await openBus({ kind: 'kafka', brokers, clientId: `meridian-billing-${group}`, createTopics: false, streamPartitions: 1 }, { log, setting: CLI_BROKERS_SETTING });
  // A job started while the cluster is down (or restarting) waits for it rather than exiting.
  let job: BillingJob | undefined;
  for (let delay = 500; job === undefined; delay = Math.min(delay * 2, 10_000)) {
    try {
      await bus.createTopics(defaultTopicSpecs().filter((s) => s.name === TOPIC.usageEvents).map((s) => ({ ...s, name: topic })));
      job = await startBillingJob(bus, { group, outDir: out, log, topic });
      await job.ready;
    } catch (e) {
      if (job !== undefined) await job.close().catch(() => undefined);
      job = undefined;
      if (stopping) break;
      process.stderr.write(`billing: Kafka not reachable (${(e as Error).message.split('\n')[0]}); retrying in ${delay} ms\n`);
      await Promise.race([new Promise((r) => setTimeout(r, delay)), stopped]);
      if (stopping) break;
    }
  }
  if (job === undefined) {
    await bus.close();
    return 0;
  }
  process.stderr.write(`billing: group ${group}, ledgers and reports in ${out}\n`);
  const progress = showProgress(job, process.stderr);
  await stopped;
  progress.stop();
  await job.close();
  await bus.close();
  const s = job.stats();
  process.stderr.write(`billing: stopped; ${s.counted} events counted, ${s.duplicates} duplicates skipped\n`);
  return 0;
}
