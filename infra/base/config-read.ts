import { splitHostPort } from './host-port';

// Small validators for config sections. Each reports the full path of the offending field, so an operator
// sees "fanout.port: expected an integer in 0..65535, got "abc"" instead of a stack trace.

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export type Raw = Record<string, unknown>;

export function section(raw: unknown, path: string): Raw {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError(`${path}: expected an object`);
  return raw as Raw;
}

function show(v: unknown): string {
  return JSON.stringify(v) ?? String(v);
}

/** Environment overrides arrive as strings; coerce "12"→12, "true"→true where a number/boolean is expected. */
export function int(o: Raw, key: string, path: string, dflt: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  let v = o[key];
  if (v === undefined) return dflt;
  if (typeof v === 'string' && /^-?\d+$/.test(v.trim())) v = Number(v);
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new ConfigError(`${path}.${key}: expected an integer in ${min}..${max}, got ${show(v)}`);
  }
  return v;
}

export function num(o: Raw, key: string, path: string, dflt: number, min = 0): number {
  let v = o[key];
  if (v === undefined) return dflt;
  if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))) v = Number(v);
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min) throw new ConfigError(`${path}.${key}: expected a number ≥ ${min}, got ${show(v)}`);
  return v;
}

export function bool(o: Raw, key: string, path: string, dflt: boolean): boolean {
  let v = o[key];
  if (v === undefined) return dflt;
  if (v === 'true' || v === '1') v = true;
  if (v === 'false' || v === '0') v = false;
  if (typeof v !== 'boolean') throw new ConfigError(`${path}.${key}: expected true or false, got ${show(v)}`);
  return v;
}

export function str(o: Raw, key: string, path: string, dflt: string): string {
  const v = o[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'string') throw new ConfigError(`${path}.${key}: expected a string, got ${show(v)}`);
  return v;
}

export function optStr(o: Raw, key: string, path: string): string | undefined {
  const v = o[key];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new ConfigError(`${path}.${key}: expected a string, got ${show(v)}`);
  return v;
}

export function oneOf<T extends string>(o: Raw, key: string, path: string, allowed: readonly T[], dflt: T): T {
  const v = o[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    throw new ConfigError(`${path}.${key}: expected one of ${allowed.join(', ')}, got ${show(v)}`);
  }
  return v as T;
}

export function strList(o: Raw, key: string, path: string, dflt: string[]): string[] {
  let v = o[key];
  if (v === undefined) return dflt;
  if (typeof v === 'string') v = v.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new ConfigError(`${path}.${key}: expected a list of strings`);
  return v as string[];
}

/** "host:port" → parts; port 0 means "pick a free one". */
export function hostPort(o: Raw, key: string, path: string, dflt: string): { host: string; port: number } {
  const v = str(o, key, path, dflt);
  const hp = splitHostPort(v, '0.0.0.0');
  if (hp === null) throw new ConfigError(`${path}.${key}: expected HOST:PORT, got ${show(v)}`);
  return hp;
}

// Listen failures name the config key to change; components wrap theirs with asListenError (see listen-error.ts).
export { asListenError, describeListenError, ListenError } from './listen-error';
