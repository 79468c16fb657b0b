// A socket that cannot listen (port taken, no permission, address not on this machine) is an operator's
// setting to change, not a crash: one line that names the address and the config key or flag that sets it.
//
// Components and the launcher wrap their listen/bind failures: `throw asListenError(err, 'fanout.listen')`
// (a config key) or `asListenError(err, '--listen')` (a CLI flag). The CLI prints a ListenError's message
// without a stack trace and exits 1; describeListenError also names unwrapped ones.

const WHY: Record<string, string> = {
  EADDRINUSE: 'address already in use',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'address not available on this machine',
  ENOTFOUND: 'host name does not resolve',
  EAI_AGAIN: 'host name does not resolve (temporary DNS failure)',
  EINVAL: 'invalid address',
};

interface ErrnoLike {
  code?: unknown;
  syscall?: unknown;
  address?: unknown;
  port?: unknown;
  hostname?: unknown;
}

/** grpc-js reports a failed bind as one Error whose message carries the listen error: "... [listen EADDRINUSE: ... 127.0.0.1:20202]". */
const GRPC_BIND = /listen (E[A-Z]+):[^\]]*? (\[?[0-9A-Za-z.:-]*?\]?):(\d+)\]?$/;

function errno(err: unknown): ErrnoLike | null {
  if (typeof err !== 'object' || err === null) return null;
  const e = err as ErrnoLike & { message?: unknown };
  if (typeof e.code !== 'string' && typeof e.message === 'string' && e.message.startsWith('No address added')) {
    const m = GRPC_BIND.exec(e.message);
    if (m !== null) return { code: m[1], syscall: 'listen', address: m[2]!.replace(/^\[(.*)\]$/, '$1'), port: Number(m[3]) };
  }
  return e;
}

/** True for the errors of listen() or bind() (TCP and UDP) that a different setting fixes. */
export function isListenError(err: unknown): boolean {
  const e = errno(err);
  if (e === null || typeof e.code !== 'string') return false;
  return (e.syscall === 'listen' || e.syscall === 'bind' || e.syscall === 'getaddrinfo') && Object.hasOwn(WHY, e.code);
}

/** MERIDIAN__SECTION__KEY for a config key 'section.key'. */
function envName(key: string): string {
  return `MERIDIAN__${key.split('.').map((p) => p.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase()).join('__')}`;
}

/**
 * One line for a listen failure: what could not listen where, why, and what to change. `key` is a config
 * key ('ingest.listen') or a flag ('--listen'); without one the line says to change the listen address.
 * null when `err` is not a listen failure.
 */
export function describeListenError(err: unknown, key?: string): string | null {
  if (!isListenError(err)) return null;
  const e = errno(err)!;
  const code = e.code as string;
  const host = typeof e.address === 'string' ? e.address : typeof e.hostname === 'string' ? e.hostname : null;
  const where = host === null ? 'the configured address' : `${host.includes(':') ? `[${host}]` : host}${typeof e.port === 'number' ? `:${e.port}` : ''}`;
  const what = key === undefined ? '' : ` (${key})`;
  const fix = key === undefined
    ? 'change the listen address in the config (the *.listen keys) or free the port'
    : key.startsWith('-')
      ? `choose another ${key}`
      : `set ${key} in the config file or ${envName(key)} to a free address`;
  return `cannot listen on ${where}${what}: ${WHY[code]} (${code}); ${fix}`;
}

export class ListenError extends Error {
  constructor(
    message: string,
    readonly key: string | undefined,
    readonly code: string,
  ) {
    super(message);
    this.name = 'ListenError';
  }
}

/** Wraps a listen failure as a ListenError naming `key`; anything else comes back unchanged. */
export function asListenError(err: unknown, key?: string): unknown {
  if (err instanceof ListenError) return err;
  const message = describeListenError(err, key);
  return message === null ? err : new ListenError(message, key, errno(err)!.code as string);
}
