import assert from 'node:assert/strict';
import bs58 from 'bs58';
import {
  AddressLookupTableProgram, ComputeBudgetProgram, Keypair, PublicKey, SystemProgram, Transaction, TransactionInstruction, TransactionMessage, VersionedTransaction,
  type AddressLookupTableAccount, type Connection,
} from '@solana/web3.js';
import { getTransferInstruction } from '@solana-program/token';
import type { ProduceRecord } from '../../../bus/bus';
import { encodeTxRecord } from '../../../bus/topics/stream-transactions';
import type { LocalChain } from '../../../infra/local/chain';
import { FilterAckStatus, type TransactionFilter } from '../../../proto/gen/stream_v2_pb';
import { decodeTransaction } from '../../../proto/txn/decode';
import { encodeTransaction } from '../../../proto/wire';
import { closeConnection, connect, payerOf, startNode } from '../../infra/local/chain/support';
import { waitFor } from '../../support/wait';
import { startTestFanout, type TestFanout } from '../support';
import { seqsContiguous, V2Client } from './client';
import { filter } from './filter-spec';

// Stream v2's filter parts beyond account lists, end to end (a fanout on an embedded bus, grpc-js clients over the
// generated messages): golden transactions built by published client libraries — web3.js's SystemProgram and
// ComputeBudgetProgram, @solana-program/token's Transfer (the Codama-generated client of the SPL Token program; it
// comes with litesvm) — matched by program, data prefix, bytes at an offset, size and role; every malformed value
// and limit acknowledged with its FilterAck status and reason code while the stream stays open; and on the local
// chain (litesvm runs the real Address Lookup Table program), a v0 swap-shaped transaction whose pool account is
// loaded writable through a table, resolved from the node as the fanout does in production.

const SYSTEM = SystemProgram.programId.toBase58();
const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const COMPUTE_BUDGET = ComputeBudgetProgram.programId.toBase58();
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const kp = (i: number): Keypair => Keypair.fromSeed(Uint8Array.from({ length: 32 }, () => i));

/** The stream.transactions record ingest publishes for these wire bytes (its decoder, its encoder). */
function recordOf(raw: Uint8Array, slot: bigint): ProduceRecord {
  const d = decodeTransaction(Buffer.from(raw), slot);
  assert.ok(d.ok, 'decodes');
  return { key: d.tx.signatures[0]!, value: encodeTxRecord({ slot, observedAtMs: Date.now(), accountKeys: d.staticKeys, message: encodeTransaction(d.tx) }) };
}

const BLOCKHASH = bs58.encode(Buffer.alloc(32, 0x11));

function legacy(payer: Keypair, ixs: TransactionInstruction[], more: Keypair[] = []): { raw: Uint8Array; sig: string } {
  const tx = new Transaction({ feePayer: payer.publicKey, recentBlockhash: BLOCKHASH }).add(...ixs);
  tx.sign(payer, ...more);
  return { raw: tx.serialize(), sig: bs58.encode(tx.signature!) };
}

/** @solana-program/token's Transfer as a web3.js instruction (its roles; the authority signs). */
function tokenTransfer(source: PublicKey, destination: PublicKey, authority: PublicKey, amount: bigint): TransactionInstruction {
  const ix = getTransferInstruction({ source: source.toBase58() as never, destination: destination.toBase58() as never, authority: authority.toBase58() as never, amount });
  return new TransactionInstruction({
    programId: new PublicKey(ix.programAddress),
    keys: ix.accounts.map((a, i) => ({ pubkey: new PublicKey(a.address), isWritable: (a.role & 1) === 1, isSigner: i === 2 || (a.role & 2) === 2 })),
    data: Buffer.from(ix.data),
  });
}

