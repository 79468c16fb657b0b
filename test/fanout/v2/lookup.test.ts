import assert from 'node:assert/strict';
import net from 'node:net';
import bs58 from 'bs58';
import {
  AddressLookupTableProgram, Keypair, PublicKey, SystemProgram, TransactionInstruction, TransactionMessage, VersionedTransaction,
  type AddressLookupTableAccount, type Connection,
} from '@solana/web3.js';
import type { ProduceRecord } from '../../../bus/bus';
import { encodeTxRecord } from '../../../bus/topics/stream-transactions';
import type { LocalChain } from '../../../infra/local/chain';
import type { SubscribeUpdate } from '../../../proto/gen/stream_v2_pb';
import { decodeTransaction } from '../../../proto/txn/decode';
import { encodeTransaction } from '../../../proto/wire';
import { closeConnection, connect, payerOf, startNode } from '../../infra/local/chain/support';
import { waitFor } from '../../support/wait';
import { makeTx, startTestFanout, testKey, testKey58, type TestFanout, type TestTx } from '../support';
import { seqsContiguous, V2Client } from './client';

// v2 filters with match_loaded_addresses, against the local chain (litesvm runs the real Address Lookup Table
// program): a table is created and extended on the node, a v0 transaction reaches the filtered account only through
// it, and the fanout resolves the table from the node's JSON-RPC (fanout.lookupTables.rpcUrl). Records go on the
// bus as ingest would publish them (its decoder and encoder over the transaction's wire bytes).

const b58 = (b: Uint8Array): string => bs58.encode(b);
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** A fixture transaction with these static keys and no lookups (some fixtures are v0 with tables of mainnet). */
function plainTx(keys: Buffer[]): TestTx {
  const t = makeTx({ keys });
  const fields = { ...t.fields, addressTableLookups: [] };
  return { ...t, fields, message: encodeTransaction(fields) };
}

function produceRecord(t: TestTx): ProduceRecord {
  return { key: t.signature, value: encodeTxRecord({ slot: t.fields.slot, observedAtMs: Date.now(), accountKeys: t.keys, message: t.message }) };
}

interface Landed {
  sig: string;
  slot: number;
  raw: Buffer;
  loaded: { writable: string[]; readonly: string[] };
}

/** The stream.transactions record ingest would publish for this wire transaction. */
function recordOf(raw: Buffer, slot: bigint): ProduceRecord {
  const d = decodeTransaction(raw, slot);
  assert.ok(d.ok, 'decodes');
  return { key: d.tx.signatures[0]!, value: encodeTxRecord({ slot, observedAtMs: Date.now(), accountKeys: d.staticKeys, message: encodeTransaction(d.tx) }) };
}

/** What a v2 transaction update says about loaded addresses (base58), or null without the field. */
function loadedOf(u: SubscribeUpdate): { writable: string[]; readonly: string[]; unresolved: string[] } | null {
  const t = u.getTransaction()!;
  if (!t.hasLoaded()) return null;
  const l = t.getLoaded()!;
  return { writable: l.getWritableList_asU8().map(b58), readonly: l.getReadonlyList_asU8().map(b58), unresolved: l.getUnresolvedTablesList_asU8().map(b58) };
}

