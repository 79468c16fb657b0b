// How long a v2 cursor lives on the one-machine service's embedded bus: the demo's record rate on each stream topic,
// measured from outside (two heartbeat cursors of a v2 stream, their offsets subtracted), against what bus/config.ts
// and bus/topics.ts retain. Not part of `npm run bench` (a rate, not a speed): run it on its own,
//   npx ts-node --transpile-only test/bench/cursor-lifetime.ts [seconds, default 60]
// The README's "How long a cursor lives" table and test/bench/RUNS.md quote it.
import { parseConfig } from '../../infra/config';
import { launch } from '../../infra/launcher';
import { createLogger } from '../../infra/base/log';
import { Writable } from 'node:stream';
import { decodeCursor, TopicTag, type Position } from '../../fanout/v2/cursor';
import { V2Client } from '../fanout/v2/client';
import { waitFor } from '../support/wait';

const NAMES: Record<TopicTag, string> = { [TopicTag.transactions]: 'stream.transactions', [TopicTag.slots]: 'stream.slots', [TopicTag.slotStatus]: 'stream.slot-status', [TopicTag.entries]: 'stream.entries' };
/** bus/config.ts EMBEDDED_LIMITS_DEFAULTS (messages per partition) and bus/topics.ts (1 h on each stream topic). */
const KEPT: Record<TopicTag, number> = { [TopicTag.transactions]: 50_000, [TopicTag.slots]: 10_000, [TopicTag.slotStatus]: 70_000, [TopicTag.entries]: 50_000 };
const RETENTION_MS = 3_600_000;

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 60);
  const log = createLogger({ level: 'error', destination: new Writable({ write: (_c, _e, cb) => cb() }) });
  // The local config's chain and demo (infra/config/local.json: 400 ms slots, 20 transfers/s), ephemeral ports.
  const cfg = parseConfig({
    bus: { kind: 'embedded' },
    metrics: { enabled: false },
    admin: { enabled: false },
    localchain: { enabled: true, listen: '127.0.0.1:0', slotMs: 400 },
    ingest: { listen: '127.0.0.1:0' },
    fanout: { listen: '127.0.0.1:0', heartbeatMs: 1000 },
    demo: { enabled: true, txPerSec: 20, accounts: 4 },
  });
  const running = await launch(cfg, log);
  const c = new V2Client(running.endpoints.stream!);
  try {
    c.start();
    const beat = (after: number): Promise<{ at: number; pos: Position }> =>
      waitFor(() => c.updates.slice(after).some((u) => u.hasHeartbeat()), 30_000, 'a heartbeat').then(() => {
        const u = c.updates.slice(after).find((x) => x.hasHeartbeat())!;
        const d = decodeCursor(u.getCursor_asU8());
        if (!d.ok) throw new Error(d.reason);
        return { at: Date.now(), pos: d.position };
      });
    // Let the demo get going (the chain's first slots, the demo's funding) before the first sample.
    await waitFor(() => c.updates.filter((u) => u.hasHeartbeat()).length >= 10, 60_000, 'ten heartbeats');
    const a = await beat(c.updates.length);
    await new Promise((r) => setTimeout(r, seconds * 1000)); // the sampling window itself, not a fence
    const b = await beat(c.updates.length);
    const s = (b.at - a.at) / 1000;
    console.log(`over ${s.toFixed(1)} s (load average ${(await import('node:os')).loadavg()[0]!.toFixed(1)}):`);
    for (const [tag, offs] of b.pos) {
      const n = offs.reduce((x, y) => x + y, 0) - (a.pos.get(tag)?.reduce((x, y) => x + y, 0) ?? 0);
      const rate = n / s;
      const byCount = KEPT[tag] / rate;
      const life = Math.min(byCount, RETENTION_MS / 1000);
      console.log(`  ${NAMES[tag].padEnd(20)} ${rate.toFixed(1).padStart(7)} records/s; keeps ${KEPT[tag]} → ${(byCount / 60).toFixed(1)} min by count; a cursor lives ${(life / 60).toFixed(1)} min`);
    }
  } finally {
    c.cancel();
    await running.stop();
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
