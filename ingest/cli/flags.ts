import fs from 'node:fs';
import { choiceOption, positionals, type OptionSpec, type ParsedArgs } from '../../infra/base/args';
import { CAPTURE_FORMATS, CaptureError, NotACaptureError, readCapture, type Capture, type CaptureFormat } from '../capture';

// Option declarations and values shared by the ingest commands (decode, replay, record).

export function formatOptionSpec(formats: readonly CaptureFormat[], help: string): OptionSpec {
  return { name: 'format', value: formats.join('|'), help };
}

export function formatFlag<F extends CaptureFormat>(args: ParsedArgs, allowed: readonly F[] = CAPTURE_FORMATS as readonly F[]): F | undefined {
  return choiceOption(args, 'format', allowed);
}

export function onePositional(args: ParsedArgs, what: string): string {
  return positionals(args, what, 1)[0]!;
}

/**
 * Reads a capture file; an unreadable, malformed or unrecognised file is reported on stderr (one line) and
 * gives null (exit 1). An empty capture is a warning on stderr: the caller goes on and reports zeros.
 */
export function loadCapture(command: string, file: string, format: CaptureFormat | undefined): Capture | null {
  let capture: Capture;
  try {
    capture = readCapture(fs.readFileSync(file), format);
  } catch (e) {
    if (e instanceof NotACaptureError) {
      process.stderr.write(`meridian ${command}: ${file}: ${e.message}; if it is one, name its format with --format ${CAPTURE_FORMATS.join('|')}\n`);
      return null;
    }
    if (!(e instanceof CaptureError) && !(e instanceof Error && 'code' in e)) throw e;
    const hint = e instanceof CaptureError && format !== undefined ? ` (read as ${format} because of --format)` : '';
    process.stderr.write(`meridian ${command}: ${file}: ${e.message}${hint}\n`);
    return null;
  }
  if (capture.packets.length === 0) {
    process.stderr.write(`meridian ${command}: warning: ${file} holds no packets (an empty ${capture.format} capture)\n`);
  }
  return capture;
}
