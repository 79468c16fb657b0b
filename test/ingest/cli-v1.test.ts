import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import bs58 from 'bs58';
import { writeU64lp } from '../../ingest/capture';
import type { TxJson } from '../../ingest/cli/tx-json';
import { shredBatch } from '../../ingest/shred/shredder';
import { randomKeypair } from '../../infra/base/keypair';
import { v1Vectors } from '../support/v1-vectors';
import { runCli } from './support/child';

// `meridian decode` on a capture of a crate-serialized batch mixing legacy, v0 and v1: every transaction is a
// line, v1 ones with `version: 1` and their config values as the crate decoded them.

describe('meridian decode: v1 transactions', function () {
  this.timeout(60_000);

  it('prints v1 with its version and config values', async () => {
    const vec = v1Vectors().entry_batches.find((b) => b.name === 'mixed_entries')!;
    const leader = randomKeypair();
    const b = shredBatch(Buffer.from(vec.batch.hex, 'hex'), { slot: 77n, parentOffset: 1, shredVersion: 9, fecSetIndexStart: 0, chainedRoot: Buffer.alloc(32), leaderSeed32: leader.seed, lastInSlot: true });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'meridian-v1-'));
    const file = path.join(dir, 'v1.u64lp');
    try {
      fs.writeFileSync(file, writeU64lp(b.shreds));
      const r = await runCli(['decode', file, '--format', 'u64lp', '--shred-version', '9', '--leader', bs58.encode(leader.publicKey)]);
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as TxJson | { type: 'summary' });
      const txs = lines.filter((l): l is TxJson => l.type === 'tx');
      const want = vec.batch.expected.flatMap((e) => e.txs);
      assert.deepEqual(txs.map((t) => [t.version, t.signature]), want.map((t) => [t.version, bs58.encode(Buffer.from(t.signatures[0]!, 'hex'))]));
      const v1 = txs.filter((t) => t.version === 1);
      assert.equal(v1.length, 3);
      // In batch order: v1b (CU limit 1 only), v1a (every bit: fee 0x0102030405060708, CU 1.4M, loaded 64 KiB,
      // heap 256 KiB), v1b again.
      assert.deepEqual(v1[0]!.config, { mask: 4, computeUnitLimit: 1 });
      assert.deepEqual(v1[1]!.config, { mask: 31, priorityFee: String(0x0102030405060708n), computeUnitLimit: 1_400_000, loadedAccountsDataSizeLimit: 65_536, heapSize: 262_144 });
      assert.ok(txs.filter((t) => t.version !== 1).every((t) => t.config === undefined));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
