import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import type { DecodeSummary } from '../../ingest/cli/decode';
import type { TxJson } from '../../ingest/cli/tx-json';
import { cliCommand, projectRoot } from '../support/paths';
import { runCli } from './support/child';
import { DEMO, goldenTxs, loadGolden, TURBINE, type Golden } from './support/golden';

// The ingest commands as a user runs them (child processes): decode against the goldens, and a
// record ← replay round trip that must decode to the same lines.

function parseLines(stdout: string): { txs: TxJson[]; summary: DecodeSummary } {
  const lines = stdout.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l) as TxJson | DecodeSummary);
  assert.ok(lines.length >= 1);
  const last = lines[lines.length - 1]!;
  assert.equal(last.type, 'summary');
  const txs = lines.slice(0, -1);
  assert.ok(txs.every((l) => l.type === 'tx'));
  return { txs: txs as TxJson[], summary: last as DecodeSummary };
}

/** Golden txs in golden order vs decoded lines, as multisets (batches may complete out of order). */
function checkAgainstGolden(txs: TxJson[], golden: Golden): void {
  const want = goldenTxs(golden);
  assert.equal(txs.length, want.length);
  const key = (x: unknown): string => JSON.stringify(x);
  const got = txs.map((t) => {
    assert.equal(t.signature, t.signatures[0]);
    assert.equal(t.slot, golden.entry_batches[0]!.slot);
    return key({
      signatures: t.signatures, version: t.version, header: t.header, account_keys: t.accountKeys, recent_blockhash: t.recentBlockhash,
      num_instructions: t.numInstructions, program_ids: t.programIds, alt_lookups: t.addressTableLookups, wire_len: t.wireLen,
    });
  });
  assert.deepEqual(got.sort(), want.map(key).sort());
}

describe('meridian decode / replay / record', function () {
  this.timeout(120_000);

  it('decodes the real turbine capture to its golden transactions', async () => {
    const golden = loadGolden(TURBINE.expected);
    const r = await runCli(['decode', TURBINE.capture, '--format', 'ar', '--shred-version', String(TURBINE.shredVersion), '--leader', TURBINE.leader]);
    assert.equal(r.code, 0, r.stderr);
    const { txs, summary } = parseLines(r.stdout);
    checkAgainstGolden(txs, golden);
    assert.equal(summary.packets, 307);
    assert.equal(summary.setsCompleted, 5);
    assert.equal(summary.setsRecovered, 5);
    assert.equal(summary.batches, 5);
    assert.equal(summary.entries, golden.entry_batches.reduce((n, b) => n + b.num_entries, 0));
    assert.equal(summary.transactions, 63);
    assert.equal(summary.shreds['0x96'] + summary.shreds['0xb6'] + summary.shreds['0x66'] + summary.shreds['0x76'], 307);
    assert.equal(summary.drops.signature, 0);
  });

  it('decodes the demo pcap to its golden transactions', async () => {
    const golden = loadGolden(DEMO.expected);
    const leader = (await import('bs58')).default.encode(fs.readFileSync(DEMO.key).subarray(32, 64));
    const r = await runCli(['decode', DEMO.capture, '--shred-version', String(DEMO.shredVersion), '--leader', leader]);
    assert.equal(r.code, 0, r.stderr);
    const { txs, summary } = parseLines(r.stdout);
    checkAgainstGolden(txs, golden);
    assert.deepEqual([summary.packets, summary.setsCompleted, summary.setsRecovered, summary.batches, summary.entries, summary.transactions], [512, 8, 0, 1, 64, 1280]);
  });

  it('counts a wrong shred version as drops, and rejects bad flags and files', async () => {
    const r = await runCli(['decode', TURBINE.capture, '--shred-version', '1']);
    assert.equal(r.code, 0);
    const { txs, summary } = parseLines(r.stdout);
    assert.equal(txs.length, 0);
    assert.equal(summary.drops.shred_version, 307);
    assert.equal((await runCli(['decode', TURBINE.capture, '--leader', 'not-base58!'])).code, 2);
    assert.equal((await runCli(['decode', TURBINE.capture, '--frobnicate', '1'])).code, 2);
    assert.equal((await runCli(['decode', path.join(os.tmpdir(), 'no-such-capture.pcap')])).code, 1);
  });

  it('records what replay sends; the recording decodes like the original', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'meridian-record-'));
    const out = path.join(dir, 'rec.u64lp');
    const { cmd, args } = cliCommand();
    let rec: ReturnType<typeof spawn> | undefined;
    try {
      rec = spawn(cmd, [...args, 'record', '--listen', '127.0.0.1:0', '--out', out, '--count', '307'], { cwd: projectRoot(), stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      const child = rec;
      const port = await new Promise<number>((resolve, reject) => {
        child.stderr!.on('data', (b: Buffer) => {
          stderr += b.toString();
          const m = /listening on [^ ]+:(\d+)/.exec(stderr);
          if (m !== null) resolve(Number(m[1]));
        });
        child.on('exit', () => reject(new Error(`record exited early: ${stderr}`)));
      });
      const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
      const replay = await runCli(['replay', TURBINE.capture, '--to', `127.0.0.1:${port}`, '--rate', '3000']);
      assert.equal(replay.code, 0, replay.stderr);
      assert.equal(await exited, 0);
      assert.match(stderr, /307 packets/);
      const a = await runCli(['decode', out, '--format', 'u64lp', '--shred-version', String(TURBINE.shredVersion), '--leader', TURBINE.leader]);
      const { txs, summary } = parseLines(a.stdout);
      assert.equal(summary.packets, 307);
      checkAgainstGolden(txs, loadGolden(TURBINE.expected));
    } finally {
      if (rec !== undefined && rec.exitCode === null) rec.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
