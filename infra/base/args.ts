import fs from 'node:fs';
import path from 'node:path';
import { splitHostPort } from './host-port';

// The one argv parser of every `meridian` command. A command declares its options (CommandSpec: name, value
// placeholder, help text); parsing and the help text both come from that declaration, so help cannot forget
// an option and every command reports a bad argument with the same words:
//   - `-h` / `--help` anywhere before `--`: HelpRequested (the dispatcher prints the help, exit 0);
//   - an option the command does not declare: `unknown option --X` (exit 2, with a hint to --help);
//   - a declared option that takes a value and has none: `--X needs a value`;
//   - a single-valued option given twice: `--X given twice`.
// Values come as `--name value` or `--name=value`; switches take no value (`--json`, or `--json=false`).

export interface OptionSpec {
  /** Long name without the dashes. */
  name: string;
  /** Placeholder of the value in help ('FILE', 'HOST:PORT', 'pcap|ar|u64lp'); absent = a switch without a value. */
  value?: string;
  /** May be given more than once; the values collect in order. */
  multi?: boolean;
  help: string;
  /** Shown in help as "(default: …)". */
  default?: string;
}

export interface CommandSpec {
  /** As typed: 'meridian decode', 'meridian kafka start'. */
  command: string;
  /** Positional part of the usage line, e.g. '<capture>'. */
  args?: string;
  /** One sentence: what the command does. */
  summary: string;
  options: readonly OptionSpec[];
  /** Paragraphs printed after the options (examples, exit codes). */
  notes?: string;
}

export interface ParsedArgs {
  /** The command these were parsed for ('meridian rentals get'): its --help is where a usage error points. */
  command?: string;
  positional: string[];
  flags: Map<string, string[]>;
  has(name: string): boolean;
  get(name: string): string | undefined;
  all(name: string): string[];
  /** A switch: given and not `=false`. */
  bool(name: string): boolean;
}

