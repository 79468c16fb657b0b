import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import bs58 from 'bs58';
import { randomKeypair } from '../../infra/base/keypair';
import { Registry } from '../../infra/base/metrics';
import { Pipeline } from '../../ingest/pipeline';
import { FecResolver } from '../../ingest/shred/fec-resolver';
import { fixedLeader } from '../../ingest/shred/leader-keys';
import { quietLog } from '../support/log-capture';
import { makeBlock, withSlot } from './support/blocks';

// Forged shreds against ingest's state and CPU, deterministically (no sockets; the flood over real UDP is
// flood.test.ts):
//   - an unauthenticated shred never re-anchors (resets) the slot window, not even after the quiet time;
//   - after a genuine re-anchor, nothing already published is published again;
//   - a root is verified at most once, a forgery repeated costs no second verify, and verifies spent on
//     failures are budgeted per source address, so one source's forgeries cannot spend another's.

const RESET_MS = 300;

interface Harness {
  p: Pipeline;
  txs: string[];
  slots: bigint[];
}

function harness(leader: Buffer, registry?: Registry): Harness {
  const h: Harness = { p: undefined as unknown as Pipeline, txs: [], slots: [] };
  const { log } = quietLog('warn');
  h.p = new Pipeline({
    leaders: fixedLeader(leader),
    windowResetMs: RESET_MS,
    registry,
    log,
    sink: {
      batch: (out) => {
        for (const t of out.txs) h.txs.push(bs58.encode(t.tx.signatures[0]!));
      },
      slot: (slot) => void h.slots.push(slot),
    },
  });
  return h;
}

