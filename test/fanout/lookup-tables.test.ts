import assert from 'node:assert/strict';
import net from 'node:net';
import bs58 from 'bs58';
import {
  AddressLookupTableProgram, Keypair, PublicKey, SystemProgram, TransactionInstruction, TransactionMessage, VersionedTransaction,
  type AddressLookupTableAccount, type Connection,
} from '@solana/web3.js';
import { TOPIC } from '../../bus/topics';
import type { BusMessage } from '../../bus/bus';
import { encodeTxRecord } from '../../bus/topics/stream-transactions';
import { wireEncoder } from '../../fanout/v1/encoder';
import { isStreamError } from '../../fanout/errors';
import { Fanout } from '../../fanout/v1/hub';
import type { LoadedAddresses } from '../../fanout/filter/loaded-addresses';
import { openLookupTables, type LookupTables } from '../../fanout/lookup-tables/lookup-tables';
import { readLookups } from '../../fanout/lookup-tables/read-lookups';
import { tableId } from '../../fanout/lookup-tables/table-resolver';
import { metrics } from '../../infra/base/metrics';
import type { LocalChain } from '../../infra/local/chain';
import { decodeTransaction } from '../../proto/txn/decode';
import { encodeTransaction } from '../../proto/wire';
import type { TxFields } from '../../proto/tx-fields';
import { closeConnection, connect, payerOf, startNode } from '../infra/local/chain/support';
import { waitFor } from '../support/wait';
import { FakePort } from './fake-port';
import { feedOf, quietLog, testConfig } from './support';

// Lookup-table resolution against the local chain (litesvm runs the real ALT program): tables are created,
// extended and deactivated by transactions on the node; the cache fetches them from the node's JSON-RPC and
// follows the same transactions as the stream carries them (records made by ingest's decoder and encoder).

const topics = { transactions: TOPIC.streamTransactions, slots: TOPIC.streamSlots };
const b58 = (b: Uint8Array): string => bs58.encode(b);

interface Landed {
  sig: string;
  slot: number;
  raw: Buffer;
  loaded: { writable: string[]; readonly: string[] };
}

/** The stream.transactions record ingest would publish for this wire transaction. */
function recordOf(raw: Buffer, slot: bigint, signature?: Buffer): BusMessage {
  const d = decodeTransaction(raw, slot);
  assert.ok(d.ok, 'decodes');
  const value = encodeTxRecord({ slot, observedAtMs: Date.now(), accountKeys: d.staticKeys, message: encodeTransaction(d.tx) });
  return { topic: topics.transactions, partition: 0, offset: '0', key: signature ?? d.tx.signatures[0]!, value, headers: {}, timestamp: Date.now() };
}

/** A record of a v0 message built here (not sent to the chain): static keys, one transfer, the given lookups. */
function syntheticRecord(slot: bigint, payer: Buffer, lookups: TxFields['addressTableLookups']): BusMessage {
  const fields: TxFields = {
    slot,
    numRequiredSignatures: 1,
    numReadonlySignedAccounts: 0,
    numReadonlyUnsignedAccounts: 1,
    recentBlockhash: Buffer.alloc(32, 7),
    signatures: [Keypair.generate().secretKey.subarray(0, 64) as Buffer],
    accountKeys: [payer, SystemProgram.programId.toBuffer()],
    instructions: [{ programIdIndex: 1, accounts: Buffer.from([0, 2]), data: Buffer.alloc(12) }],
    addressTableLookups: lookups,
    versioned: true,
  };
  const value = encodeTxRecord({ slot, observedAtMs: Date.now(), accountKeys: Buffer.concat(fields.accountKeys), message: encodeTransaction(fields) });
  return { topic: topics.transactions, partition: 0, offset: '0', key: Buffer.from(fields.signatures[0]!), value, headers: {}, timestamp: Date.now() };
}

