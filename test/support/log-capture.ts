import { Writable } from 'node:stream';
import { createLogger, type Log } from '../../infra/base/log';

/** A logger whose JSON lines are kept for assertions instead of reaching the console. */
export function quietLog(level = 'info'): { log: Log; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(...chunk.toString('utf8').split('\n').filter((l) => l.length > 0));
      cb();
    },
  });
  return { log: createLogger({ destination, level }), lines };
}