describe('stream v2 filters on instructions, roles, signatures and votes: golden transactions (web3.js, @solana-program/token)', function () {
  this.timeout(60_000);
  let f: TestFanout;
  const clients: V2Client[] = [];
  const client = (): V2Client => {
    const c = new V2Client(f.address);
    clients.push(c);
    return c;
  };

  beforeEach(async () => {
    f = await startTestFanout({ heartbeatMs: 200 });
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.cancel();
    await f.close();
  });

  async function started(add: (c: V2Client) => void, acks: number): Promise<V2Client> {
    const c = client();
    add(c);
    c.start();
    await c.waitUpdates((u) => u.filter((x) => x.hasFilterAck()).length === acks && u.some((x) => x.hasHeartbeat() && x.getCursor_asU8().length > 0), 'acks and a heartbeat with a cursor');
    for (const a of c.updates.filter((x) => x.hasFilterAck())) assert.equal(a.getFilterAck()!.getStatus(), FilterAckStatus.FILTER_ACK_OK, a.getFilterAck()!.getReason());
    return c;
  }

  it('matches SPL Token, System and Compute Budget instructions by program, data prefix, bytes at an offset, size; accounts by role; a signature; votes', async () => {
    const payer = kp(1);
    const dest = kp(2).publicKey;
    const owner = kp(3);
    const [srcAta, dstAta] = [kp(4).publicKey, kp(5).publicKey];
    // System transfer (data: u32 LE 2, u64 lamports) behind two Compute Budget instructions.
    const sysTx = legacy(payer, [ComputeBudgetProgram.setComputeUnitLimit({ units: 200_000 }), ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 5 }), SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: dest, lamports: 1234 })]);
    // SPL Token Transfer (data: u8 3, u64 amount), signed by the token owner, paid by payer.
    const tokTx = legacy(payer, [tokenTransfer(srcAta, dstAta, owner.publicKey, 77n)], [owner]);
    const lamports = Buffer.alloc(8);
    lamports.writeBigUInt64LE(1234n);
    const c = await started((c) => {
      c.addFilter('system-transfer', filter({ ixs: [{ program: SYSTEM, prefix: [2, 0, 0, 0], size: 12 }] }));
      c.addFilter('system-1234', filter({ ixs: [{ program: SYSTEM, at: [[4, [...lamports]]] }] }));
      c.addFilter('system-create', filter({ ixs: [{ program: SYSTEM, prefix: [0, 0, 0, 0] }] })); // CreateAccount: neither
      c.addFilter('token-transfer', filter({ ixs: [{ program: TOKEN, prefix: [3] }] }));
      c.addFilter('token-transferchecked', filter({ ixs: [{ program: TOKEN, prefix: [12] }] })); // neither
      c.addFilter('cu-price', filter({ ixs: [{ program: COMPUTE_BUDGET, prefix: [3] }] })); // SetComputeUnitPrice
      c.addFilter('dest-writable', filter({ writable: [dest.toBase58()] }));
      c.addFilter('owner-signer', filter({ signer: [owner.publicKey.toBase58()] }));
      c.addFilter('program-writable', filter({ writable: [TOKEN] })); // a program is never writable by the header
      c.addFilter('dst-ata-signer', filter({ signer: [dstAta.toBase58()] })); // writable, not a signer
      c.addFilter('signature', filter({ signature: tokTx.sig }));
      c.addFilter('no-votes-of-payer', filter({ include: [payer.publicKey.toBase58()], vote: false }));
      c.addFilter('votes', filter({ include: [payer.publicKey.toBase58()], vote: true }));
    }, 13);
    await f.bus.produce(f.cfg.topics.transactions, [recordOf(sysTx.raw, 500n), recordOf(tokTx.raw, 501n)]);
    await c.waitUpdates(() => c.txs().length === 2, 'both transactions');
    const [a, b] = c.txs();
    assert.equal(bs58.encode(a!.getTransaction()!.getSignature_asU8()), sysTx.sig);
    assert.deepEqual(a!.getFiltersList(), ['system-transfer', 'system-1234', 'cu-price', 'dest-writable', 'no-votes-of-payer']);
    assert.equal(bs58.encode(b!.getTransaction()!.getSignature_asU8()), tokTx.sig);
    assert.deepEqual(b!.getFiltersList(), ['token-transfer', 'owner-signer', 'signature', 'no-votes-of-payer']);
    assert.ok(seqsContiguous(c.updates));
  });

  it('acknowledges every malformed value and limit with its status and reason code; the stream stays open and serves its good filters', async () => {
    const payer = kp(7);
    const c = client();
    const long = Array.from({ length: 65 }, () => 1);
    const cases: Array<[string, TransactionFilter, number, string]> = [
      ['bad-program', filter({ ixs: [{ program: 'not-base58-0OIl' }] }), FilterAckStatus.FILTER_ACK_INVALID, 'invalid_pubkey'],
      ['short-program', filter({ ixs: [{ program: '2p' }] }), FilterAckStatus.FILTER_ACK_INVALID, 'invalid_pubkey'],
      ['no-program', filter({ ixs: [{ program: '', prefix: [1] }] }), FilterAckStatus.FILTER_ACK_INVALID, 'invalid_instruction_filter'],
      ['bad-writable', filter({ writable: ['xyz0'] }), FilterAckStatus.FILTER_ACK_INVALID, 'invalid_pubkey'],
      ['bad-signer', filter({ signer: ['11111111111111111111111111111111111111111111'] }), FilterAckStatus.FILTER_ACK_INVALID, 'invalid_pubkey'],
      ['bad-signature', filter({ signature: 'abc0' }), FilterAckStatus.FILTER_ACK_INVALID, 'invalid_signature'],
      ['short-signature', filter({ signature: bs58.encode(Buffer.alloc(32, 9)) }), FilterAckStatus.FILTER_ACK_INVALID, 'invalid_signature'],
      ['prefix-too-long', filter({ ixs: [{ program: SYSTEM, prefix: long }] }), FilterAckStatus.FILTER_ACK_LIMIT_REACHED, 'data_prefix_too_long'],
      ['too-many-at', filter({ ixs: [{ program: SYSTEM, at: [[0, [1]], [1, [1]], [2, [1]], [3, [1]], [4, [1]]] }] }), FilterAckStatus.FILTER_ACK_LIMIT_REACHED, 'too_many_data_at'],
      ['at-too-long', filter({ ixs: [{ program: SYSTEM, at: [[0, long]] }] }), FilterAckStatus.FILTER_ACK_LIMIT_REACHED, 'data_bytes_too_long'],
      ['at-past-tx', filter({ ixs: [{ program: SYSTEM, at: [[1232, [1]]] }] }), FilterAckStatus.FILTER_ACK_INVALID, 'invalid_instruction_filter'],
      ['size-past-tx', filter({ ixs: [{ program: SYSTEM, size: 1233 }] }), FilterAckStatus.FILTER_ACK_INVALID, 'invalid_instruction_filter'],
      ['prefix-past-size', filter({ ixs: [{ program: SYSTEM, prefix: [1, 2], size: 1 }] }), FilterAckStatus.FILTER_ACK_INVALID, 'invalid_instruction_filter'],
      ['too-many-ix', filter({ ixs: Array.from({ length: 9 }, () => ({ program: SYSTEM })) }), FilterAckStatus.FILTER_ACK_LIMIT_REACHED, 'too_many_instruction_filters'],
    ];
    for (const [id, fl] of cases) c.addFilter(id, fl);
    c.addFilter('good', filter({ ixs: [{ program: SYSTEM, prefix: [2, 0, 0, 0] }], signer: [payer.publicKey.toBase58()] }));
    // Per stream: with good's one, 7 filters of 8 instruction filters fit (57); one more of 8 would make 65 > 64.
    for (let i = 0; i < 7; i++) c.addFilter(`ix${i}`, filter({ ixs: Array.from({ length: 8 }, (_, j) => ({ program: SYSTEM, prefix: [100 + i, j] })) }));
    c.addFilter('ix-over', filter({ ixs: Array.from({ length: 8 }, () => ({ program: SYSTEM })) }));
    // RAW transactions come from entry records, matched on static keys only.
    const raw = filter({ vote: false });
    raw.setEncoding(2);
    c.addFilter('raw-parts', raw);
    c.start();
    const n = cases.length + 7 + 3;
    await c.waitUpdates((u) => u.filter((x) => x.hasFilterAck()).length === n && u.some((x) => x.hasHeartbeat()), 'every ack');
    const acks = c.updates.filter((u) => u.hasFilterAck()).map((u) => u.getFilterAck()!);
    const byId = new Map(acks.map((a) => [a.getId(), a]));
    for (const [id, , status, code] of cases) {
      const a = byId.get(id)!;
      assert.deepEqual([a.getStatus(), a.getReasonCode()], [status, code], `${id}: ${a.getReason()}`);
      assert.ok(a.getReason().length > 0, `${id} has a reason`);
    }
    for (let i = 0; i < 7; i++) assert.equal(byId.get(`ix${i}`)!.getStatus(), FilterAckStatus.FILTER_ACK_OK, byId.get(`ix${i}`)!.getReason());
    assert.deepEqual([byId.get('ix-over')!.getStatus(), byId.get('ix-over')!.getReasonCode()], [FilterAckStatus.FILTER_ACK_LIMIT_REACHED, 'too_many_instruction_filters']);
    assert.match(byId.get('ix-over')!.getReason(), /65 instruction filters \(at most 64 per stream\)/);
    assert.match(byId.get('prefix-too-long')!.getReason(), /data_prefix is 65 bytes \(at most 64\)/);
    assert.equal(byId.get('good')!.getStatus(), FilterAckStatus.FILTER_ACK_OK);
    assert.deepEqual([byId.get('raw-parts')!.getStatus(), byId.get('raw-parts')!.getReasonCode()], [FilterAckStatus.FILTER_ACK_INVALID, 'unsupported_combination']);
    const t = legacy(payer, [SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: kp(8).publicKey, lamports: 1 })]);
    await waitFor(() => f.fanout.v2Stats()!.streams === 1, 5000, 'open');
    await f.bus.produce(f.cfg.topics.transactions, [recordOf(t.raw, 9n)]);
    await c.waitUpdates(() => c.txs().length === 1, 'the good filter still serves');
    assert.deepEqual(c.txs()[0]!.getFiltersList(), ['good']);
    assert.equal(c.status, undefined, 'the stream is still open');

    // A stream that starts RAW would deliver a DEFAULT-encoded filter RAW, which these parts are not served with:
    // refused at Start, naming the filter (as match_loaded_addresses is).
    const r = client();
    r.addFilter('parts', filter({ signer: [payer.publicKey.toBase58()] }));
    r.start({ raw: true });
    const st = await r.waitStatus();
    assert.equal(st.code, 3);
    assert.match(st.details, /invalid start: filter "parts" has instruction, role, signature or vote parts/);
    assert.equal(st.metadata.get('x-error-reason')[0], 'invalid_start');
  });
});

