#!/usr/bin/env node
import { HelpRequested, UsageError, groupHelpText } from './base/args';
import { ConfigError } from './base/config-read';
import { ListenError, describeListenError } from './base/listen-error';
import { OperatorError } from './base/operator-error';

// `meridian <command> ...`. Each command is a module exporting `run(argv) → exit code`, loaded on demand so
// `meridian decode` does not pay for gRPC and Kafka clients. Commands declare their options (infra/base/args.ts
// CommandSpec) and parse with parseCommand; this dispatcher turns what they throw into one line and an exit code:
//   help → stdout, 0 · UsageError → stderr with a hint to --help, 2 · ConfigError → stderr, 2 · a socket that cannot
//   listen, a file that cannot be opened, an OperatorError (a component this machine cannot run, nothing answering) → stderr, 1 ·
//   anything else is a bug → stack trace, 1.

interface Command {
  summary: string;
  load: () => Promise<{ run: (argv: string[]) => Promise<number> }>;
}

const COMMANDS: Record<string, Command> = {
  start: { summary: 'run every component on this machine', load: async () => import('./commands/start') },
  decode: { summary: 'decode a shred capture (pcap, ar, u64lp) to JSON lines', load: async () => import('../ingest/cli/decode') },
  replay: { summary: "send a capture's packets as UDP datagrams", load: async () => import('../ingest/cli/replay') },
  record: { summary: 'record received UDP datagrams to a capture file', load: async () => import('../ingest/cli/record') },
  subscribe: { summary: 'print a transaction stream (v1; --v2 for stream v2)', load: async () => import('../fanout/cli/subscribe') },
  rentals: { summary: 'write and read rentals, events on the rentals topic (put | get | list | delete)', load: async () => import('./commands/rentals') },
  billing: { summary: 'billing jobs on usage.events (run | report)', load: async () => import('./commands/billing') },
  topics: { summary: 'record topics to a file and replay them into a broker (record | replay)', load: async () => import('./commands/topics') },
  status: { summary: 'ask a running instance how it is doing: one line per component, exit 1 when something is down', load: async () => import('./commands/status') },
  kafka: { summary: 'a local Kafka broker (jars | start)', load: async () => import('./local/kafka/cli') },
};

function usage(): string {
  return groupHelpText({
    command: 'meridian',
    summary: 'Rented-node access service for Solana and two EVM chains: shred ingest, the v1 and v2 transaction streams, the chain JSON-RPC gateway, transaction submission, EVM endpoints, and their tools.',
    commands: Object.entries(COMMANDS).map(([name, c]) => ({ name, summary: c.summary })),
  });
}

/** Errors from opening files and sockets, and components this machine cannot run, that a user fixes by changing an argument or a setting: no stack trace. */
function operatorError(e: unknown): string | null {
  if (e instanceof ListenError || e instanceof OperatorError) return e.message;
  // A recording file that is not whole (bus/recording.ts): its message says where; no stack trace.
  if (e instanceof Error && e.name === 'RecordingError') return e.message;
  const listen = describeListenError(e);
  if (listen !== null) return listen;
  if (typeof e === 'object' && e !== null && 'code' in e && 'syscall' in e && 'path' in e) {
    const x = e as { code: unknown; syscall: unknown; path: unknown; message: string };
    if (typeof x.code === 'string' && typeof x.path === 'string') return `${x.path}: ${x.code === 'ENOENT' ? 'no such file or folder' : x.code === 'EACCES' ? 'permission denied' : x.message} (${x.code})`;
  }
  return null;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    process.stderr.write(usage());
    return 2;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return 0;
  }
  const cmd = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (cmd === undefined) {
    const what = name.startsWith('-') ? `unknown option ${name}` : `unknown command "${name}"`;
    process.stderr.write(`meridian: ${what}\n(see "meridian --help")\n`);
    return 2;
  }
  try {
    return await (await cmd.load()).run(rest);
  } catch (e) {
    if (e instanceof HelpRequested) {
      process.stdout.write(e.text);
      return 0;
    }
    if (e instanceof UsageError) {
      process.stderr.write(`meridian ${name}: ${e.message}\n(see "${e.command ?? `meridian ${name}`} --help")\n`);
      return 2;
    }
    if (e instanceof ConfigError) {
      process.stderr.write(`meridian ${name}: ${e.message}\n`);
      return 2;
    }
    const line = operatorError(e);
    if (line !== null) {
      process.stderr.write(`meridian ${name}: ${line}\n`);
      return 1;
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
