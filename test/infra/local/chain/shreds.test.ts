import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { Keypair, SystemProgram, Transaction } from '@solana/web3.js';
import bs58 from 'bs58';
import { leaderKeysFor, type LeaderScheduleHandle } from '../../../../ingest/leader-schedule';
import { Pipeline, type BatchOutput } from '../../../../ingest/pipeline';
import { fixedLeader } from '../../../../ingest/shred/leader-keys';
import { startLocalChain, type LocalChain } from '../../../../infra/local/chain';
import { verifyEntries } from '../../../../infra/local/chain/poh';
import { quietLog } from '../../../support/log-capture';
import { waitFor } from '../../../support/wait';
import { payerOf, rpc } from './support';

// The node's blocks as a shred feed: a real UDP socket receives them and the project's ingest pipeline (parse,
// Merkle proof, leader signature against the node's own leader schedule read over RPC, FEC, reassembly, entry
// and transaction decode) turns them back into the executed transactions, with PoH that verifies.

/** Each format's PoH: Alpenglow's low-power PoH has one tick, at the very end, and every entry one hash (Agave
 *  blockstore_processor.rs verify_ticks, should_have_alpenglow_ticks); tower-era PoH 64 ticks. */
function assertTicks(format: 'alpenglow' | 'tower', slot: bigint, entries: Array<{ numHashes: bigint; signatures: Buffer[] }>): void {
  const ticks = entries.filter((e) => e.signatures.length === 0);
  if (format === 'tower') {
    assert.equal(ticks.length, 64, `slot ${slot} has 64 ticks`);
    return;
  }
  assert.equal(ticks.length, 1, `slot ${slot} has one tick`);
  assert.equal(entries[entries.length - 1]!.signatures.length, 0, `slot ${slot} ends with its tick`);
  assert.ok(entries.every((e) => e.numHashes === 1n), `slot ${slot}: every entry has num_hashes 1`);
}

