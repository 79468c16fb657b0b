import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { Writable } from 'node:stream';
import { decodeEntryBatch, encodeEntryBatch } from '../../ingest/entry/entries';
import { Pipeline, type BatchOutput } from '../../ingest/pipeline';
import { publicKeyFromSeed } from '../../ingest/shred/ed25519';
import { fixedLeader } from '../../ingest/shred/leader-keys';
import { shredBatch } from '../../ingest/shred/shredder';
import { createLogger } from '../../infra/base/log';
import { Registry } from '../../infra/base/metrics';
import { v1Tx } from '../support/v1-vectors';

// A transaction of a version the decoder does not know ends its entry batch (its length is unknowable), but
// nothing decoded before it is lost: whole entries and the transactions before it in its own entry are
// published, the version is counted per number, and the event is logged once per slot.

const legacy = v1Tx('legacy_reference');
const v0 = v1Tx('v0_reference');
const v1 = v1Tx('v1_all_config');
/** Version 2 (0x82) followed by bytes nobody can size. */
const future = Buffer.concat([Buffer.from([0x82]), crypto.randomBytes(300)]);

function batch(): Buffer {
  return encodeEntryBatch([
    { numHashes: 1n, hash: Buffer.alloc(32, 1), txs: [legacy, v1] },
    { numHashes: 2n, hash: Buffer.alloc(32, 2), txs: [v0, v1, future, legacy] },
    { numHashes: 3n, hash: Buffer.alloc(32, 3), txs: [legacy] },
  ]);
}

const sigOf = (b: Buffer): string => (b[0] === 0x81 ? b.subarray(b.length - 64) : b.subarray(1, 65)).toString('hex');

describe('ingest: an unknown transaction version loses only what follows it', () => {
  it('decodeEntryBatch keeps the entries and the transactions before it, and names the version', () => {
    const r = decodeEntryBatch(batch(), 4n);
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.equal(r.reason, 'unknown_tx_version');
    assert.equal(r.unknownVersion, 2);
    assert.equal(r.txReason, 'unsupported_version');
    assert.deepEqual(r.entries.map((e) => e.txs.map((t) => t.version)), [['legacy', 1]]);
    assert.deepEqual(r.partial.map((t) => t.version), [0, 1]);
  });

  it('the pipeline publishes them, counts the version and logs once per slot', () => {
    const seed = crypto.randomBytes(32);
    const lines: string[] = [];
    const log = createLogger({ level: 'warn', destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) }) });
    const registry = new Registry();
    const outs: BatchOutput[] = [];
    const p = new Pipeline({ registry, log, shredVersion: 5, leaders: fixedLeader(publicKeyFromSeed(seed)), sink: { batch: (o) => outs.push(o), slot: () => undefined } });
    const send = (slot: number, start: number, root: Buffer, last: boolean): ReturnType<typeof shredBatch> => {
      const b = shredBatch(batch(), { slot, parentOffset: 1, shredVersion: 5, fecSetIndexStart: start, chainedRoot: root, leaderSeed32: seed, lastInSlot: last });
      for (const pk of b.shreds) p.push(pk, Date.now());
      return b;
    };
    const a = send(100, 0, Buffer.alloc(32), false);
    send(100, a.nextFecSetIndex, a.merkleRoots.at(-1)!, true); // same slot: no second log line
    send(101, 0, Buffer.alloc(32), true);

    assert.equal(outs.length, 3);
    for (const o of outs) assert.deepEqual(o.txs.map((t) => t.tx.signatures[0]!.toString('hex')), [legacy, v1, v0, v1].map(sigOf));
    const s = p.stats();
    assert.deepEqual(s.unknownTxVersions, { 2: 3 });
    assert.equal(s.batchesInvalid.unknown_tx_version, 3);
    assert.equal(s.transactions, 12);
    assert.match(registry.render(), /meridian_ingest_transactions_unknown_version_total\{version="2"\} 3/);
    const logged = lines.filter((l) => l.includes('unknown version'));
    assert.equal(logged.length, 2, 'once per slot');
    assert.deepEqual(logged.map((l) => (JSON.parse(l) as { slot: string }).slot), ['100', '101']);
  });
});
