import fs from 'node:fs';
import path from 'node:path';
import { KafkaBus } from '../../bus/kafka';
import { TOPIC, defaultTopicSpecs } from '../../bus/topics';
import { expectOnly, parseArgs, UsageError } from '../args';
import { createLogger, setRootLogger } from '../log';
import { startBillingJob, type BillingJob } from '../billing/job';
import { showProgress } from '../billing/progress';
import { buildReport, formatReport, toCsv } from '../billing/report';
import { loadAllLedgers } from '../billing/store';

// `meridian billing run --group NAME --out DIR`: a billing job on usage.events (Kafka), until SIGINT/SIGTERM.
// `meridian billing report --out DIR [--json|--csv]`: the totals of a billing directory.

export const BILLING_USAGE = `usage: meridian billing <run|report> [options]

  run     --group NAME --out DIR [--brokers H:P,...] [--topic T]   consume usage.events as a member of the consumer group
          NAME, dedupe by event id, keep per-partition ledgers in DIR (durable before offsets are committed)
          and write DIR/report.json and DIR/report.csv; progress (events/s, lag) on stderr. Kafka comes from
          --brokers or KAFKA_BROKERS (a single-machine \`meridian start\` runs its own job on the embedded bus).
  report  --out DIR [--json | --csv]                  totals per rental × surface × method (table by default)
`;

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    process.stdout.write(BILLING_USAGE);
    return sub === undefined ? 2 : 0;
  }
  const args = parseArgs(rest, { booleans: ['json', 'csv', 'help'] });
  if (args.has('help') || rest.includes('-h')) {
    process.stdout.write(BILLING_USAGE);
    return 0;
  }
  const out = args.get('out');
  if (sub === 'report') {
    expectOnly(args, ['out', 'json', 'csv', 'help']);
    if (out === undefined) throw new UsageError('report needs --out DIR');
    if (!fs.existsSync(out)) throw new UsageError(`--out: no billing directory at ${out}`);
    const report = buildReport(loadAllLedgers(out));
    process.stdout.write(args.has('json') ? JSON.stringify(report, null, 2) + '\n' : args.has('csv') ? toCsv(report.rows) : formatReport(report));
    return 0;
  }
  if (sub !== 'run') throw new UsageError(`unknown billing command "${sub}" (run, report)`);
  expectOnly(args, ['group', 'out', 'brokers', 'topic', 'help']);
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
  const bus = new KafkaBus({ brokers, clientId: `meridian-billing-${group}`, log });
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