export class UsageError extends Error {
  constructor(
    message: string,
    /** The command whose --help the hint points to (set by the parser; the dispatcher falls back to its own). */
    readonly command?: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Thrown by parseCommand for -h/--help: not a failure. The dispatcher prints `text` on stdout and exits 0. */
export class HelpRequested extends Error {
  constructor(readonly text: string) {
    super('help requested');
    this.name = 'HelpRequested';
  }
}

const HELP_OPTION: OptionSpec = { name: 'help', help: 'show this help and exit' };

function isHelp(a: string): boolean {
  return a === '-h' || a === '--help';
}

/** The help text of a command, generated from its spec. */
export function helpText(spec: CommandSpec): string {
  const rows = [...spec.options, HELP_OPTION].map((o) => {
    const flag = `${o.name === 'help' ? '-h, ' : ''}--${o.name}${o.value === undefined ? '' : ` ${o.value}`}${o.multi === true ? ' ...' : ''}`;
    const text = `${o.help}${o.default === undefined ? '' : ` (default: ${o.default})`}`;
    return [flag, text] as const;
  });
  const width = Math.min(32, Math.max(...rows.map(([f]) => f.length)) + 2);
  const lines = rows.map(([f, t]) => (f.length + 2 > width ? `  ${f}\n  ${' '.repeat(width)}${t}` : `  ${f.padEnd(width)}${t}`));
  const usage = `usage: ${spec.command}${spec.args === undefined ? '' : ` ${spec.args}`} [options]`;
  return `${usage}\n\n${spec.summary}\n\noptions:\n${lines.join('\n')}\n${spec.notes === undefined ? '' : `\n${spec.notes.trimEnd()}\n`}`;
}

export interface CommandGroupSpec {
  /** As typed: 'meridian', 'meridian kafka'. */
  command: string;
  summary: string;
  commands: ReadonlyArray<{ name: string; summary: string }>;
}

/** The help of a command that only dispatches to sub-commands (`meridian`, `meridian kafka`). */
export function groupHelpText(spec: CommandGroupSpec): string {
  const width = Math.max(...spec.commands.map((c) => c.name.length)) + 2;
  return [
    `usage: ${spec.command} <command> [options]`,
    '',
    spec.summary,
    '',
    'commands:',
    ...spec.commands.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    '',
    'options:',
    '  -h, --help  show this help and exit',
    '',
    `"${spec.command} <command> --help" shows a command's own options.`,
    '',
  ].join('\n');
}

/** Parses argv against a command's declared options. Throws HelpRequested or UsageError. */
export function parseCommand(argv: readonly string[], spec: CommandSpec): ParsedArgs {
  const end = argv.indexOf('--');
  if ((end === -1 ? argv : argv.slice(0, end)).some(isHelp)) throw new HelpRequested(helpText(spec));
  const byName = new Map(spec.options.map((o) => [o.name, o]));
  const fail = (message: string): UsageError => new UsageError(message, spec.command);
  const positional: string[] = [];
  const flags = new Map<string, string[]>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (!a.startsWith('-') || a === '-') {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const written = eq === -1 ? a : a.slice(0, eq);
    const opt = written.startsWith('--') ? byName.get(written.slice(2)) : undefined;
    if (opt === undefined) throw fail(`unknown option ${written}`);
    let value: string;
    if (opt.value === undefined) {
      value = eq === -1 ? 'true' : a.slice(eq + 1);
    } else if (eq !== -1) {
      value = a.slice(eq + 1);
    } else {
      const next = argv[i + 1];
      // A value that looks like an option is taken as a missing value (write --name=--odd to pass one).
      if (next === undefined || (next.startsWith('--') && next.length > 2)) throw fail(`--${opt.name} needs a value (${opt.value})`);
      value = next;
      i++;
    }
    const list = flags.get(opt.name) ?? [];
    if (list.length > 0 && opt.multi !== true) throw fail(`--${opt.name} given twice`);
    list.push(value);
    flags.set(opt.name, list);
  }
  return {
    command: spec.command,
    positional,
    flags,
    has: (n) => flags.has(n),
    get: (n) => flags.get(n)?.[0],
    all: (n) => flags.get(n) ?? [],
    bool: (n) => flags.has(n) && flags.get(n)![0] !== 'false',
  };
}

/** Exactly `count` positionals (named `what` in the message). */
export function positionals(args: ParsedArgs, what: string, count = 1): string[] {
  if (args.positional.length !== count) {
    throw new UsageError(args.positional.length > count ? `unexpected argument "${args.positional[count]}"` : `expected ${count === 1 ? `one ${what}` : `${count} ${what}s`}, got ${args.positional.length}`, args.command);
  }
  return args.positional;
}

export function noPositionals(args: ParsedArgs): void {
  positionals(args, 'argument', 0);
}

/** A number option, checked against its range. */
export function numberOption(args: ParsedArgs, name: string, opts: { min: number; max?: number; integer?: boolean }): number | undefined {
  const v = args.get(name);
  if (v === undefined) return undefined;
  const n = Number(v);
  const max = opts.max ?? Number.MAX_SAFE_INTEGER;
  if (v.trim() === '' || !Number.isFinite(n) || n < opts.min || n > max || (opts.integer === true && !Number.isInteger(n))) {
    throw new UsageError(`--${name}: expected ${opts.integer === true ? 'an integer' : 'a number'} in ${opts.min}..${max}, got "${v}"`);
  }
  return n;
}

/** A required HOST:PORT option (a host without a port is refused; an empty host means 127.0.0.1). */
export function hostPortOption(args: ParsedArgs, name: string): { host: string; port: number } {
  const v = args.get(name);
  if (v === undefined) throw new UsageError(`--${name} HOST:PORT is required`);
  const hp = splitHostPort(v, '127.0.0.1');
  if (hp === null) throw new UsageError(`--${name}: expected HOST:PORT, got "${v}"`);
  return hp;
}

/** One of a fixed set of words. */
export function choiceOption<C extends string>(args: ParsedArgs, name: string, choices: readonly C[]): C | undefined {
  const v = args.get(name);
  if (v === undefined) return undefined;
  if (!(choices as readonly string[]).includes(v)) throw new UsageError(`--${name}: expected one of ${choices.join('|')}, got "${v}"`);
  return v as C;
}

/**
 * A file the command will write: its folder must exist now, so the run does not fail at the end (or after
 * starting servers) with a raw ENOENT.
 */
export function outputFileOption(args: ParsedArgs, name: string): string | undefined {
  const v = args.get(name);
  if (v === undefined) return undefined;
  if (v === '') throw new UsageError(`--${name}: expected a file path, got ""`);
  const dir = path.dirname(path.resolve(v));
  let st: fs.Stats;
  try {
    st = fs.statSync(dir);
  } catch {
    throw new UsageError(`--${name} ${v}: folder ${dir} does not exist; create it or choose another --${name}`);
  }
  if (!st.isDirectory()) throw new UsageError(`--${name} ${v}: ${dir} is not a folder; choose another --${name}`);
  if (fs.existsSync(v) && fs.statSync(v).isDirectory()) throw new UsageError(`--${name} ${v}: is a folder; name a file`);
  return v;
}

/**
 * The sub-command of a command group (`meridian kafka start`, `meridian rentals put`): help for -h/--help/help,
 * one message for a missing or unknown sub-command. Returns the name and the arguments after it.
 */
export function subcommand<K extends string>(argv: readonly string[], group: { command: string; names: readonly K[]; help: string }): [K, string[]] {
  const [sub, ...rest] = argv;
  if (sub === '-h' || sub === '--help' || sub === 'help') throw new HelpRequested(group.help);
  if (sub !== undefined && (group.names as readonly string[]).includes(sub)) return [sub as K, rest];
  const list = group.names.join(', ');
  const what = sub === undefined ? `expected a command: ${list}` : sub.startsWith('-') ? `unknown option ${sub}` : `unknown ${group.command.split(' ').pop()!} command "${sub}" (${list})`;
  throw new UsageError(what, group.command);
}