describe('ingest under forged shreds: state moves only on verified shreds', function () {
  this.timeout(60_000);
  const leader = randomKeypair();
  const attacker = randomKeypair();
  const payer = randomKeypair();

  it('a forged shred outside the window after the quiet time does not reset it; a verified one does', () => {
    const h = harness(leader.publicKey);
    const live = makeBlock(600_000n, leader, payer);
    for (const s of live.shreds.slice(0, 40)) h.p.push(s, 1_000, '10.0.0.1');
    assert.equal(h.txs.length, 20);
    const quiet = 1_000 + RESET_MS + 1;
    // Three kinds of forgery far below the window, each with a valid header: another key's block, a genuine
    // shred with its slot rewritten, and a genuine header with random signature bytes.
    const other = makeBlock(1_000n, attacker, payer);
    const rewritten = withSlot(live.shreds[3]!, 1_000n);
    const randomSig = Buffer.from(makeBlock(1_001n, leader, payer).shreds[0]!);
    crypto.randomBytes(64).copy(randomSig, 0);
    for (const f of [other.shreds[0]!, rewritten, randomSig]) h.p.push(f, quiet, '10.0.0.66');
    // The live state is intact: the whole live block again is late (its set completed), not reopened, not
    // reported as a new slot, not republished.
    for (const sh of live.shreds) h.p.push(sh, quiet, '10.0.0.1');
    assert.equal(h.txs.length, 20, 'the live block is not published again');
    assert.deepEqual(h.slots, [600_000n], 'no slot reported again, none opened by a forgery');
    const s = h.p.stats();
    assert.deepEqual(s.windowResets, { below: 0, above: 0 }, 'no reset on an unverified shred');
    assert.equal(s.drops.signature, 3);
    assert.equal(s.verifyCache.forged, 1, 'the rewritten copy reuses a proven signature: caught without a verify');
    assert.equal(s.setsCompleted, 1);
    // A genuine block below the window after the quiet time re-anchors, once, and streams.
    const restart = makeBlock(1_000n, leader, payer);
    for (const sh of restart.shreds.slice(0, 32)) h.p.push(sh, quiet, '10.0.0.1');
    assert.deepEqual(h.p.stats().windowResets, { below: 1, above: 0 });
    assert.deepEqual(h.slots, [600_000n, 1_000n]);
    assert.deepEqual(h.txs.slice(20).sort(), [...restart.signatures].sort());
  });

  it('after a genuine re-anchor, copies of a block already published are not published again (nor re-anchor)', () => {
    const registry = new Registry();
    const h = harness(leader.publicKey, registry);
    const a = makeBlock(600_000n, leader, payer);
    for (const s of a.shreds) h.p.push(s, 1_000, '10.0.0.1');
    let t = 1_000 + RESET_MS + 1;
    const b = makeBlock(1_000n, leader, payer);
    h.p.push(b.shreds[0]!, t, '10.0.0.1'); // re-anchors: the window is open until b completes
    for (const s of a.shreds) h.p.push(s, t, '10.0.0.2'); // still-valid copies of the old block
    for (const s of b.shreds.slice(1)) h.p.push(s, t, '10.0.0.1');
    t += RESET_MS + 1;
    for (const s of a.shreds) h.p.push(s, t, '10.0.0.2'); // and again after another quiet time
    const s = h.p.stats();
    assert.equal(h.txs.length, 40, 'each block once');
    assert.equal(new Set(h.txs).size, 40);
    assert.deepEqual([...h.txs].sort(), [...a.signatures, ...b.signatures].sort());
    assert.deepEqual(s.windowResets, { below: 1, above: 0 }, 'an old block is not new traffic: no second re-anchor');
    assert.deepEqual(h.slots, [600_000n, 1_000n], "the old slot's first shred is not reported again");
    assert.ok(s.completedRootHits >= 2);
    assert.match(registry.render(), /^meridian_ingest_slot_window_resets_total\{cause="below"\} 1$/m);
  });

  it('a root is verified once; a repeated forgery costs one verify; failures are budgeted per source', () => {
    const registry = new Registry();
    const r = new FecResolver({ leaders: fixedLeader(leader.publicKey), registry, budgets: { perSourceBurst: 16, unprovenBurst: 40 } });
    const good = makeBlock(5_000n, leader, payer);
    // Every shred of the set carries the one signature: one verify for the whole set.
    for (const s of good.shreds.slice(0, 32)) r.push(s, 0, 'good');
    let st = r.stats();
    assert.equal(st.completedSets, 1);
    assert.deepEqual(st.verifies, { ok: { good: 0, unproven: 1 }, fail: { good: 0, unproven: 0 } });
    assert.ok(r.isGoodSource('good'));

    // A duplicate flood of one forged shred: one verify, then the failed pair answers.
    const forged = makeBlock(5_001n, attacker, payer).shreds[0]!;
    for (let i = 0; i < 50; i++) r.push(forged, 0, 'evil');
    st = r.stats();
    assert.equal(st.verifies.fail.unproven, 1);
    assert.equal(st.verifyCache.failed, 49);
    // Copies of the good set's shreds with the slot rewritten: the proven signature answers, no verify.
    for (let i = 0; i < 20; i++) r.push(withSlot(good.shreds[i]!, 5_002n + BigInt(i)), 0, 'evil');
    st = r.stats();
    assert.equal(st.verifies.fail.unproven, 1);
    assert.equal(st.verifyCache.forged, 20);

    // Distinct forgeries (each a new root): the source's bucket (16 failures, some already spent by the cached
    // ones at 1/16 each) runs out and the rest are dropped before any hashing.
    const distinct = Array.from({ length: 200 }, (_, i) => {
      const b = Buffer.from(forged);
      b.writeUInt32LE(i, 200);
      return b;
    });
    for (const f of distinct) r.push(f, 0, 'evil');
    st = r.stats();
    assert.ok(st.verifies.fail.unproven <= 16, `evil spent ${st.verifies.fail.unproven} verifies`);
    assert.ok(st.dropped.source_budget >= 180, `budget drops ${st.dropped.source_budget}`);

    // Many spoofed addresses share the unproven pool (40 at once): together they cannot spend more.
    for (let i = 0; i < 400; i++) {
      const b = Buffer.from(forged);
      b.writeUInt32LE(10_000 + i, 200);
      r.push(b, 0, `spoof-${i}`);
    }
    st = r.stats();
    assert.ok(st.verifies.fail.unproven <= 41, `unproven sources spent ${st.verifies.fail.unproven} verifies`);

    // Meanwhile the good source's next block verifies and completes: its budget is its own.
    const next = makeBlock(5_100n, leader, payer);
    const outcomes = next.shreds.slice(0, 32).map((s) => r.push(s, 0, 'good').kind);
    assert.equal(outcomes.filter((k) => k === 'completes').length, 1);
    st = r.stats();
    assert.deepEqual(st.verifies.ok, { good: 1, unproven: 1 });
    // And the pool refills with time: a new source gets its verify again after a second.
    const later = Buffer.from(forged);
    later.writeUInt32LE(99_999, 200);
    assert.deepEqual(r.push(later, 0, 'newcomer'), { kind: 'rejected', reason: 'source_budget' });
    assert.deepEqual(r.push(later, 1_000, 'newcomer'), { kind: 'rejected', reason: 'signature' });
    const text = registry.render();
    assert.match(text, /^meridian_ingest_shreds_dropped_total\{reason="source_budget"\} \d+$/m);
    assert.match(text, /^meridian_ingest_signature_verifies_total\{outcome="fail",source="unproven"\} \d+$/m);
    assert.match(text, /^meridian_ingest_signature_verifies_saved_total\{result="forged"\} 20$/m);
  });
});
