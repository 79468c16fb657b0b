import assert from 'node:assert/strict';
import { parseConfig } from '../../infra/config';
import { launch } from '../../infra/launcher';
import { metrics } from '../../infra/metrics';
import { quietLog } from '../support/log-capture';

const COMPLETED = /^meridian_ingest_fec_sets_completed_total (\d+)$/m;

function completedIn(text: string): number {
  const m = COMPLETED.exec(text);
  return m === null ? 0 : Number(m[1]);
}

async function get(url: string): Promise<{ status: number; body: string }> {
  const r = await fetch(url);
  return { status: r.status, body: await r.text() };
}

describe('launcher: everything on one machine', () => {
  it('serves ingest, stream, metrics, health and readiness, and stops cleanly', async () => {
    const { log, lines } = quietLog();
    const cfg = parseConfig({
      ingest: { listen: '127.0.0.1:0' },
      fanout: { listen: '127.0.0.1:0' },
      metrics: { listen: '127.0.0.1:0' },
      demo: { enabled: true, slotMs: 50, txPerSlot: 5 },
    });
    // The registry is process-wide: count from what earlier tests left in it.
    const before = completedIn(metrics.render());
    const running = await launch(cfg, log);
    const base = running.endpoints.metrics!.replace(/\/metrics$/, '');
    try {
      assert.match(running.endpoints.ingest!, /^udp:\/\/127\.0\.0\.1:\d+$/);
      assert.match(running.endpoints.stream!, /^127\.0\.0\.1:\d+$/);
      assert.equal(running.endpoints.demoAccounts!.split(',').length, 4);
      assert.equal((await get(`${base}/healthz`)).status, 200);
      assert.equal((await get(`${base}/readyz`)).status, 200);
      // Demo traffic flows through ingest: completed FEC sets show in the metrics.
      let completed = before;
      for (let i = 0; i < 100 && completed === before; i++) {
        await new Promise((r) => setTimeout(r, 100));
        completed = completedIn((await get(`${base}/metrics`)).body);
      }
      assert.ok(completed > before, 'demo traffic completed no FEC set');
    } finally {
      await running.stop();
    }
    await assert.rejects(get(`${base}/healthz`));
    assert.ok(lines.some((l) => l.includes('leader-signature check')), 'the local default says it skips the leader check');
  });
});
