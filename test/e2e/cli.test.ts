import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import bs58 from 'bs58';
import { randomKeypair } from '../../infra/base/keypair';
import { TURBINE, goldenTxs, loadGolden } from '../ingest/support/golden';
import { transfer } from '../support/chain';
import { waitFor } from '../support/wait';
import { runCli, sendSlotShreds, type Proc } from './support';

// As an operator would: `meridian start --endpoints F`, `meridian subscribe`, then `meridian replay` of the real
// capture to the advertised ingest address; the subscriber prints the golden signatures.

const VOTE_PROGRAM = 'Vote111111111111111111111111111111111111111';

/** The endpoints file once `start` has written it; fails at once if `start` exits first. */
async function waitForFile(file: string, timeoutMs: number, proc: Proc): Promise<Record<string, string>> {
  const output = (): string => `${proc.stdout()}\n${proc.stderr()}`;
  await waitFor(() => fs.existsSync(file) || proc.child.exitCode !== null, timeoutMs, 'the endpoints file', 100).catch((e: Error) => {
    throw new Error(`${e.message}:\n${output()}`);
  });
  if (!fs.existsSync(file)) throw new Error(`start exited early:\n${output()}`);
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>;
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
      // No leader check (the local default, made explicit): the fence below is a slot shredded by a key of our own.
      ingest: { listen: '127.0.0.1:0', leader: { mode: 'off' } },
      fanout: { listen: '127.0.0.1:0' },
      metrics: { listen: '127.0.0.1:0' },
      log: { level: 'warn' },
    }));
    const start = runCli(['start', '--config', config, '--endpoints', endpointsFile]);
    procs.push(start);
    const endpoints = await waitForFile(endpointsFile, 60_000, start);
    assert.match(endpoints.ingest ?? '', /^udp:\/\/127\.0\.0\.1:\d+$/);
    assert.match(endpoints.stream ?? '', /^127\.0\.0\.1:\d+$/);

    const sub = runCli(['subscribe', '--url', endpoints.stream!, '--include', VOTE_PROGRAM, '--slots']);
    procs.push(sub);
    await sub.waitFor(/subscribed/, 30_000, 'stderr');

    const replay = runCli(['replay', TURBINE.capture, '--to', endpoints.ingest!.replace('udp://', '')]);
    assert.equal(await replay.exited, 0, replay.stderr());

    const goldenDecode = loadGolden(TURBINE.expected);
    const golden = goldenTxs(goldenDecode).map((t) => t.signatures[0]!);
    assert.equal(golden.length, 63);
    const last = golden[golden.length - 1]!;
    await sub.waitFor(new RegExp(last), 60_000, 'stdout');
    // The fence: one more slot, shredded after the replay ended, holding a transaction that names the Vote program.
    // Ingest reads its one socket in order, and the bus, the fanout and the subscriber keep that order, so once the
    // fence is printed everything the replay could have caused has been printed before it.
    const fence = transfer(randomKeypair(), Buffer.from(bs58.decode(VOTE_PROGRAM)), 1n, Buffer.alloc(32, 9));
    await sendSlotShreds(endpoints.ingest!, goldenDecode.entry_batches[0]!.slot + 1, TURBINE.shredVersion, fence.tx);
    await sub.waitFor(new RegExp(fence.signature), 60_000, 'stdout');
    const txLines = sub.stdout().split('\n').filter((l) => l.startsWith('tx '));
    const printed = txLines.map((l) => l.split(' ')[2]);
    assert.equal(printed.pop(), fence.signature, 'the fence is the last transaction printed');
    assert.equal(printed.length, golden.length, sub.stdout());
    assert.deepEqual([...printed].sort(), [...golden].sort());
    assert.match(sub.stdout(), /^slot 385970984$/m);

    assert.equal(await start.stop('SIGTERM'), 0, start.stderr());
  });
});
