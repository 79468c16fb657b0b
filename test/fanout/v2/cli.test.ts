import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import bs58 from 'bs58';
import { cliCommand } from '../../support/paths';
import { waitFor } from '../../support/wait';
import { makeTx, startTestFanout, testKey, testKey58, type TestFanout } from '../support';

// `meridian subscribe --v2`: prints updates with their cursors, and a later run resumes from the last one with
// --from-cursor and prints exactly what it missed.

interface Run {
  out: () => string;
  err: () => string;
  stop: () => Promise<number | null>;
}

function runCli(args: string[]): Run {
  const { cmd, args: pre } = cliCommand();
  const child = spawn(cmd, [...pre, 'subscribe', '--v2', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const closed = new Promise<number | null>((r) => child.on('close', r));
  return {
    out: () => out,
    err: () => err,
    stop: () => {
      child.kill('SIGINT');
      return closed;
    },
  };
}

type Line = { seq: number; cursor: string; slot?: number; signature?: string; filters?: string[]; replayComplete?: unknown };

describe('meridian subscribe --v2', function () {
  this.timeout(60_000);
  let f: TestFanout;
  before(async () => (f = await startTestFanout()));
  after(async () => f.close());

  it('prints transactions with cursors; --from-cursor resumes with exactly what was missed', async () => {
    const key = testKey(9, 4242);
    const a = runCli(['--url', f.address, '--include', testKey58(9, 4242), '--json']);
    await waitFor(() => a.err().includes('subscribed'), 20_000, 'subscribed');
    await waitFor(() => f.fanout.v2Stats()!.streams === 1, 5000, 'stream open');
    const first = Array.from({ length: 3 }, () => makeTx({ keys: [key], slot: 77n }));
    await f.publishTx(...first);
    await waitFor(() => a.out().trim().split('\n').length >= 3, 20_000, 'three lines');
    assert.equal(await a.stop(), 0, a.err());
    const lines = a.out().trim().split('\n').map((l) => JSON.parse(l) as Line);
    assert.deepEqual(lines.map((l) => l.signature), first.map((t) => bs58.encode(t.signature)));
    // Without --verbose the acknowledgement (seq 1) and heartbeats are not printed; transactions are in seq order.
    assert.ok(lines.every((l, i) => i === 0 || l.seq > lines[i - 1]!.seq) && lines[0]!.seq >= 2);
    assert.deepEqual(lines[0]!.filters, ['cli']);
    const missed = Array.from({ length: 2 }, () => makeTx({ keys: [key], slot: 78n }));
    await f.publishTx(...missed);
    const b = runCli(['--url', f.address, '--include', testKey58(9, 4242), '--json', '--from-cursor', lines[2]!.cursor]);
    await waitFor(() => b.out().includes('replayComplete'), 20_000, 'replay complete');
    assert.equal(await b.stop(), 0, b.err());
    const again = b.out().trim().split('\n').map((l) => JSON.parse(l) as Line);
    assert.deepEqual(again.filter((l) => l.signature !== undefined).map((l) => l.signature), missed.map((t) => bs58.encode(t.signature)));
  });

  it('refuses --from-slot without --v2 and two starts at once (exit 2)', async () => {
    const { cmd, args: pre } = cliCommand();
    for (const args of [['subscribe', '--from-slot', '5'], ['subscribe', '--v2', '--from-slot', '5', '--from-cursor', 'AQ']]) {
      const child = spawn(cmd, [...pre, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const code = await new Promise<number | null>((r) => child.on('close', r));
      assert.equal(code, 2, err);
    }
  });
});
