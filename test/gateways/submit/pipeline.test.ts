import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { Keypair, PublicKey, Transaction, SystemProgram, TransactionInstruction } from '@solana/web3.js';
import bs58 from 'bs58';
import type { UsageEvent } from '../../../bus/topics/usage-events';
import { SubmitPipeline, type Outcome, type Rejected } from '../../../gateways/submit/pipeline';
import type { Preflight, PreflightResult } from '../../../gateways/submit/preflight';
import { SubmitMetrics } from '../../../gateways/submit/metrics';
import { SignatureCache } from '../../../gateways/submit/signature-cache';
import { tipRule } from '../../../gateways/submit/tip';
import { keypairFromSeed, sign } from '../../../infra/base/keypair';
import { Registry } from '../../../infra/base/metrics';
import { fakeBlockhash, legacyTx, lookupTable, MIN_TIP, RecordingForwarder, registry, rental, TIP_ACCOUNTS, v0Tx } from './support';

function setup(over: { tps?: number; preflight?: Preflight; maxPreflightInFlight?: number } = {}) {
  const r = rental({ tps: over.tps ?? 1000 });
  const forwarder = new RecordingForwarder();
  const events: UsageEvent[] = [];
  const metrics = new SubmitMetrics(new Registry());
  const pipeline = new SubmitPipeline({
    rentals: registry(r),
    forwarder,
    tips: tipRule(TIP_ACCOUNTS.map((k) => k.toBase58()), MIN_TIP),
    usage: { emit: (e) => events.push(e) },
    metrics,
    ...(over.preflight === undefined ? {} : { preflight: over.preflight }),
    ...(over.maxPreflightInFlight === undefined ? {} : { maxPreflightInFlight: over.maxPreflightInFlight }),
  });
  const key = r.apiKeys[0]!;
  const send = (bytes: Buffer, transport: 'binary' | 'jsonrpc' | 'udp' | 'quic' = 'binary'): Outcome => pipeline.submitNow({ apiKey: key, bytes, transport });
  return { r, key, forwarder, events, metrics, pipeline, send };
}

function rejected(o: Outcome): Rejected {
  assert.equal(o.ok, false, `expected a rejection, got ${JSON.stringify(o)}`);
  return o as Rejected;
}

