import fs from 'node:fs';
import { UsageError, type ParsedArgs } from '../../infra/args';
import { splitHostPort } from '../../infra/host-port';
import { CAPTURE_FORMATS, CaptureError, readCapture, type Capture, type CaptureFormat } from '../capture';

// Flag values shared by the ingest commands, each failing with a UsageError that names the flag.

export function hostPortFlag(args: ParsedArgs, name: string): { host: string; port: number } {
  const v = args.get(name);
  if (v === undefined) throw new UsageError(`--${name} HOST:PORT is required`);
  const hp = splitHostPort(v, '127.0.0.1');
  if (hp === null) throw new UsageError(`--${name}: expected HOST:PORT, got "${v}"`);
  return hp;
}

export function numberFlag(args: ParsedArgs, name: string, opts: { min: number; max?: number; integer?: boolean }): number | undefined {
  const v = args.get(name);
  if (v === undefined) return undefined;
  const n = Number(v);
  const max = opts.max ?? Number.MAX_SAFE_INTEGER;
  if (v.trim() === '' || !Number.isFinite(n) || n < opts.min || n > max || (opts.integer === true && !Number.isInteger(n))) {
    throw new UsageError(`--${name}: expected ${opts.integer === true ? 'an integer' : 'a number'} in ${opts.min}..${max}, got "${v}"`);
  }
  return n;
}

export function formatFlag<F extends CaptureFormat>(args: ParsedArgs, allowed: readonly F[] = CAPTURE_FORMATS as readonly F[]): F | undefined {
  const v = args.get('format');
  if (v === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(v)) throw new UsageError(`--format: expected one of ${allowed.join('|')}, got "${v}"`);
  return v as F;
}

export function onePositional(args: ParsedArgs, what: string): string {
  if (args.positional.length !== 1) throw new UsageError(`expected one ${what}, got ${args.positional.length}`);
  return args.positional[0]!;
}

/** Reads a capture file; an unreadable or malformed file is reported on stderr and gives null (exit 1). */
export function loadCapture(command: string, file: string, format: CaptureFormat | undefined): Capture | null {
  try {
    return readCapture(fs.readFileSync(file), format);
  } catch (e) {
    if (!(e instanceof CaptureError) && !(e instanceof Error && 'code' in e)) throw e;
    process.stderr.write(`meridian ${command}: ${file}: ${e.message}\n`);
    return null;
  }
}