for (const format of ['alpenglow', 'tower'] as const)
describe(`local chain (${format} blocks): shreds into the ingest pipeline`, function () {
  let node: LocalChain;
  let socket: dgram.Socket;
  let leaders: LeaderScheduleHandle;
  const packets: Buffer[] = [];
  const batches: BatchOutput[] = [];
  const slotsSeen: bigint[] = [];
  let pipeline: Pipeline | null = null;

  before(async () => {
    socket = dgram.createSocket('udp4');
    socket.on('message', (m) => {
      packets.push(m);
      pipeline?.push(m, Date.now());
    });
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    // As ingest does (recvBufferBytes): the default ~200 KB overflows while a loaded machine stalls this loop.
    socket.setRecvBufferSize(8 * 1024 * 1024);
    const { port } = socket.address() as AddressInfo;
    node = await startLocalChain({ host: '127.0.0.1', port: 0, slotMs: 100, shredTo: `127.0.0.1:${port}`, blockFormat: format, log: quietLog().log });
    // ingest's `rpc` leader mode, pointed at the node.
    leaders = leaderKeysFor({ mode: 'rpc', rpcUrl: node.httpUrl, refreshMs: 1000 });
    await leaders.ready;
    pipeline = new Pipeline({
      shredVersion: node.shredVersion,
      leaders,
      sink: { batch: (b) => batches.push(b), slot: (s) => slotsSeen.push(s) },
    });
  });

  after(async () => {
    leaders.close();
    await node.close();
    await new Promise<void>((resolve) => socket.close(() => resolve()));
  });

  it('shreds every slot, signed by the identity the leader schedule names', async () => {
    await waitFor(() => slotsSeen.length >= 3 && pipeline!.stats().setsCompleted >= 3, 10_000, 'three slots through ingest');
    const stats = pipeline!.stats();
    assert.equal(stats.drops.signature, 0);
    assert.equal(stats.drops.leader_unknown, 0);
    assert.equal(stats.drops.merkle_proof, 0);
    assert.equal(stats.drops.shred_version, 0);
    assert.ok(stats.setsCompleted >= 3);
    for (const s of slotsSeen.slice(-3)) assert.equal(leaders.leaderFor(Number(s))!.toString('hex'), Buffer.from(bs58.decode(node.identity)).toString('hex'));
  });

  it('decodes the executed transactions, in their slots, from the shreds', async () => {
    const payer = payerOf(node);
    const sigs: string[] = [];
    for (let i = 0; i < 6; i++) {
      const tx = new Transaction().add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 1_000_000 + i }));
      tx.recentBlockhash = (await rpc(node.httpUrl, 'getLatestBlockhash')).result.value.blockhash;
      tx.feePayer = payer.publicKey;
      tx.sign(payer);
      const r = await rpc(node.httpUrl, 'sendTransaction', [tx.serialize().toString('base64'), { encoding: 'base64' }]);
      assert.equal(r.error, undefined);
      sigs.push(r.result);
    }
    const decoded = (): Map<string, bigint> => {
      const m = new Map<string, bigint>();
      for (const b of batches) for (const t of b.txs) m.set(bs58.encode(t.tx.signatures[0]!), b.batch.slot);
      return m;
    };
    await waitFor(() => sigs.every((s) => decoded().has(s)), 10_000, 'all six transactions decoded from shreds').catch((e: Error) => {
      throw new Error(`${e.message}; decoded ${sigs.filter((s) => decoded().has(s)).length}/6; pipeline ${JSON.stringify(pipeline!.stats())}`);
    });
    const seen = decoded();
    for (const s of sigs) {
      // Shreds leave mid-slot; getTransaction answers once the block is frozen.
      let got = await rpc(node.httpUrl, 'getTransaction', [s, { commitment: 'confirmed' }]);
      for (let i = 0; i < 100 && got.result === null; i++) {
        await new Promise((r) => setTimeout(r, 20));
        got = await rpc(node.httpUrl, 'getTransaction', [s, { commitment: 'confirmed' }]);
      }
      assert.ok(got.result !== null, `${s} confirmed`);
      assert.equal(got.result.slot, Number(seen.get(s)), `slot of ${s}`);
    }
    assert.ok(batches.every((b) => b.decode.ok), 'every batch decodes');
    // With a wrong leader key the same packets are refused: the signature check above was real.
    const spoofed = new Pipeline({ shredVersion: node.shredVersion, leaders: fixedLeader(Keypair.generate().publicKey.toBuffer()), sink: { batch: () => assert.fail('batch from a wrong leader'), slot: () => undefined } });
    for (const p of packets.slice(0, 200)) spoofed.push(p, Date.now());
    assert.ok(spoofed.stats().drops.signature > 0);
    assert.equal(spoofed.stats().batches, 0);
  });

  it('carries PoH entries that verify from the parent blockhash to the slot blockhash', async () => {
    const bySlot = new Map<bigint, BatchOutput[]>();
    for (const b of batches) {
      const list = bySlot.get(b.batch.slot) ?? [];
      list.push(b);
      bySlot.set(b.batch.slot, list);
    }
    const complete = [...bySlot.entries()].filter(([, list]) => {
      list.sort((a, b) => a.batch.firstShred - b.batch.firstShred);
      return list[0]!.batch.firstShred === 0 && list[list.length - 1]!.batch.lastInSlot && list.every((b, i) => i === 0 || b.batch.firstShred === list[i - 1]!.batch.lastShred + 1);
    });
    assert.ok(complete.length >= 3, `complete slots: ${complete.length}`);
    let withTxs = 0;
    for (const [slot, list] of complete) {
      const entries = list.flatMap((b) => b.entries).map((e) => ({ numHashes: e.numHashes, hash: Buffer.from(e.hash), signatures: e.txs.flatMap((t) => t.tx.signatures) }));
      assertTicks(format, slot, entries);
      if (entries.some((e) => e.signatures.length > 0)) withTxs++;
      const block = await rpc(node.httpUrl, 'getBlock', [Number(slot), { transactionDetails: 'none', rewards: false }]);
      assert.equal(bs58.encode(entries[entries.length - 1]!.hash), block.result.blockhash);
      assert.ok(verifyEntries(Buffer.from(bs58.decode(block.result.previousBlockhash)), entries), `PoH of slot ${slot} verifies`);
      assert.equal(verifyEntries(Buffer.alloc(32), entries), false);
    }
    assert.ok(withTxs >= 1, 'a verified slot carried transactions');
  });
});