function unresolvedCount(reason: string): number {
  const m = new RegExp(`^meridian_fanout_lookup_unresolved_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(metrics.render());
  return m === null ? 0 : Number(m[1]);
}

function resolveNow(lt: LookupTables, raw: Buffer, slot: bigint): Promise<{ loaded: LoadedAddresses; sync: boolean; ms: number }> {
  const d = decodeTransaction(raw, slot);
  assert.ok(d.ok);
  const lookups = readLookups(encodeTransaction(d.tx));
  assert.ok(lookups !== null);
  return new Promise((resolve) => {
    let sync = true;
    const t0 = performance.now();
    lt.resolver.resolve(lookups, slot, (loaded) => resolve({ loaded, sync, ms: performance.now() - t0 }));
    sync = false;
  });
}

const names = (l: Buffer[]): string[] => l.map(b58);

describe('lookup-table resolution on the local chain', function () {
  this.timeout(120_000);
  let node: LocalChain;
  let conn: Connection;
  let payer: Keypair;
  const opened: LookupTables[] = [];
  const hubs: Fanout[] = [];

  const tables = (over: Record<string, unknown> = {}): LookupTables => {
    // A generous bound where a test compares with the chain (a loaded machine can take more than 50 ms to answer);
    // the tests of the bound itself set theirs.
    const lt = openLookupTables(testConfig({ lookupTables: { rpcUrl: node.httpUrl, matchV1: true, waitMs: 10_000, ...over } }).lookupTables);
    assert.ok(lt !== undefined);
    opened.push(lt);
    return lt;
  };

  before(async () => {
    ({ node } = await startNode({ slotMs: 50 }));
    conn = connect(node);
    payer = payerOf(node);
  });

  after(async () => {
    for (const h of hubs) h.close();
    for (const lt of opened) lt.close();
    closeConnection(conn);
    await node.close();
  });

  /** Sends, waits for confirmation, and returns what the node reports (raw bytes, slot, loadedAddresses). */
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

  /** Creates and extends a table in one transaction; returns it once its addresses are usable. */
  async function makeTable(addresses: PublicKey[]): Promise<{ lut: AddressLookupTableAccount; landed: Landed }> {
    const recentSlot = await conn.getSlot('finalized');
    const [create, table] = AddressLookupTableProgram.createLookupTable({ authority: payer.publicKey, payer: payer.publicKey, recentSlot });
    const extend = AddressLookupTableProgram.extendLookupTable({ lookupTable: table, authority: payer.publicKey, payer: payer.publicKey, addresses });
    const landed = await send([create, extend]);
    await waitFor(() => node.slot() > landed.slot + 1, 10_000, 'a slot after the extension');
    const lut = (await conn.getAddressLookupTable(table)).value;
    assert.ok(lut !== null);
    return { lut, landed };
  }

  const fresh = (): PublicKey => Keypair.generate().publicKey;

  /** Transfer to `dest` and name `readonly` accounts read-only (the System program ignores extra accounts). */
  const transferIx = (dest: PublicKey, readonly: PublicKey[] = []): TransactionInstruction => {
    const ix = SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: dest, lamports: 1_000_000 });
    ix.keys.push(...readonly.map((pubkey) => ({ pubkey, isSigner: false, isWritable: false })));
    return ix;
  };

  it('resolves a v0 transaction over two tables exactly as the node\'s getTransaction reports loadedAddresses', async () => {
    const [d1, d2, r1, r2, r3] = [fresh(), fresh(), fresh(), fresh(), fresh()];
    const a = await makeTable([r1, d1, r2]);
    const b = await makeTable([d2, r3]);
    const landed = await send([transferIx(d1, [r2, r3]), transferIx(d2, [r1])], [a.lut, b.lut]);
    assert.equal(landed.loaded.writable.length + landed.loaded.readonly.length, 5, 'every account came through a table');

    const lt = tables();
    const first = await resolveNow(lt, landed.raw, BigInt(landed.slot));
    assert.equal(first.sync, false, 'unknown tables: fetched');
    assert.deepEqual({ writable: names(first.loaded.writable), readonly: names(first.loaded.readonly) }, landed.loaded);
    assert.deepEqual(first.loaded.unresolvedTables, []);
    const again = await resolveNow(lt, landed.raw, BigInt(landed.slot));
    assert.equal(again.sync, true, 'held tables: answered at once');
    assert.deepEqual({ writable: names(again.loaded.writable), readonly: names(again.loaded.readonly) }, landed.loaded);
    console.log(`      first resolution (two tables fetched): ${first.ms.toFixed(2)} ms; held: ${again.ms.toFixed(3)} ms`);
  });

  it('v1 with matchV1: a filter on an account reached only through a table gets the transaction, bytes unchanged; follows the stream\'s create+extend before the node confirms it', async () => {
    const lt = tables({ confirmMs: 60_000 }); // no confirmation round in this test: the stream alone feeds the view
    const hub = new Fanout(testConfig({ topics, heartbeatMs: 60_000, lookupTables: { rpcUrl: node.httpUrl, matchV1: true } }), wireEncoder, quietLog(), Date.now, lt);

    hubs.push(hub);
    const port = new FakePort();
    const s = hub.open(port);
    assert.ok(!isStreamError(s));
    const dest = fresh();
    s.handle({ filters: [['dest', { include: [dest.toBase58()], exclude: [], required: [] }]], pingId: undefined, newSeenSlots: undefined });

    const { lut, landed: made } = await makeTable([fresh(), dest]);
    // The stream carries the create+extend transaction: the cache takes the table from it, without a fetch.
    feedOf(hub, lt)([recordOf(made.raw, BigInt(made.slot))]);
    const id = tableId(lut.key.toBuffer(), 0);
    const e = lt.cache.peek(id);
    assert.ok(e !== undefined && e.state === 'held' && e.pendingSlot === BigInt(made.slot));
    assert.equal(e.view!.addresses.length, 64);

    // Used in the slot of its extension: the chain's rule leaves the new addresses unusable; marked and counted.
    const indexBefore = unresolvedCount('index');
    feedOf(hub, lt)([syntheticRecord(BigInt(made.slot), payer.publicKey.toBuffer(), [{ accountKey: lut.key.toBuffer(), writableIndexes: Buffer.from([1]), readonlyIndexes: Buffer.alloc(0) }])]);
    assert.equal(port.written.length, 0, 'not delivered: index 1 is not usable in the extension\'s own slot');
    assert.equal(unresolvedCount('index'), indexBefore + 1);

    // The real transfer, a later slot: delivered synchronously from the stream's view (no fetch).
    const landed = await send([transferIx(dest)], [lut]);
    assert.deepEqual(landed.loaded.writable, [dest.toBase58()]);
    feedOf(hub, lt)([recordOf(landed.raw, BigInt(landed.slot))]);
    assert.equal(port.written.length, 1, 'delivered at once');

    // The default (matchV1 off) keeps the contract's v1 semantics: static keys only, so the same filter sees nothing.
    const plainHub = new Fanout(testConfig({ topics, heartbeatMs: 60_000, lookupTables: { rpcUrl: node.httpUrl } }), wireEncoder, quietLog(), Date.now, lt);

    hubs.push(plainHub);
    const plainPort = new FakePort();
    const ps = plainHub.open(plainPort);
    assert.ok(!isStreamError(ps));
    ps.handle({ filters: [['dest', { include: [dest.toBase58()], exclude: [], required: [] }]], pingId: undefined, newSeenSlots: undefined });
    feedOf(plainHub, lt)([recordOf(landed.raw, BigInt(landed.slot))]);
    assert.equal(plainPort.written.length, 0, 'matchV1 off: not matched');
    const sent = port.written[0]!;
    // The v1 response is the ingest message as it is: no loaded address inside, the lookup as table + indexes.
    const d = decodeTransaction(landed.raw, BigInt(landed.slot));
    assert.ok(d.ok);
    assert.ok(sent.includes(encodeTransaction(d.tx)), 'the transaction message bytes unchanged');
    assert.equal(sent.includes(dest.toBuffer()), false, 'the loaded address is not added to the response');
  });

  it('the pending view from the stream becomes the node\'s view once the node confirms a slot at or after the change', async () => {
    const lt = tables({ confirmMs: 50 });
    const hub = new Fanout(testConfig({ topics, heartbeatMs: 60_000, lookupTables: { rpcUrl: node.httpUrl, matchV1: true } }), wireEncoder, quietLog(), Date.now, lt);

    hubs.push(hub);
    const { lut, landed } = await makeTable([fresh(), fresh(), fresh()]);
    feedOf(hub, lt)([recordOf(landed.raw, BigInt(landed.slot))]);
    const e = lt.cache.peek(tableId(lut.key.toBuffer(), 0))!;
    const pendingView = e.view!;
    await waitFor(() => e.pendingSlot < 0n, 20_000, 'confirmation by the node');
    assert.notEqual(e.view, pendingView, 'replaced by the node\'s answer');
    assert.deepEqual(e.view, { ...pendingView, addresses: e.view!.addresses });
    assert.ok(e.view!.addresses.equals(pendingView.addresses), 'the stream-built view was the chain\'s');
  });

  it('a deactivated table resolves through its cool-down as the chain does, and not after it', async () => {
    const dest = fresh();
    const { lut } = await makeTable([dest]);
    const deact = await send([AddressLookupTableProgram.deactivateLookupTable({ lookupTable: lut.key, authority: payer.publicKey })]);
    await waitFor(() => node.slot() > deact.slot + 1, 10_000, 'a slot after the deactivation');
    const landed = await send([transferIx(dest)], [lut]); // the chain still loads it (deactivating)
    assert.deepEqual(landed.loaded.writable, [dest.toBase58()]);
    const lt = tables();
    const r = await resolveNow(lt, landed.raw, BigInt(landed.slot));
    assert.deepEqual(names(r.loaded.writable), landed.loaded.writable);
    assert.equal(lt.cache.peek(tableId(lut.key.toBuffer(), 0))!.view!.deactivationSlot, BigInt(deact.slot));
    const late = await resolveNow(lt, landed.raw, BigInt(deact.slot) + 513n);
    assert.equal(late.sync, true);
    assert.deepEqual(late.loaded.writable, []);
    assert.deepEqual(names(late.loaded.unresolvedTables), [lut.key.toBase58()]);
  });

  it('an index beyond the table\'s length: the chain refuses the transaction; the resolver leaves that table unresolved and loads the others', async () => {
    const [x, y, z] = [fresh(), fresh(), fresh()];
    const a = await makeTable([x, y]);
    const b = await makeTable([z]);
    // The chain's answer to index 5 of a two-address table.
    const { blockhash } = await conn.getLatestBlockhash();
    const msg = new TransactionMessage({ payerKey: payer.publicKey, recentBlockhash: blockhash, instructions: [transferIx(x, [z])] }).compileToV0Message([a.lut, b.lut]);
    const bad = msg.addressTableLookups.find((l) => l.accountKey.equals(a.lut.key))!;
    bad.writableIndexes = [5];
    const tx = new VersionedTransaction(msg);
    tx.sign([payer]);
    await assert.rejects(conn.sendTransaction(tx), /invalid|index|lookup/i);

    const lt = tables();
    const r = await resolveNow(lt, Buffer.from(tx.serialize()), BigInt(node.slot()));
    assert.deepEqual(names(r.loaded.unresolvedTables), [a.lut.key.toBase58()]);
    assert.deepEqual(r.loaded.writable, []);
    assert.deepEqual(names(r.loaded.readonly), [z.toBase58()]);
  });

  it('a chain node that is down or silent: resolution ends within the bound with the tables flagged, and the stream does not stall', async () => {
    const { lut, landed } = await makeTable([fresh()]);
    const use = await send([transferIx(lut.state.addresses[0]!)], [lut]);
    assert.ok(landed.slot < use.slot);

    // Refused connections (nothing listens): the fetch fails at once.
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const downUrl = `http://127.0.0.1:${(closed.address() as net.AddressInfo).port}`;
    await new Promise<void>((r) => closed.close(() => r()));
    const down = tables({ rpcUrl: downUrl, waitMs: 50, retryMs: 60_000 });
    const r1 = await resolveNow(down, use.raw, BigInt(use.slot));
    assert.deepEqual(names(r1.loaded.unresolvedTables), [lut.key.toBase58()]);
    await waitFor(() => down.cache.peek(tableId(lut.key.toBuffer(), 0))?.state === 'failed', 10_000, 'the refused fetch');
    const r2 = await resolveNow(down, use.raw, BigInt(use.slot));
    assert.equal(r2.sync, true, 'a failed table is not waited for again before retryMs');

    // A node that accepts and never answers: the bound (waitMs), not the fetch timeout (10 s), ends the wait.
    const sockets: net.Socket[] = [];
    const silent = net.createServer((s) => sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    try {
      const url = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
      const alone = tables({ rpcUrl: url, waitMs: 50, fetchTimeoutMs: 10_000 });
      const r = await resolveNow(alone, use.raw, BigInt(use.slot));
      assert.deepEqual(names(r.loaded.unresolvedTables), [lut.key.toBase58()]);
      assert.ok(r.ms < 5_000, `bounded by waitMs, not by the 10 s fetch timeout (${r.ms.toFixed(0)} ms)`);
      console.log(`      silent node: resolution answered after ${r.ms.toFixed(1)} ms (waitMs 50; fetch timeout 10,000), table flagged`);

      const lt = tables({ rpcUrl: url, waitMs: 50, fetchTimeoutMs: 10_000 });
      const hub = new Fanout(testConfig({ topics, heartbeatMs: 60_000, lookupTables: { rpcUrl: url, matchV1: true, waitMs: 50 } }), wireEncoder, quietLog(), Date.now, lt);

      hubs.push(hub);
      const port = new FakePort();
      const s = hub.open(port);
      assert.ok(!isStreamError(s));
      s.handle({ filters: [['payer', { include: [payer.publicKey.toBase58()], exclude: [], required: [] }]], pingId: undefined, newSeenSlots: undefined });
      const t0 = performance.now();
      feedOf(hub, lt)([recordOf(use.raw, BigInt(use.slot))]);
      assert.equal(port.written.length, 0, 'waits for its table');
      // A transaction without tables behind it is not held up.
      const plain = await send([SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: fresh(), lamports: 1_000_000 })]);
      feedOf(hub, lt)([recordOf(plain.raw, BigInt(plain.slot))]);
      assert.equal(port.written.length >= 1, true, 'the table-less transaction went out at once');
      await waitFor(() => port.written.length === 2, 5_000, 'the waiting transaction, matched on its static keys');
      const waited = performance.now() - t0;
      assert.ok(waited < 5_000, `bounded by waitMs, not by the 10 s fetch timeout (${waited.toFixed(0)} ms)`);
      console.log(`      silent node, through the hub: the waiting transaction went out ${waited.toFixed(1)} ms after it arrived (a table-less one sent and confirmed in between)`);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });
});
