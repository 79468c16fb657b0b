import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TURBINE, goldenTxs, loadGolden } from '../ingest/support/golden';
import { runCli, type Proc } from './support';

// As an operator would: `meridian start --endpoints F`, `meridian subscribe`, then `meridian replay` of the real
// capture to the advertised ingest address; the subscriber prints the golden signatures.

async function waitForFile(file: string, timeoutMs: number, proc: Proc): Promise<Record<string, string>> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>;
    if (proc.child.exitCode !== null) throw new Error(`start exited early:\n${proc.stdout()}\n${proc.stderr()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no endpoints file after ${timeoutMs} ms:\n${proc.stdout()}\n${proc.stderr()}`);
}

describe('CLI end to end: start, subscribe, replay', function () {
  this.timeout(180_000);
  const procs: Proc[] = [];
  after(async () => {
    for (const p of procs.reverse()) await p.stop();
  });

  it('the subscriber prints the golden signatures of the replayed capture', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'meridian-cli-'));
    const config = path.join(dir, 'config.json');
    const endpointsFile = path.join(dir, 'endpoints.json');
    fs.writeFileSync(config, JSON.stringify({
      ingest: { listen: '127.0.0.1:0' },
      fanout: { listen: '127.0.0.1:0' },
      metrics: { listen: '127.0.0.1:0' },
      log: { level: 'warn' },
    }));
    const start = runCli(['start', '--config', config, '--endpoints', endpointsFile]);
    procs.push(start);
    const endpoints = await waitForFile(endpointsFile, 60_000, start);
    assert.match(endpoints.ingest ?? '', /^udp:\/\/127\.0\.0\.1:\d+$/);
    assert.match(endpoints.stream ?? '', /^127\.0\.0\.1:\d+$/);

    const sub = runCli(['subscribe', '--url', endpoints.stream!, '--include', 'Vote111111111111111111111111111111111111111', '--slots']);
    procs.push(sub);
    await sub.waitFor(/subscribed/, 30_000, 'stderr');

    const replay = runCli(['replay', TURBINE.capture, '--to', endpoints.ingest!.replace('udp://', '')]);
    assert.equal(await replay.exited, 0, replay.stderr());

    const golden = goldenTxs(loadGolden(TURBINE.expected)).map((t) => t.signatures[0]!);
    assert.equal(golden.length, 63);
    const last = golden[golden.length - 1]!;
    await sub.waitFor(new RegExp(last), 60_000, 'stdout');
    await new Promise((r) => setTimeout(r, 500));
    const txLines = sub.stdout().split('\n').filter((l) => l.startsWith('tx '));
    const printed = txLines.map((l) => l.split(' ')[2]);
    assert.equal(printed.length, golden.length, sub.stdout());
    assert.deepEqual([...printed].sort(), [...golden].sort());
    assert.match(sub.stdout(), /^slot 385970984$/m);

    assert.equal(await start.stop('SIGTERM'), 0, start.stderr());
  });
});
