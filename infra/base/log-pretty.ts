import { Writable } from 'node:stream';

// Human-readable log lines for a terminal: `12:00:01.234 INFO  [fanout] listening address=127.0.0.1:20202`.
// The logger still produces its JSON line (scrubbed like every line); this only re-renders it, so what a person
// reads on a TTY and what a collector reads from a pipe hold the same fields. pino 10 has no built-in pretty
// printer (it moved to the separate pino-pretty package, a transport with its own dependencies); the few lines
// here are all a start banner's neighbours need.

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** Fields every line has, shown in the line's head instead of as key=value. */
const HEAD = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'component']);

function value(v: unknown): string {
  if (typeof v === 'string') return /[\s"=]/.test(v) || v === '' ? JSON.stringify(v) : v;
  return JSON.stringify(v) ?? String(v);
}

/** One JSON log line → one human line (a line that is not JSON passes unchanged). */
export function prettyLine(json: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  if (typeof o !== 'object' || o === null) return json;
  const t = typeof o.time === 'number' ? new Date(o.time).toISOString().slice(11, 23) : '';
  const level = (LEVELS[o.level as number] ?? String(o.level)).padEnd(5);
  const component = typeof o.component === 'string' ? ` [${o.component}]` : '';
  const rest = Object.entries(o).filter(([k]) => !HEAD.has(k)).map(([k, v]) => `${k}=${value(v)}`);
  return `${t} ${level}${component} ${typeof o.msg === 'string' ? o.msg : ''}${rest.length > 0 ? ' ' + rest.join(' ') : ''}`;
}

/** A destination that renders each JSON line for people and writes it to `out`. */
export function prettyDestination(out: NodeJS.WritableStream): Writable {
  let partial = '';
  return new Writable({
    write(chunk: Buffer | string, _enc, done) {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop()!;
      out.write(lines.map((l) => prettyLine(l) + '\n').join(''));
      done();
    },
    final(done) {
      if (partial !== '') out.write(prettyLine(partial) + '\n');
      done();
    },
  });
}
