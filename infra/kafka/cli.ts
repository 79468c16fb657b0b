import { UsageError, expectOnly, parseArgs } from '../args';
import { startLocalBroker } from './broker';
import { ensureKafkaJars } from './jars';

// `meridian kafka jars`: gather the broker jars (Maven) and print their folder.
// `meridian kafka start [--port N] [--dir DIR] [--heap MB]`: run one local broker in the foreground until
// SIGINT or SIGTERM; prints the bootstrap address on stdout (progress goes to stderr).

const USAGE = 'usage: meridian kafka jars | start [--port N] [--dir DIR] [--heap MB]';

function intFlag(value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`--${name} must be an integer from ${min} to ${max}`);
  return n;
}

async function start(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  expectOnly(args, ['port', 'dir', 'heap']);
  if (args.positional.length > 0) throw new UsageError(`unexpected argument "${args.positional[0]}"\n${USAGE}`);
  const port = intFlag(args.get('port'), 'port', 1, 65535);
  const heapMb = intFlag(args.get('heap'), 'heap', 128, 8192);
  const dir = args.get('dir');
  process.stderr.write('starting a local Kafka broker...\n');
  const broker = await startLocalBroker({ port, dir, heapMb });
  process.stdout.write(`${broker.brokers.join(',')}\n`);
  process.stderr.write(`Kafka is up (data and broker.log in ${broker.dir}); Ctrl-C stops it\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  process.stderr.write('stopping Kafka...\n');
  // A folder the user named keeps its data for the next start; a temporary one is removed.
  await (dir === undefined ? broker.destroy() : broker.stop());
  return 0;
}

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'jars': {
      const args = parseArgs(rest);
      expectOnly(args, []);
      process.stdout.write(`${await ensureKafkaJars()}\n`);
      return 0;
    }
    case 'start':
      return start(rest);
    default:
      throw new UsageError(sub === undefined ? USAGE : `unknown kafka command "${sub}"\n${USAGE}`);
  }
}
