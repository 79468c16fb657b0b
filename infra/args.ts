// A small argv parser: --flag value, --flag=value, repeated flags collect, booleans by declaration.

export interface ArgSpec {
  /** Flags that take no value. */
  booleans?: string[];
  /** Flags that may repeat; their values collect into arrays. */
  multi?: string[];
}

export interface ParsedArgs {
  positional: string[];
  flags: Map<string, string[]>;
  has(name: string): boolean;
  get(name: string): string | undefined;
  all(name: string): string[];
}

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export function parseArgs(argv: string[], spec: ArgSpec = {}): ParsedArgs {
  const booleans = new Set(spec.booleans ?? []);
  const multi = new Set(spec.multi ?? []);
  const positional: string[] = [];
  const flags = new Map<string, string[]>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (!a.startsWith('--')) {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq === -1 ? a.slice(2) : a.slice(2, eq);
    let value: string;
    if (booleans.has(name)) {
      value = eq === -1 ? 'true' : a.slice(eq + 1);
    } else if (eq !== -1) {
      value = a.slice(eq + 1);
    } else {
      const next = argv[i + 1];
      if (next === undefined) throw new UsageError(`--${name} needs a value`);
      value = next;
      i++;
    }
    const list = flags.get(name) ?? [];
    if (list.length > 0 && !multi.has(name)) throw new UsageError(`--${name} given twice`);
    list.push(value);
    flags.set(name, list);
  }
  return {
    positional,
    flags,
    has: (n) => flags.has(n),
    get: (n) => flags.get(n)?.[0],
    all: (n) => flags.get(n) ?? [],
  };
}

/** Rejects flags a command does not know, so typos fail loudly. */
export function expectOnly(args: ParsedArgs, known: string[]): void {
  for (const k of args.flags.keys()) if (!known.includes(k)) throw new UsageError(`unknown option --${k}`);
}