describe('submit pipeline', () => {
  it('accepts a signed legacy transaction with a tip, forwards it once and answers its first signature', () => {
    const s = setup();
    const tx = legacyTx();
    const o = s.send(tx);
    assert.ok(o.ok);
    assert.equal(o.forwarded, true);
    assert.deepEqual(o.signature, tx.subarray(1, 65));
    assert.equal(s.forwarder.sent.length, 1);
    assert.deepEqual(s.forwarder.sent[0], tx);
    assert.equal(s.events.length, 1);
    assert.deepEqual([s.events[0]!.surface, s.events[0]!.method, s.events[0]!.outcome, s.events[0]!.rental], ['submit', 'binary', 'ok', s.r.id]);
    assert.equal(s.metrics.value('binary', 'accepted'), 1);
  });

  it('accepts a v0 transaction (no lookup tables) and through submit() as well', async () => {
    const s = setup();
    const tx = v0Tx();
    assert.equal(tx[65]! & 0x80, 0x80, 'the message is versioned');
    const o = await s.pipeline.submit({ apiKey: s.key.toUpperCase(), bytes: new Uint8Array(tx), transport: 'quic' });
    assert.ok(o.ok);
    assert.equal(s.forwarder.sent.length, 1);
    assert.equal(s.events[0]!.method, 'quic');
  });

  it('refuses missing, malformed and unknown keys without a usage event', () => {
    const s = setup();
    const tx = legacyTx();
    for (const apiKey of [undefined, null, '', 'not-a-uuid', '3f2d2a4c-0000-4000-8000-00000000000', crypto.randomUUID()]) {
      assert.equal(rejected(s.pipeline.submitNow({ apiKey, bytes: tx, transport: 'binary' })).reason, 'unauthorized');
    }
    assert.equal(s.forwarder.sent.length, 0);
    assert.equal(s.events.length, 0);
    assert.equal(s.metrics.value('binary', 'unauthorized'), 6);
  });

  it('limits to the rental TPS, and a repeat of charged rejected bytes is not charged again', () => {
    const s = setup({ tps: 2 });
    const noTip = legacyTx({ tip: null });
    assert.equal(rejected(s.send(noTip)).reason, 'missing_tip'); // token 1
    assert.equal(rejected(s.send(noTip)).reason, 'missing_tip'); // the SDK's retry: free
    assert.ok(s.send(legacyTx()).ok); // token 2
    assert.equal(rejected(s.send(legacyTx())).reason, 'rate_limited');
    assert.deepEqual(s.events.map((e) => e.outcome), ['rejected', 'rejected', 'ok', 'rate_limited']);
    // Billed as charged: the free retry and the refusal by the limit cost 0 units (README, usage.events).
    assert.deepEqual(s.events.map((e) => e.units), [1, 0, 1, 0]);
  });

  it('a repeat that only shares the first signature is charged', () => {
    const s = setup({ tps: 1 });
    const noTip = legacyTx({ tip: null });
    assert.equal(rejected(s.send(noTip)).reason, 'missing_tip');
    const altered = Buffer.from(noTip);
    altered[altered.length - 1]! ^= 1;
    assert.equal(rejected(s.send(altered)).reason, 'rate_limited');
  });

  it('rejects transactions over 1,232 bytes', () => {
    const s = setup();
    assert.equal(rejected(s.send(Buffer.alloc(1233, 1))).reason, 'too_large');
  });

  it('rejects what does not deserialize, naming why', () => {
    const s = setup();
    const tx = legacyTx();
    const r1 = rejected(s.send(tx.subarray(0, tx.length - 3)));
    assert.equal(r1.reason, 'cannot_deserialize');
    assert.match(r1.detail ?? '', /past the end/);
    assert.equal(rejected(s.send(Buffer.concat([tx, Buffer.from([0])]))).reason, 'cannot_deserialize');
    assert.equal(rejected(s.send(Buffer.from([0xff, 0xff, 0xff, 0xff]))).reason, 'cannot_deserialize');
  });

  it('rejects a signature count that differs from the header', () => {
    const s = setup();
    const tx = legacyTx();
    const two = Buffer.concat([Buffer.from([2]), tx.subarray(1, 65), Buffer.alloc(64, 9), tx.subarray(65)]);
    assert.equal(rejected(s.send(two)).reason, 'signature_count_mismatch');
  });

  it('rejects a transaction with no signatures, or a required signature left empty', () => {
    const s = setup();
    const tx = legacyTx();
    assert.equal(rejected(s.send(Buffer.concat([Buffer.from([0]), tx.subarray(65)]))).reason, 'unsigned');
    const payer = Keypair.generate();
    const cosigner = Keypair.generate();
    const t = new Transaction({ feePayer: payer.publicKey, recentBlockhash: fakeBlockhash() });
    t.add(SystemProgram.transfer({ fromPubkey: cosigner.publicKey, toPubkey: payer.publicKey, lamports: 5 }));
    t.add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: TIP_ACCOUNTS[0]!, lamports: MIN_TIP }));
    t.partialSign(payer);
    const partly = t.serialize({ requireAllSignatures: false });
    assert.equal(partly[0], 2);
    const r = rejected(s.send(partly));
    assert.equal(r.reason, 'unsigned');
    assert.equal(r.detail, 'signature 1');
  });

  it('rejects forged signatures and altered messages', () => {
    const s = setup();
    const tx = legacyTx();
    const forged = Buffer.from(tx);
    forged[10]! ^= 0x40;
    assert.equal(rejected(s.send(forged)).reason, 'invalid_signature');
    const altered = Buffer.from(tx);
    altered[altered.length - 2]! ^= 0x01; // a byte of the tip's lamports
    assert.equal(rejected(s.send(altered)).reason, 'invalid_signature');
    // Signed by someone else than the fee payer named in the message.
    const other = Keypair.generate();
    const t = Transaction.from(tx);
    const resigned = Buffer.from(tx);
    const msg = t.serializeMessage();
    const sig = sign(keypairFromSeed(Buffer.from(other.secretKey.subarray(0, 32))), msg);
    sig.copy(resigned, 1);
    assert.equal(rejected(s.send(resigned)).reason, 'invalid_signature');
    assert.equal(s.forwarder.sent.length, 0);
  });

  describe('tip rule', () => {
    it('missing tip', () => {
      const r = rejected(setup().send(legacyTx({ tip: null })));
      assert.equal(r.reason, 'missing_tip');
      assert.match(r.detail ?? '', /1000000 lamports/);
    });
    it('a tip below the minimum', () => {
      assert.equal(rejected(setup().send(legacyTx({ tip: MIN_TIP - 1 }))).reason, 'tip_too_small');
    });
    it('two transfers that add up do not count', () => {
      const payer = Keypair.generate();
      const half = SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: TIP_ACCOUNTS[0]!, lamports: MIN_TIP / 2 });
      const r = rejected(setup().send(legacyTx({ payer, tip: MIN_TIP / 2, extra: [half] })));
      assert.equal(r.reason, 'tip_too_small');
    });
    it('a tip account reached through a lookup table does not count', () => {
      const tx = v0Tx({ tables: [lookupTable([TIP_ACCOUNTS[0]!])] });
      assert.equal(tx.includes(TIP_ACCOUNTS[0]!.toBuffer()), false, 'the tip account is not a static key');
      assert.equal(rejected(setup().send(tx)).reason, 'missing_tip');
    });
    it('a transfer inside another program (an inner instruction) does not count', () => {
      const payer = Keypair.generate();
      const program = Keypair.generate().publicKey;
      const data = Buffer.alloc(12);
      data.writeUInt32LE(2, 0);
      data.writeBigUInt64LE(BigInt(MIN_TIP * 10), 4);
      const cpi = new TransactionInstruction({ programId: program, data, keys: [
        { pubkey: payer.publicKey, isSigner: true, isWritable: true },
        { pubkey: TIP_ACCOUNTS[0]!, isSigner: false, isWritable: true },
        { pubkey: SystemProgram.programId, isSigner: false, isWritable: false },
      ] });
      assert.equal(rejected(setup().send(legacyTx({ payer, tip: null, extra: [cpi] }))).reason, 'missing_tip');
    });
    it('a transfer to an account that is not a tip account does not count; any configured tip account does', () => {
      const s = setup();
      assert.equal(rejected(s.send(legacyTx({ tipAccount: Keypair.generate().publicKey }))).reason, 'missing_tip');
      assert.ok(s.send(legacyTx({ tipAccount: TIP_ACCOUNTS[1]! })).ok);
      assert.ok(s.send(v0Tx({ tip: MIN_TIP * 3 })).ok);
    });
    it('a v0 transaction with a lookup table and a static tip is accepted', () => {
      const other = Keypair.generate().publicKey;
      const tx = v0Tx({ to: other, tables: [lookupTable([other])] });
      assert.equal(tx.includes(other.toBuffer()), false, 'the recipient went into the table');
      assert.ok(setup().send(tx).ok);
    });
  });

  describe('signature cache', () => {
    it('forwards a resend again until the signature is delivered, then suppresses it (answering the signature)', () => {
      const s = setup();
      const tx = legacyTx();
      assert.ok(s.send(tx).ok);
      assert.ok(s.send(tx).ok);
      assert.equal(s.forwarder.sent.length, 2);
      assert.equal(s.pipeline.cache.markDelivered(SignatureCache.key(tx.subarray(1, 65))), true);
      const o = s.send(tx);
      assert.ok(o.ok);
      assert.equal(o.forwarded, false);
      assert.deepEqual(o.signature, tx.subarray(1, 65));
      assert.equal(s.forwarder.sent.length, 2);
      assert.equal(s.metrics.value('binary', 'duplicate'), 1);
    });

    it('is bounded by size and by time', () => {
      let t = 0;
      const c = new SignatureCache({ windowMs: 1000, maxEntries: 3, now: () => t });
      for (const k of ['a', 'b', 'c', 'd']) c.noteForwarded(k);
      assert.equal(c.size, 3);
      assert.equal(c.markDelivered('a'), false, 'the oldest went');
      assert.equal(c.markDelivered('d'), true);
      assert.equal(c.isDelivered('d'), true);
      t = 1500;
      assert.equal(c.isDelivered('d'), false);
      c.noteForwarded('e');
      assert.equal(c.size, 1);
    });
  });

  it('answers forward_failed when no forward target can take the transaction', () => {
    const s = setup();
    s.forwarder.full = true;
    assert.equal(rejected(s.send(legacyTx())).reason, 'forward_failed');
    assert.equal(s.events[0]!.outcome, 'error');
  });

  describe('preflight', () => {
    class ScriptedPreflight implements Preflight {
      calls = 0;
      constructor(private readonly answer: () => Promise<PreflightResult>) {}
      simulate(): Promise<PreflightResult> {
        this.calls++;
        return this.answer();
      }
      async close(): Promise<void> {}
    }

    it('forwards only when the simulation passes; each failure kind maps to its reason', async () => {
      const kinds: Array<[PreflightResult, string | null]> = [
        [{ kind: 'ok' }, null],
        [{ kind: 'failed', error: 'Error processing Instruction 0: custom program error: 0x1', data: { logs: ['x'], unitsConsumed: 5 } }, 'preflight_failed'],
        [{ kind: 'upstream_error' }, 'preflight_upstream_error'],
        [{ kind: 'timeout' }, 'preflight_timeout'],
      ];
      for (const [answer, reason] of kinds) {
        const s = setup({ preflight: new ScriptedPreflight(async () => answer) });
        const o = await s.pipeline.submit({ apiKey: s.key, bytes: legacyTx(), transport: 'jsonrpc', preflight: {} });
        if (reason === null) {
          assert.ok(o.ok);
          assert.equal(s.forwarder.sent.length, 1);
        } else {
          assert.equal(rejected(o).reason, reason);
          assert.equal(s.forwarder.sent.length, 0);
        }
      }
    });

    it('carries the simulation result as data', async () => {
      const data = { err: { InstructionError: [0, { Custom: 1 }] }, logs: ['Program log: no'], unitsConsumed: 150 };
      const s = setup({ preflight: new ScriptedPreflight(async () => ({ kind: 'failed', error: 'e', data })) });
      const r = rejected(await s.pipeline.submit({ apiKey: s.key, bytes: legacyTx(), transport: 'jsonrpc', preflight: { commitment: 'confirmed' } }));
      assert.deepEqual([r.reason, r.detail, r.data], ['preflight_failed', 'e', data]);
    });

    it('caps the simulations in flight over all clients', async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const p = new ScriptedPreflight(async () => {
        await gate;
        return { kind: 'ok' };
      });
      const s = setup({ preflight: p, maxPreflightInFlight: 2 });
      const pending = [1, 2].map(() => s.pipeline.submit({ apiKey: s.key, bytes: legacyTx(), transport: 'jsonrpc', preflight: {} }));
      assert.equal(rejected(await s.pipeline.submit({ apiKey: s.key, bytes: legacyTx(), transport: 'jsonrpc', preflight: {} })).reason, 'preflight_busy');
      release();
      const done = await Promise.all(pending);
      assert.equal(done.length, 2);
      assert.ok(done.every((o) => o.ok));
      assert.equal(p.calls, 2);
    });
  });

  it('the signature in the answer encodes to the id web3.js computes', () => {
    const s = setup();
    const tx = legacyTx();
    const o = s.send(tx);
    assert.ok(o.ok);
    assert.equal(bs58.encode(o.signature), bs58.encode(Transaction.from(tx).signature!));
    assert.ok(new PublicKey(TIP_ACCOUNTS[0]!).toBase58().length > 0);
  });
});
