import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import bs58 from 'bs58';
import { signedTransfer } from '../../infra/local/demo/transfers';
import { encodeEntryBatch } from '../../ingest/entry/entries';
import { randomKeypair } from '../../infra/base/keypair';
import { Registry } from '../../infra/base/metrics';
import { Pipeline } from '../../ingest/pipeline';
import { shredBatch } from '../../ingest/shred/shredder';
import { fixedLeader } from '../../ingest/shred/leader-keys';

// What the resolver's shred counters measure on a healthy feed (the demo traffic's shape: every set sent
// whole, 32 data + 32 code shreds). Any 32 shards complete a set, so half of a loss-free feed arrives after
// its set is complete: that series must say so in its name and help, not call it "late".

describe('ingest shred counters on a loss-free feed', () => {
  it('counts the shreds after a set completed as such, next to the accepted ones', () => {
    const leader = randomKeypair();
    const payer = randomKeypair();
    const registry = new Registry();
    let txs = 0;
    const p = new Pipeline({ registry, leaders: fixedLeader(bs58.encode(leader.publicKey)), sink: { batch: (o) => void (txs += o.txs.length), slot: () => undefined } });
    const entries = [{ numHashes: 1n, hash: crypto.randomBytes(32), txs: Array.from({ length: 200 }, (_, i) => signedTransfer(payer, crypto.randomBytes(32), BigInt(i + 1))) }];
    const batch = shredBatch(encodeEntryBatch(entries), { slot: 77n, parentOffset: 1, shredVersion: 0, fecSetIndexStart: 0, chainedRoot: crypto.randomBytes(32), leaderSeed32: leader.seed, lastInSlot: true });
    const sets = batch.merkleRoots.length;
    assert.ok(sets >= 2, `sets ${sets}`);
    for (const s of batch.shreds) p.push(s, 1000);
    assert.equal(txs, 200);

    const text = registry.render();
    const value = (name: string): number => {
      const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
      assert.ok(m !== null, `${name} in\n${text}`);
      return Number(m[1]);
    };
    assert.equal(batch.shreds.length, 64 * sets);
    assert.equal(value('meridian_ingest_shreds_accepted_total'), 32 * sets);
    assert.equal(value('meridian_ingest_shreds_after_completion_total'), 32 * sets);
    assert.equal(value('meridian_ingest_fec_sets_completed_total'), sets);
    assert.match(text, /# HELP meridian_ingest_shreds_after_completion_total [^\n]*already complete[^\n]*not lateness/);
    assert.doesNotMatch(text, /meridian_ingest_shreds_late_total/);
  });
});
