import { UsageError, groupHelpText, noPositionals, numberOption, parseCommand, subcommand, type CommandSpec } from '../../base/args';
import { startLocalBroker } from './broker';
import { ensureKafkaJars } from './jars';

// `meridian kafka jars`: gather the broker jars (Maven) and print their folder.
// `meridian kafka start [--port N] [--dir DIR] [--heap MB]`: run one local broker in the foreground until
// SIGINT or SIGTERM; prints the bootstrap address on stdout (progress goes to stderr).

const KAFKA_HELP = groupHelpText({
  command: 'meridian kafka',
  summary: 'A local Kafka broker (KRaft, one node) for development and tests; needs Java 17 and Maven.',
  commands: [
    { name: 'jars', summary: 'fetch the broker jars through Maven (into ~/.m2 and .cache/) and print their folder' },
    { name: 'start', summary: 'run one broker in the foreground until Ctrl-C; prints its bootstrap address' },
  ],
});

export const KAFKA_JARS_SPEC: CommandSpec = {
  command: 'meridian kafka jars',
  summary: 'Fetch the local broker\'s jars through Maven (cached in ~/.m2 and .cache/) and print the folder that holds them.',
  options: [],
};

export const KAFKA_START_SPEC: CommandSpec = {
  command: 'meridian kafka start',
  summary: 'Run one local Kafka broker in the foreground until SIGINT or SIGTERM; prints its bootstrap address on stdout.',
  options: [
    { name: 'port', value: 'N', help: 'broker port (1..65535)', default: 'a free port' },
    { name: 'dir', value: 'DIR', help: 'data folder, kept after stop', default: 'a temporary folder, removed at stop' },
    { name: 'heap', value: 'MB', help: 'broker JVM heap in MiB (128..8192)' },
  ],
};

function startOptions(argv: string[]): { port: number | undefined; heapMb: number | undefined; dir: string | undefined } {
  try {
    const args = parseCommand(argv, KAFKA_START_SPEC);
    noPositionals(args);
    return {
      port: numberOption(args, 'port', { min: 1, max: 65535, integer: true }),
      heapMb: numberOption(args, 'heap', { min: 128, max: 8192, integer: true }),
      dir: args.get('dir'),
    };
  } catch (e) {
    // Value errors point to this sub-command's help, not the group's.
    throw e instanceof UsageError && e.command === undefined ? new UsageError(e.message, KAFKA_START_SPEC.command) : e;
  }
}

async function start(argv: string[]): Promise<number> {
  const { port, heapMb, dir } = startOptions(argv);
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
  const [sub, rest] = subcommand(argv, { command: 'meridian kafka', names: ['jars', 'start'] as const, help: KAFKA_HELP });
  switch (sub) {
    case 'jars': {
      const args = parseCommand(rest, KAFKA_JARS_SPEC);
      if (args.positional.length > 0) throw new UsageError(`unexpected argument "${args.positional[0]}"`, KAFKA_JARS_SPEC.command);
      process.stdout.write(`${await ensureKafkaJars()}\n`);
      return 0;
    }
    case 'start':
      return start(rest);
  }
}