describe('stream v2 role filters through lookup tables on the local chain (a v0 swap-shaped transaction)', function () {
  this.timeout(120_000);
  let node: LocalChain;
  let conn: Connection;
  let payer: Keypair;
  let f: TestFanout | undefined;
  let c: V2Client | undefined;

  before(async () => {
    ({ node } = await startNode({ slotMs: 50 }));
    conn = connect(node);
    payer = payerOf(node);
  });
  after(async () => {
    c?.cancel();
    await f?.close();
    closeConnection(conn);
    await node.close();
  });

  async function send(ixs: TransactionInstruction[]): Promise<number> {
    const { blockhash, lastValidBlockHeight } = await conn.getLatestBlockhash();
    const tx = new VersionedTransaction(new TransactionMessage({ payerKey: payer.publicKey, recentBlockhash: blockhash, instructions: ixs }).compileToV0Message());
    tx.sign([payer]);
    const sig = await conn.sendTransaction(tx);
    const r = await conn.confirmTransaction({ signature: sig, blockhash, lastValidBlockHeight }, 'confirmed');
    assert.equal(r.value.err, null);
    return (await conn.getTransaction(sig, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 }))!.slot;
  }

  it('a pool account loaded writable through a table matches account_writable with match_loaded_addresses, not without; a readonly-loaded one never; program and prefix match on the static program key', async () => {
    const [pool, vaultA, oracle] = [Keypair.generate().publicKey, Keypair.generate().publicKey, Keypair.generate().publicKey];
    const swapProgram = Keypair.generate().publicKey;
    const recentSlot = await conn.getSlot('finalized');
    const [create, table] = AddressLookupTableProgram.createLookupTable({ authority: payer.publicKey, payer: payer.publicKey, recentSlot });
    const at = await send([create, AddressLookupTableProgram.extendLookupTable({ lookupTable: table, authority: payer.publicKey, payer: payer.publicKey, addresses: [pool, vaultA, oracle] })]);
    await waitFor(() => node.slot() > at + 1, 10_000, 'a slot after the extension');
    const lut: AddressLookupTableAccount = (await conn.getAddressLookupTable(table)).value!;
    // Swap-shaped: an Anchor-style 8-byte discriminator and two u64s; user signs, pool and vault writable, oracle
    // readonly — all three through the table. Compute Budget in front, as swaps are sent.
    const disc = [0xf8, 0xc6, 0x9e, 0x91, 0xe1, 0x75, 0x87, 0xc8];
    const data = Buffer.concat([Buffer.from(disc), Buffer.alloc(16, 1)]);
    const swap = new TransactionInstruction({
      programId: swapProgram,
      keys: [
        { pubkey: payer.publicKey, isSigner: true, isWritable: true },
        { pubkey: pool, isSigner: false, isWritable: true },
        { pubkey: vaultA, isSigner: false, isWritable: true },
        { pubkey: oracle, isSigner: false, isWritable: false },
      ],
      data,
    });
    const { blockhash } = await conn.getLatestBlockhash();
    const msg = new TransactionMessage({ payerKey: payer.publicKey, recentBlockhash: blockhash, instructions: [ComputeBudgetProgram.setComputeUnitLimit({ units: 300_000 }), swap] }).compileToV0Message([lut]);
    assert.equal(msg.addressTableLookups.length, 1);
    assert.deepEqual(msg.addressTableLookups[0]!.writableIndexes, [0, 1], 'pool and vault come writable through the table');
    const tx = new VersionedTransaction(msg);
    tx.sign([payer]);

    f = await startTestFanout({ heartbeatMs: 200, lookupTables: { rpcUrl: node.httpUrl, waitMs: 10_000 } });
    c = new V2Client(f.address);
    const p58 = pool.toBase58();
    c.addFilter('pool-written', filter({ writable: [p58], matchLoaded: true }));
    c.addFilter('pool-written-static', filter({ writable: [p58] })); // the pool is not a static key
    c.addFilter('oracle-written', filter({ writable: [oracle.toBase58()], matchLoaded: true })); // loaded readonly
    c.addFilter('swap', filter({ ixs: [{ program: swapProgram.toBase58(), prefix: disc, size: 24 }] }));
    c.addFilter('swap-other', filter({ ixs: [{ program: swapProgram.toBase58(), prefix: [...disc.slice(0, 7), 0] }] }));
    c.addFilter('swap-by-payer', filter({ signer: [payer.publicKey.toBase58()], writable: [p58], ixs: [{ program: swapProgram.toBase58(), prefix: disc }], matchLoaded: true, vote: false }));
    c.start();
    await c.waitUpdates((u) => u.filter((x) => x.hasFilterAck()).length === 6 && u.some((x) => x.hasHeartbeat() && x.getCursor_asU8().length > 0), 'acks');
    for (const a of c.updates.filter((x) => x.hasFilterAck())) assert.equal(a.getFilterAck()!.getStatus(), FilterAckStatus.FILTER_ACK_OK, a.getFilterAck()!.getReason());
    await f.bus.produce(f.cfg.topics.transactions, [recordOf(tx.serialize(), BigInt(node.slot()))]);
    await c.waitUpdates(() => c!.txs().length === 1, 'the swap');
    const u = c.txs()[0]!;
    assert.deepEqual(u.getFiltersList(), ['pool-written', 'swap', 'swap-by-payer']);
    assert.deepEqual(u.getTransaction()!.getLoaded()!.getWritableList_asU8().map((b) => bs58.encode(b)), [p58, vaultA.toBase58()]);
    assert.equal(hex(u.getTransaction()!.getSignature_asU8()), hex(tx.signatures[0]!));
  });
});
