import assert from 'node:assert/strict';
import bs58 from 'bs58';
import { ComputeBudgetProgram, Keypair, PublicKey, SystemProgram, Transaction, TransactionMessage, VersionedTransaction } from '@solana/web3.js';
import type { Running } from '../../infra/launcher';
import { FilterAckStatus } from '../../proto/gen/stream_v2_pb';
import { V2Client } from '../fanout/v2/client';
import { filter } from '../fanout/v2/filter-spec';
import { blockFormatsFor } from '../support/block-formats';
import { chainClient, latestBlockhash, sendTx, transfer, waitConfirmed } from '../support/chain';
import { quietLog } from '../support/log-capture';
import { launchOneMachine } from '../support/one-machine';

// Stream v2's filter parts on the live loop: transactions built by web3.js (a Compute Budget price and a System
// transfer, legacy and v0) sent to the local chain's sendTransaction, executed by litesvm, shredded to ingest —
// which writes each record's `facts` header — and matched by the fanout by program, data prefix, bytes at an
// offset, data size, role and signature. The demo's own transfers flow beside them (System transfers too: a
// filter on the System program alone would take them, so each filter here also names one of this test's
// accounts); what is asserted is the set of filters each of this test's transactions reached.

const SYSTEM = SystemProgram.programId.toBase58();
const COMPUTE_BUDGET = ComputeBudgetProgram.programId.toBase58();

const u64le = (n: bigint): number[] => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(n);
  return [...b];
};

for (const format of blockFormatsFor('embedded')) describe(`local chain, ${format} blocks: stream v2 instruction, role and signature filters on the live loop (sendTransaction → litesvm → shreds → ingest → fanout)`, function () {
  this.timeout(120_000);
  let running: Running | undefined;
  let c: V2Client | undefined;
  after(async () => {
    c?.cancel();
    await running?.stop();
  });

  it('a web3.js legacy and v0 transaction reach exactly the filters whose program, prefix, offset bytes, size, roles and signature they satisfy', async () => {
    const { log } = quietLog();
    running = await launchOneMachine({ bus: 'embedded', log, blockFormat: format });
    const e = running.endpoints;
    const { call, payer } = chainClient(e);
    const sender = Keypair.generate();
    const recipient = Keypair.generate().publicKey;
    const fund = transfer(payer, Buffer.from(sender.publicKey.toBytes()), 1_000_000_000n, await latestBlockhash(call));
    await sendTx(call, fund.tx);
    await waitConfirmed(call, fund.signature);

    // Both transactions: a Compute Budget price, then a System transfer (discriminator 2 as a u32, the lamports as a
    // u64 at offset 4: 12 bytes), the sender signing and paying. The legacy one is signed first, so its signature
    // can be a filter.
    const amounts = [1_234_567n, 7_654_321n];
    const ixs = (lamports: bigint) => [
      ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 1 }),
      SystemProgram.transfer({ fromPubkey: sender.publicKey, toPubkey: recipient, lamports }),
    ];
    const legacyTx = new Transaction({ feePayer: sender.publicKey, recentBlockhash: bs58.encode(await latestBlockhash(call)) }).add(...ixs(amounts[0]!));
    legacyTx.sign(sender);
    const legacySig = bs58.encode(legacyTx.signature!);
    const v0 = new VersionedTransaction(new TransactionMessage({ payerKey: sender.publicKey, recentBlockhash: bs58.encode(await latestBlockhash(call)), instructions: ixs(amounts[1]!) }).compileToV0Message());
    v0.sign([sender]);
    const v0Sig = bs58.encode(v0.signatures[0]!);

    const s58 = sender.publicKey.toBase58();
    const r58 = recipient.toBase58();
    const client = new V2Client(e.stream!);
    c = client;
    const filters: Array<[string, ReturnType<typeof filter>]> = [
      ['transfer-by-sender', filter({ signer: [s58], ixs: [{ program: SYSTEM, prefix: [2, 0, 0, 0], size: 12 }] })],
      ['create-by-sender', filter({ signer: [s58], ixs: [{ program: SYSTEM, prefix: [0, 0, 0, 0] }] })],
      ['transfer-wrong-size', filter({ signer: [s58], ixs: [{ program: SYSTEM, prefix: [2, 0, 0, 0], size: 13 }] })],
      ['price-by-sender', filter({ signer: [s58], ixs: [{ program: COMPUTE_BUDGET, prefix: [3] }] })],
      ['limit-touching-sender', filter({ include: [s58], ixs: [{ program: COMPUTE_BUDGET, prefix: [2] }] })],
      ['recipient-written', filter({ writable: [r58] })],
      ['recipient-signs', filter({ signer: [r58] })],
      ['first-amount', filter({ writable: [r58], ixs: [{ program: SYSTEM, at: [[4, u64le(amounts[0]!)]] }] })],
      ['second-amount', filter({ writable: [r58], ixs: [{ program: SYSTEM, at: [[4, u64le(amounts[1]!)]] }] })],
      ['program-not-in-tx', filter({ signer: [s58], ixs: [{ program: new PublicKey(Buffer.alloc(32, 7)).toBase58() }] })],
      ['legacy-signature', filter({ signature: legacySig })],
    ];
    for (const [id, f] of filters) client.addFilter(id, f);
    client.start();
    await client.waitUpdates((u) => u.filter((x) => x.hasFilterAck()).length === filters.length, 'acks');
    for (const a of client.updates.filter((x) => x.hasFilterAck())) assert.equal(a.getFilterAck()!.getStatus(), FilterAckStatus.FILTER_ACK_OK, a.getFilterAck()!.getReason());

    assert.equal(await sendTx(call, Buffer.from(legacyTx.serialize())), legacySig);
    assert.equal(await sendTx(call, Buffer.from(v0.serialize())), v0Sig);
    for (const sig of [legacySig, v0Sig]) assert.equal((await waitConfirmed(call, sig)).err, null, `${sig} executed`);

    const hexOf = (sig: string): string => Buffer.from(bs58.decode(sig)).toString('hex');
    const want = new Map([
      [hexOf(legacySig), ['first-amount', 'legacy-signature', 'price-by-sender', 'recipient-written', 'transfer-by-sender']],
      [hexOf(v0Sig), ['price-by-sender', 'recipient-written', 'second-amount', 'transfer-by-sender']],
    ]);
    await client.waitUpdates(() => [...want.keys()].every((h) => client.sigs().includes(h)), 'both transactions through the loop', 30_000);
    for (const [h, names] of want) {
      const got = client.txs().filter((u) => Buffer.from(u.getTransaction()!.getSignature_asU8()).toString('hex') === h);
      assert.equal(got.length, 1, `${h} delivered once`);
      assert.deepEqual([...got[0]!.getFiltersList()].sort(), names, `the filters ${h} reached`);
    }
    // Nothing else this stream received names this test's accounts (the demo's traffic reaches none of its filters).
    assert.equal(client.txs().length, 2, `only this test's two transactions: ${client.sigs().join(', ')}`);
  });
});
