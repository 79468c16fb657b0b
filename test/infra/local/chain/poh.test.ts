import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import bs58 from 'bs58';
import { hashSignatures, Poh, verifyEntries } from '../../../../infra/local/chain/poh';
import { fixture } from '../../../support/paths';

// The node's PoH against a real cluster's: the entries of a real testnet slot (decoded golden of the turbine
// capture) chain from one to the next under our verify (sha256 chain, transaction mixin = Merkle root of the
// signatures), so the entries the node makes are the kind a validator makes.

interface GoldenEntry {
  num_hashes: number;
  hash: string;
  txs: Array<{ signatures: string[] }>;
}

describe('local chain: proof of history', () => {
  it('verifies real testnet entries (ticks and transaction mixins) from each previous entry', () => {
    const golden = JSON.parse(fs.readFileSync(fixture('shreds', 'testnet-385970984-turbine.expected.json'), 'utf8')) as { entry_batches: Array<{ entries: GoldenEntry[] }> };
    let checked = 0;
    let withTxs = 0;
    for (const b of golden.entry_batches) {
      const entries = b.entries.map((e) => ({ numHashes: BigInt(e.num_hashes), hash: Buffer.from(bs58.decode(e.hash)), signatures: e.txs.flatMap((t) => t.signatures.map((s) => Buffer.from(bs58.decode(s)))) }));
      for (let i = 1; i < entries.length; i++) {
        // Testnet ticks run 62,500 hashes; the short entries (ticks and mixins) keep this test quick.
        if (entries[i]!.numHashes > 12_000n) continue;
        assert.ok(verifyEntries(entries[i - 1]!.hash, [entries[i]!]), `entry ${i} of a batch verifies`);
        checked++;
        if (entries[i]!.signatures.length > 0) withTxs++;
      }
    }
    assert.ok(checked >= 6, `checked ${checked}`);
    assert.ok(withTxs >= 4, `entries with transactions: ${withTxs}`);
    assert.ok(checked > withTxs, 'ticks checked too');
  });

  it('makes entries that verify, and a changed signature breaks them', () => {
    const start = Buffer.alloc(32, 1);
    const poh = new Poh(start, 8);
    const sigs = [Buffer.alloc(64, 2), Buffer.alloc(64, 3), Buffer.alloc(64, 4)];
    const made = [poh.record([], sigs.slice(0, 2)), poh.tick(), poh.record([], sigs.slice(2)), poh.tick()];
    assert.equal(made.length, 4);
    assert.equal(made[1]!.numHashes, 7n);
    const view = made.map((e, i) => ({ numHashes: e.numHashes, hash: e.hash, signatures: i === 0 ? sigs.slice(0, 2) : i === 2 ? sigs.slice(2) : [] }));
    assert.ok(verifyEntries(start, view));
    assert.equal(verifyEntries(start, [{ ...view[0]!, signatures: [sigs[1]!, sigs[0]!] }]), false);
    // One signature: the root is the leaf hash, sha256(0x00 ‖ signature); none: the zero hash.
    assert.deepEqual(hashSignatures([]), Buffer.alloc(32));
    assert.deepEqual(hashSignatures([sigs[0]!]), crypto.createHash('sha256').update(Buffer.from([0])).update(sigs[0]!).digest());
  });
});