for (const format of ['alpenglow', 'tower'] as const)
describe(`local chain (${format} blocks): shredTo() on a running node`, function () {
  it('shreds from the next whole slot on, to its one target', async () => {
    const node = await startLocalChain({ host: '127.0.0.1', port: 0, slotMs: 100, blockFormat: format, log: quietLog().log });
    const socket = dgram.createSocket('udp4');
    const batches: BatchOutput[] = [];
    let leaders: LeaderScheduleHandle | undefined;
    // Transactions all along, so slots are flushed in several batches and the attach falls mid-slot between them.
    let traffic = true;
    const airdrops = (async () => {
      while (traffic) await rpc(node.httpUrl, 'requestAirdrop', [Keypair.generate().publicKey.toBase58(), 1_000_000]);
    })();
    try {
      let pipeline: Pipeline | null = null;
      socket.on('message', (m) => pipeline?.push(m, Date.now()));
      await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
      socket.setRecvBufferSize(8 * 1024 * 1024);
      const { port } = socket.address() as AddressInfo;
      leaders = leaderKeysFor({ mode: 'rpc', rpcUrl: node.httpUrl, refreshMs: 1000 });
      await leaders.ready;
      const p = new Pipeline({ shredVersion: node.shredVersion, leaders, sink: { batch: (b) => batches.push(b), slot: () => undefined } });
      pipeline = p;
      // Mid-chain, as the launcher does once ingest listens, and mid-slot: half a slot after one began.
      await waitFor(() => node.slot() >= 3, 10_000, 'a few slots before any shred target');
      const slot = node.slot();
      await waitFor(() => node.slot() > slot, 1_000, 'the next slot', 1);
      await new Promise((r) => setTimeout(r, 50));
      node.shredTo(`127.0.0.1:${port}`);
      assert.throws(() => node.shredTo(`127.0.0.1:${port}`), /already shredding/);
      await waitFor(() => batches.filter((b) => b.batch.lastInSlot).length >= 2, 10_000, 'two slots shredded');
      traffic = false;
      await airdrops;
      assert.equal(p.stats().drops.signature, 0);

      // The first slot shredded is whole: its entries start at its first tick, so PoH verifies from the parent.
      const first = batches.map((b) => b.batch.slot).reduce((a, b) => (b < a ? b : a));
      const list = batches.filter((b) => b.batch.slot === first).sort((a, b) => a.batch.firstShred - b.batch.firstShred);
      assert.equal(list[0]!.batch.firstShred, 0);
      assert.ok(list[list.length - 1]!.batch.lastInSlot, `slot ${first} ends`);
      const entries = list.flatMap((b) => b.entries).map((e) => ({ numHashes: e.numHashes, hash: Buffer.from(e.hash), signatures: e.txs.flatMap((t) => t.tx.signatures) }));
      assertTicks(format, first, entries);
      const block = await rpc(node.httpUrl, 'getBlock', [Number(first), { transactionDetails: 'none', rewards: false }]);
      assert.ok(verifyEntries(Buffer.from(bs58.decode(block.result.previousBlockhash)), entries), `PoH of slot ${first} verifies`);
      assert.ok(list.length > 1 && entries.some((e) => e.signatures.length > 0), `slot ${first} came in ${list.length} batches, with transactions`);
    } finally {
      traffic = false;
      await airdrops;
      leaders?.close();
      await node.close();
      await new Promise<void>((resolve) => socket.close(() => resolve()));
    }
    assert.throws(() => node.shredTo('127.0.0.1:1'), /closed/);
  });
});
