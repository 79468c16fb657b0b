import pino, { type Logger } from 'pino';
import { prettyDestination } from './log-pretty';

// The contract's logging rule, enforced here and only here: a stored URL carries the key, and on dedicated
// endpoints the path is the credential, so no URL, API key, token or dedicated path may reach a log line.
// Every string that passes through a logger (message, fields, nested fields, child bindings) is scrubbed:
//   - anything shaped like a URL (scheme://...) becomes "[url]"
//   - UUIDs (the API-key format) become "[key]"
//   - secrets registered at runtime (tokens, dedicated paths, keys of other shapes) become "[secret]"
//   - fields whose name says they hold a credential or an endpoint are replaced wholesale

const URL_RE = /\b[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^\s"'<>]+/g;
const UUID_RE = /\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b/g;
const SECRET_FIELD_RE = /^(url|uri|endpoint|href|token|x-token|apikey|api[-_]key|key|secret|password|authorization|path|dedicatedpath|brokers?)$/i;

const secrets = new Set<string>();
let secretRe: RegExp | null = null;

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** Registers credentials that do not look like URLs or UUIDs (tokens, dedicated paths). Longest first wins. */
export function registerSecret(...values: string[]): void {
  let changed = false;
  for (const v of values) {
    if (v.length >= 4 && !secrets.has(v)) {
      secrets.add(v);
      changed = true;
    }
  }
  if (changed) secretRe = new RegExp([...secrets].sort((a, b) => b.length - a.length).map(escapeRe).join('|'), 'g');
}

export function scrubString(s: string): string {
  let out = s.replace(URL_RE, '[url]').replace(UUID_RE, '[key]');
  if (secretRe !== null) out = out.replace(secretRe, '[secret]');
  return out;
}

export function scrub(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return scrubString(value);
  if (value === null || typeof value !== 'object' || depth > 6) return value;
  if (value instanceof Error) {
    return { type: value.name, message: scrubString(value.message), stack: value.stack === undefined ? undefined : scrubString(value.stack) };
  }
  if (Array.isArray(value)) return value.map((v) => scrub(v, depth + 1));
  if (Buffer.isBuffer(value)) return `<${value.length} bytes>`;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = SECRET_FIELD_RE.test(k) && v !== undefined && v !== null ? '[redacted]' : scrub(v, depth + 1);
  }
  return out;
}

export type Log = Logger;

export interface LogOptions {
  level?: string;
  /** Where lines go; defaults to stdout. Tests pass a stream to read lines back. */
  destination?: NodeJS.WritableStream;
  name?: string;
  /** json: one JSON line per entry; pretty: human lines (log-pretty.ts); auto (default): pretty when the destination is a terminal. */
  format?: LogFormat;
}

export type LogFormat = 'auto' | 'json' | 'pretty';

function destinationFor(opts: LogOptions): NodeJS.WritableStream {
  const out = opts.destination ?? process.stdout;
  const tty = (out as { isTTY?: boolean }).isTTY === true;
  const format = opts.format ?? 'json';
  return format === 'pretty' || (format === 'auto' && tty) ? prettyDestination(out) : out;
}

/** Child bindings are serialized when the child is made, past formatters.log: scrub them there, for every descendant. */
function guardChildren(l: Log): Log {
  const child = l.child.bind(l);
  const guarded = (bindings: pino.Bindings, options?: pino.ChildLoggerOptions): Log => guardChildren(child(scrub(bindings) as pino.Bindings, options));
  l.child = guarded as unknown as Log['child'];
  return l;
}

export function createLogger(opts: LogOptions = {}): Log {
  return guardChildren(pino(
    {
      name: opts.name ?? 'meridian',
      level: opts.level ?? process.env.LOG_LEVEL ?? 'info',
      formatters: {
        log: (obj) => scrub(obj) as Record<string, unknown>,
        bindings: (b) => scrub(b) as Record<string, unknown>,
      },
      hooks: {
        logMethod(args, method) {
          // pino's message and its printf-style arguments bypass formatters.log; scrub them here.
          const clean = args.map((a) => scrub(a)) as Parameters<typeof method>;
          return method.apply(this, clean);
        },
      },
      serializers: { err: (e: unknown) => scrub(e) },
    },
    destinationFor(opts) as pino.DestinationStream,
  ));
}

let root: Log | null = null;

/** The process-wide logger; components take children of it (`rootLogger().child({ component })`). */
export function rootLogger(): Log {
  if (root === null) root = createLogger();
  return root;
}

export function setRootLogger(l: Log): void {
  root = l;
}
