#!/usr/bin/env node
import { UsageError } from './args';
import { ConfigError } from './config-read';

// `meridian <command> ...`. Each command is a module exporting `run(argv) → exit code`, loaded on demand so
// `meridian decode` does not pay for gRPC and Kafka clients.

interface Command {
  summary: string;
  load: () => Promise<{ run: (argv: string[]) => Promise<number> }>;
}

const COMMANDS: Record<string, Command> = {
  start: { summary: 'run every component on this machine  [--config FILE] [--endpoints FILE]', load: async () => import('./commands/start') },
  decode: { summary: 'decode a shred capture to JSON lines  <capture> [--format pcap|ar|u64lp] [--shred-version N] [--leader KEY]', load: async () => import('../ingest/cli/decode') },
  replay: { summary: "send a capture's packets as UDP  <capture> --to HOST:PORT [--rate PPS] [--loop N]", load: async () => import('../ingest/cli/replay') },
  record: { summary: 'record received packets to a capture  --listen HOST:PORT --out FILE', load: async () => import('../ingest/cli/record') },
  subscribe: { summary: 'print a v1 stream  [--include K ...] [--exclude K ...] [--required K ...] [--slots] [--url HOST:PORT]', load: async () => import('../fanout/cli/subscribe') },
  rentals: { summary: 'write and read rentals (events on the rentals topic)  put|get|list|delete', load: async () => import('./commands/rentals') },
  billing: { summary: 'billing jobs on usage.events  run --group NAME --out DIR | report --out DIR', load: async () => import('./commands/billing') },
  kafka: { summary: 'local Kafka broker  jars | start [--port N] [--dir DIR]', load: async () => import('./kafka/cli') },
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`);
  return `usage: meridian <command> [options]\n\ncommands:\n${lines.join('\n')}\n`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return name === undefined ? 2 : 0;
  }
  const cmd = COMMANDS[name];
  if (cmd === undefined) {
    process.stderr.write(`meridian: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  try {
    return await (await cmd.load()).run(rest);
  } catch (e) {
    if (e instanceof UsageError || e instanceof ConfigError) {
      process.stderr.write(`meridian ${name}: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`meridian: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = 1;
  },
);