describe('stream v2: lookup-table addresses (match_loaded_addresses) on the local chain', function () {
  this.timeout(120_000);
  let node: LocalChain;
  let conn: Connection;
  let payer: Keypair;
  const fanouts: TestFanout[] = [];
  const clients: V2Client[] = [];
  const servers: net.Server[] = [];
  const sockets: net.Socket[] = [];

  before(async () => {
    ({ node } = await startNode({ slotMs: 50 }));
    conn = connect(node);
    payer = payerOf(node);
  });

  afterEach(async () => {
    for (const c of clients.splice(0)) c.cancel();
    for (const f of fanouts.splice(0)) await f.close();
    for (const s of sockets.splice(0)) s.destroy();
    for (const s of servers.splice(0)) await new Promise<void>((r) => s.close(() => r()));
  });

  after(async () => {
    closeConnection(conn);
    await node.close();
  });

  const fanout = async (lookupTables: Record<string, unknown>, transport: 'h2' | 'grpc-js' = 'h2'): Promise<TestFanout> => {
    const f = await startTestFanout({ heartbeatMs: 200, lookupTables, transport });
    fanouts.push(f);
    return f;
  };
  const client = (f: TestFanout): V2Client => {
    const c = new V2Client(f.address);
    clients.push(c);
    return c;
  };
  const fresh = (): PublicKey => Keypair.generate().publicKey;
  const transferIx = (dest: PublicKey, readonly: PublicKey[] = []): TransactionInstruction => {
    const ix = SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: dest, lamports: 1_000_000 });
    ix.keys.push(...readonly.map((pubkey) => ({ pubkey, isSigner: false, isWritable: false })));
    return ix;
  };

  async function send(ixs: TransactionInstruction[], luts: AddressLookupTableAccount[] = []): Promise<Landed> {
    const { blockhash, lastValidBlockHeight } = await conn.getLatestBlockhash();
    const msg = new TransactionMessage({ payerKey: payer.publicKey, recentBlockhash: blockhash, instructions: ixs }).compileToV0Message(luts);
    const tx = new VersionedTransaction(msg);
    tx.sign([payer]);
    const sig = await conn.sendTransaction(tx);
    const r = await conn.confirmTransaction({ signature: sig, blockhash, lastValidBlockHeight }, 'confirmed');
    assert.equal(r.value.err, null);
    const got = await conn.getTransaction(sig, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    assert.ok(got !== null && got.meta !== null);
    const la = got.meta.loadedAddresses ?? { writable: [], readonly: [] };
    return { sig, slot: got.slot, raw: Buffer.from(tx.serialize()), loaded: { writable: la.writable.map((k) => k.toBase58()), readonly: la.readonly.map((k) => k.toBase58()) } };
  }

  async function makeTable(addresses: PublicKey[]): Promise<AddressLookupTableAccount> {
    const recentSlot = await conn.getSlot('finalized');
    const [create, table] = AddressLookupTableProgram.createLookupTable({ authority: payer.publicKey, payer: payer.publicKey, recentSlot });
    const landed = await send([create, AddressLookupTableProgram.extendLookupTable({ lookupTable: table, authority: payer.publicKey, payer: payer.publicKey, addresses: addresses.slice(0, 1) })]);
    // Extended again in a later transaction: the table the transaction uses was created and then extended.
    const more = await send([AddressLookupTableProgram.extendLookupTable({ lookupTable: table, authority: payer.publicKey, payer: payer.publicKey, addresses: addresses.slice(1) })]);
    assert.ok(more.slot >= landed.slot);
    await waitFor(() => node.slot() > more.slot + 1, 10_000, 'a slot after the extension');
    const lut = (await conn.getAddressLookupTable(table)).value;
    assert.ok(lut !== null && lut.state.addresses.length === addresses.length);
    return lut;
  }

  /** A started client whose stream has a cursor (a heartbeat came): what it gets next is what the hub reads next. */
  async function started(f: TestFanout, add: (c: V2Client) => void, acks: number): Promise<V2Client> {
    const c = client(f);
    add(c);
    c.start();
    await c.waitUpdates((u) => u.filter((x) => x.hasFilterAck()).length === acks && u.some((x) => x.hasHeartbeat() && x.getCursor_asU8().length > 0), 'acks and a heartbeat with a cursor');
    for (const a of c.updates.filter((x) => x.hasFilterAck())) assert.equal(a.getFilterAck()!.getStatus(), 0, a.getFilterAck()!.getReason());
    return c;
  }

  // On both transports: what differs between them is only how updates leave (the same session and hub).
  for (const transport of ['h2', 'grpc-js'] as const) {
    it(`a v0 transaction reaching a filtered account only through a table: delivered to the flagged filter with loaded addresses exactly as getTransaction reports them; not to the same filter unflagged; a replay gets the same (${transport} server)`, async () => {
      const [dest, ro1, ro2] = [fresh(), fresh(), fresh()];
      const lut = await makeTable([ro1, dest, ro2]);
      const landed = await send([transferIx(dest, [ro2, ro1])], [lut]);
      assert.deepEqual(landed.loaded.writable, [dest.toBase58()], 'the destination came through the table');
      assert.equal(landed.loaded.readonly.length, 2);

      const f = await fanout({ rpcUrl: node.httpUrl, waitMs: 10_000 }, transport); // generous: the node answers slowly on a loaded machine
      const fence = plainTx([testKey(3, 77), testKey(1, 1)]);
      const fence58 = testKey58(3, 77);
      // One stream with the same account twice, flagged and not; another with the filter unflagged only.
      const a = await started(f, (c) => {
        c.add('static', [dest.toBase58()]);
        c.add('loaded', [dest.toBase58()], { matchLoaded: true });
        c.add('fence', [fence58]);
      }, 3);
      const plain = await started(f, (c) => {
        c.add('plain', [dest.toBase58()]);
        c.add('fence', [fence58]);
      }, 2);
      const from = a.lastCursor()!;

      await f.bus.produce(f.cfg.topics.transactions, [recordOf(landed.raw, BigInt(landed.slot))]);
      await f.bus.produce(f.cfg.topics.transactions, [produceRecord(fence)]);
      await a.waitUpdates(() => a.txs().length === 2, 'the table transaction and the fence');
      await plain.waitUpdates(() => plain.txs().length === 1, 'the fence');

      const [got, aFence] = a.txs();
      assert.equal(hex(got!.getTransaction()!.getSignature_asU8()), hex(bs58.decode(landed.sig)));
      assert.deepEqual(got!.getFiltersList(), ['loaded'], 'only the flagged filter matched');
      assert.deepEqual(loadedOf(got!), { ...landed.loaded, unresolved: [] }, "loaded = the chain's meta.loadedAddresses");
      const d = decodeTransaction(landed.raw, BigInt(landed.slot));
      assert.ok(d.ok);
      assert.equal(hex(got!.getTransaction()!.getDecoded()!.serializeBinary()), hex(encodeTransaction(d.tx)), 'the decoded message unchanged');
      assert.equal(loadedOf(aFence!), null, 'a legacy transaction matched by an unflagged filter carries no loaded field');
      assert.deepEqual(plain.sigs(), [hex(fence.signature)], 'the unflagged filter does not get the table transaction');
      assert.ok(seqsContiguous(a.updates) && seqsContiguous(plain.updates));

      // A stream resumed from before the record replays it from the bus, resolved the same way.
      const r = client(f);
      r.add('loaded', [dest.toBase58()], { matchLoaded: true });
      r.add('fence', [fence58]);
      r.start({ cursor: from });
      await r.waitUpdates((u) => u.some((x) => x.hasReplayComplete()), 'replay complete');
      assert.deepEqual(r.sigs(), a.sigs());
      assert.deepEqual(r.txs().map(loadedOf), a.txs().map(loadedOf));
      assert.deepEqual(r.txs().map((u) => hex(u.getCursor_asU8())), a.txs().map((u) => hex(u.getCursor_asU8())), 'the same cursors');
      assert.ok(seqsContiguous(r.updates));
    });
  }

  it('a chain node that is down: the miss flag names the table, within the bound; a silent node holds the records behind the waiting one in bus order, for at most the bound', async () => {
    const lut = await makeTable([fresh(), fresh()]);
    const use = await send([transferIx(lut.state.addresses[1]!)], [lut]);
    const payer58 = payer.publicKey.toBase58();

    // Refused connections: nothing listens on the port.
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const downUrl = `http://127.0.0.1:${(closed.address() as net.AddressInfo).port}`;
    await new Promise<void>((r) => closed.close(() => r()));
    const down = await fanout({ rpcUrl: downUrl, waitMs: 50, retryMs: 60_000 });
    const c = await started(down, (x) => x.add('payer', [payer58], { matchLoaded: true }), 1);
    const t0 = performance.now();
    await down.bus.produce(down.cfg.topics.transactions, [recordOf(use.raw, BigInt(use.slot))]);
    await c.waitUpdates(() => c.txs().length === 1, 'the transaction, matched on its static keys', 10_000);
    const ms = performance.now() - t0;
    assert.deepEqual(loadedOf(c.txs()[0]!), { writable: [], readonly: [], unresolved: [lut.key.toBase58()] });
    assert.ok(ms < 5_000, `bounded by waitMs (${ms.toFixed(0)} ms)`);
    console.log(`      node down: delivered with the miss flag ${ms.toFixed(1)} ms after publishing (waitMs 50)`);

    // A node that accepts and never answers: the fetch would wait for its 10 s timeout; the bound ends the wait.
    const silent = net.createServer((s) => sockets.push(s));
    servers.push(silent);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
    const slow = await fanout({ rpcUrl: url, waitMs: 200, fetchTimeoutMs: 10_000 });
    const s = await started(slow, (x) => x.add('payer', [payer58], { matchLoaded: true }), 1);
    const after = plainTx([payer.publicKey.toBuffer(), testKey(1, 1)]);
    const t1 = performance.now();
    await slow.bus.produce(slow.cfg.topics.transactions, [recordOf(use.raw, BigInt(use.slot)), produceRecord(after)]);
    await s.waitUpdates(() => s.txs().length === 2, 'both transactions', 10_000);
    const held = performance.now() - t1;
    assert.deepEqual(s.sigs(), [hex(bs58.decode(use.sig)), hex(after.signature)], 'bus order: the table-less transaction waited behind the other');
    assert.deepEqual(loadedOf(s.txs()[0]!)!.unresolved, [lut.key.toBase58()]);
    assert.equal(loadedOf(s.txs()[1]!), null);
    assert.ok(held < 5_000, `bounded by waitMs, not by the 10 s fetch timeout (${held.toFixed(0)} ms)`);
    const cursors = s.txs().map((u) => hex(u.getCursor_asU8()));
    assert.notEqual(cursors[0], cursors[1]);
    assert.ok(seqsContiguous(s.updates));
    console.log(`      silent node: both records out ${held.toFixed(1)} ms after publishing (waitMs 200, fetch timeout 10,000), in bus order`);
  });
});
