import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parseConfig } from '../../infra/config';
import { launch } from '../../infra/launcher';
import { metrics } from '../../infra/base/metrics';
import { quietLog } from '../support/log-capture';
import { chainClient, waitConfirmed } from '../support/chain';
import { projectRoot } from '../support/paths';
import { StreamClient } from '../support/stream-client';

const COMPLETED = /^meridian_ingest_fec_sets_completed_total (\d+)$/m;

function completedIn(text: string): number {
  const m = COMPLETED.exec(text);
  return m === null ? 0 : Number(m[1]);
}

async function get(url: string): Promise<{ status: number; body: string }> {
  const r = await fetch(url);
  return { status: r.status, body: await r.text() };
}

describe('launcher: everything on one machine', function () {
  this.timeout(120_000);

  it('runs the local chain, ingest, stream, metrics and demo traffic, admits this machine, and stops cleanly', async () => {
    const { log, lines } = quietLog();
    const rentalsFile = path.join(projectRoot(), 'infra', 'config', 'local-rentals.json');
    const localKey = (JSON.parse(fs.readFileSync(rentalsFile, 'utf8')) as Array<{ apiKeys: string[] }>)[0]!.apiKeys[0]!;
    const cfg = parseConfig({
      localchain: { enabled: true, listen: '127.0.0.1:0' },
      ingest: { listen: '127.0.0.1:0' },
      fanout: { listen: '127.0.0.1:0', auth: { mode: 'ip' } },
      rentals: { file: rentalsFile },
      metrics: { listen: '127.0.0.1:0' },
      admin: { enabled: true, listen: '127.0.0.1:0' },
      demo: { enabled: true, txPerSec: 20, accounts: 3 },
    });
    const given = structuredClone(cfg);
    // The registry is process-wide: count from what earlier tests left in it.
    const before = completedIn(metrics.render());
    const running = await launch(cfg, log);
    // What a component derives for another (ingest fed by the chain) is its own value, not a rewrite of the caller's.
    assert.deepEqual(cfg, given, 'launch() leaves its config as given');
    const e = running.endpoints;
    const base = e.metrics!.replace(/\/metrics$/, '');
    const sub = StreamClient.open(e.stream!);
    try {
      assert.match(e.ingest!, /^udp:\/\/127\.0\.0\.1:\d+$/);
      assert.match(e.stream!, /^127\.0\.0\.1:\d+$/);
      assert.match(e.chain!.http, /^http:\/\/127\.0\.0\.1:\d+/);
      assert.match(e.admin!, /^127\.0\.0\.1:\d+$/);
      assert.equal(e.demo!.accounts!.length, 3);
      assert.equal(e.demo!.apiKey, localKey);
      assert.equal(e.demo!.payerSecretKey!.length, 64);
      assert.ok(e.demo!.payerSecretKey!.every((b) => Number.isInteger(b) && b >= 0 && b < 256));
      assert.equal((await get(`${base}/healthz`)).status, 200);
      assert.equal((await get(`${base}/readyz`)).status, 200);
      // The chain shreds to the address ingest advertises (the transfer below arriving proves they reached it).
      const shredTo = lines.map((l) => JSON.parse(l) as { msg?: string; shredTo?: string }).filter((l) => l.msg === 'local chain node shreds from its next slot');
      assert.deepEqual(shredTo.map((l) => l.shredTo), [e.ingest!.replace('udp://', '')]);

      // Demo transfers execute on the chain and reach a subscriber admitted by IP (the local rental).
      sub.send({ transactions: { demo: { accountInclude: [e.demo!.accounts![0]!] } } });
      const r = await sub.waitFor((x) => x.transaction !== undefined, 30_000);
      assert.ok(r.transaction!.accountKeys.includes(e.demo!.accounts![0]!));
      // …and they executed: the chain knows the streamed signature, in the slot the stream said. Shreds leave
      // mid-slot, so the stream may be ahead of the block's confirmation: wait for it first.
      const { call } = chainClient(e);
      await waitConfirmed(call, r.transaction!.signature);
      const got = await call<{ slot: number; meta: { err: unknown } } | null>('getTransaction', [r.transaction!.signature, { encoding: 'json', commitment: 'confirmed' }]);
      assert.ok(got !== null, 'getTransaction knows the demo transfer');
      assert.equal(got.slot, r.transaction!.slot);
      assert.equal(got.meta.err, null);
      assert.ok(completedIn((await get(`${base}/metrics`)).body) > before, 'ingest completed FEC sets');
    } finally {
      await sub.close();
      await running.stop();
    }
    await assert.rejects(get(`${base}/healthz`));
    assert.ok(!lines.some((l) => l.includes('skips the leader-signature check')), 'the local run checks leader signatures');
    // The check below passes on an empty log: first make sure the run's log, the chain's start to its stop, was captured.
    assert.ok(lines.some((l) => l.includes('local chain node started')) && lines.some((l) => l.includes('local chain node stopped')), 'the log was captured');
    assert.ok(lines.length >= 10, `${lines.length} log lines`);
    for (const l of lines) assert.ok(!l.includes(localKey) && !l.includes('http://'), `no key or URL in the log: ${l}`);
  });

  it('refuses demo traffic without the local chain', async () => {
    const cfg = parseConfig({ metrics: { enabled: false }, admin: { enabled: false }, ingest: { enabled: false }, fanout: { enabled: false }, demo: { enabled: true } });
    await assert.rejects(launch(cfg, quietLog().log), /demo\.enabled needs the local chain/);
  });
});
