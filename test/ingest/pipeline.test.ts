import assert from 'node:assert/strict';
import fs from 'node:fs';
import { Writable } from 'node:stream';
import { readCapture } from '../../ingest/capture';
import { Pipeline } from '../../ingest/pipeline';
import { fixedLeader } from '../../ingest/shred/leader-keys';
import { createLogger } from '../../infra/base/log';
import { Registry } from '../../infra/base/metrics';
import { TURBINE } from './support/golden';

// The pipeline's own guarantees, apart from the goldens: push() never throws, whatever fails below it, and
// the failure is counted and logged at a rate-limited warn.

describe('ingest pipeline: guard rails', () => {
  const packets = readCapture(fs.readFileSync(TURBINE.capture)).packets;

  it('a throwing sink costs a counted internal error and one warn line, never an exception', () => {
    const lines: string[] = [];
    const log = createLogger({ level: 'warn', destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) }) });
    const p = new Pipeline({
      shredVersion: TURBINE.shredVersion,
      leaders: fixedLeader(TURBINE.leader),
      log,
      sink: {
        batch: () => {
          throw new Error('sink exploded');
        },
        slot: () => {
          throw new Error('slot sink exploded');
        },
      },
    });
    for (const pk of packets) assert.doesNotThrow(() => p.push(pk, Date.now()));
    const s = p.stats();
    assert.equal(s.packets, 307);
    assert.ok(s.drops.internal >= 2, `internal ${s.drops.internal}`); // the slot callback and at least one batch
    assert.equal(lines.length, 1, 'warnings are rate-limited');
    assert.match(lines[0]!, /unexpected error/);
  });

  it('counts non-shreds as drops, not as shreds, and registers its series', () => {
    const registry = new Registry();
    const p = new Pipeline({ registry, sink: { batch: () => undefined, slot: () => undefined } });
    p.push(Buffer.alloc(0), 0);
    p.push(Buffer.alloc(2000, 0xa5), 0);
    const s = p.stats();
    assert.deepEqual(s.shreds, { '0x96': 0, '0xb6': 0, '0x66': 0, '0x76': 0 });
    assert.equal(s.drops.short, 1);
    assert.equal(s.drops.legacy_variant, 1);
    const text = registry.render();
    assert.match(text, /meridian_ingest_packets_total 2/);
    assert.match(text, /meridian_ingest_shreds_dropped_total\{reason="short"\} 1/);
  });
});
