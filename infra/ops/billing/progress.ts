import type { BillingJob } from './job';

// Progress of a billing job on a terminal: events/s and lag, rewritten in place on a TTY, a line every
// `everyMs` otherwise (so a log collector still gets it).

export interface Progress {
  stop(): void;
}

export function showProgress(job: BillingJob, out: NodeJS.WriteStream, everyMs = 1_000): Progress {
  let last = job.stats().counted;
  let lastAt = performance.now();
  let busy = false;
  const tick = async (): Promise<void> => {
    if (busy) return;
    busy = true;
    try {
      const s = job.stats();
      const now = performance.now();
      const rate = ((s.counted - last) * 1000) / Math.max(1, now - lastAt);
      last = s.counted;
      lastAt = now;
      const lag = await job.lag().catch(() => NaN);
      const line = `billing: ${s.counted.toLocaleString('en-US')} events counted (${Math.round(rate).toLocaleString('en-US')}/s), lag ${Number.isNaN(lag) ? '?' : lag.toLocaleString('en-US')}, ${s.duplicates} duplicates skipped, ${s.invalid} invalid`;
      out.write(out.isTTY ? `\r\x1b[2K${line}` : `${line}\n`);
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void tick(), everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      if (out.isTTY) out.write('\n');
    },
  };
}
