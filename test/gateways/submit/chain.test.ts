import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import bs58 from 'bs58';
import { Connection, Keypair, LAMPORTS_PER_SOL, SystemProgram, Transaction, TransactionInstruction } from '@solana/web3.js';
import { EmbeddedBus } from '../../../bus/embedded';
import { emptyRegistry } from '../../../bus/rental-registry';
import { defaultTopicSpecs } from '../../../bus/topics';
import { parseFanoutConfig } from '../../../fanout/config';
import { startFanout, type FanoutHandle } from '../../../fanout/server';
import { startLocalChain, type LocalChain } from '../../../infra/local/chain';
import { Registry } from '../../../infra/base/metrics';
import { parseIngestConfig } from '../../../ingest/config';
import { startIngest, type RunningIngest } from '../../../ingest/worker';
import { quietLog } from '../../support/log-capture';
import { StreamClient } from '../../support/stream-client';
import { waitFor } from '../../support/wait';
import { post, rpc, sendTx, startHarness, type Harness } from './harness';
import { legacyTx, lookupTable, MIN_TIP, TIP_ACCOUNTS, v0Tx } from './support';
import { keypairFromSeed } from '../../../infra/base/keypair';
import { v1TipTx } from './v1-support';

// Against the local chain node: real signed transactions with fresh, funded keypairs and real blockhashes,
// forwarded by the RPC forwarder to the node; the node shreds its blocks into ingest, ingest publishes
// stream.transactions on the bus, the fanout serves them over gRPC and the submission service's delivery feed
// marks them delivered. Every rejection row is checked to have never reached the chain.

describe('submit against the local chain node', function () {
  this.timeout(120_000);
  let bus: EmbeddedBus;
  let ingest: RunningIngest;
  let chain: LocalChain;
  let fanout: FanoutHandle;
  let h: Harness;
  let conn: Connection;
  let faucet: Keypair;
  const clients: StreamClient[] = [];

  before(async () => {
    const { log } = quietLog('warn');
    bus = new EmbeddedBus({ log });
    await bus.createTopics(defaultTopicSpecs());
    ingest = await startIngest(parseIngestConfig({ listen: '127.0.0.1:0', shredVersion: 'any', leader: { mode: 'off' } }), bus, log, { registry: new Registry() });
    chain = await startLocalChain({ port: 0, shredTo: `${ingest.address.host}:${ingest.address.port}`, log });
    fanout = await startFanout(parseFanoutConfig({ listen: '127.0.0.1:0' }), bus, emptyRegistry(), log);
    h = await startHarness({ upstreams: [chain.httpUrl], bus, config: { preflight: { timeoutMs: 5000 } } });
    conn = new Connection(chain.httpUrl, 'processed');
    faucet = Keypair.fromSecretKey(chain.payer);
  });
  after(async () => {
    for (const c of clients) c.call.cancel();
    await h?.close();
    await fanout?.close();
    await chain?.close();
    await ingest?.close();
    await bus?.close();
  });

  const blockhash = async (): Promise<string> => (await conn.getLatestBlockhash('processed')).blockhash;
  const sig58 = (tx: Buffer): string => bs58.encode(tx.subarray(1, 65));
  const landed = async (sig: string): Promise<boolean> => (await conn.getSignatureStatuses([sig])).value[0] !== null;
  const forwardsSent = (): number => h.service.pipeline.metrics.forwarded.value;

  /** A fresh keypair funded from the node's faucet (sent to the node directly, not through the service). */
  async function funded(lamports = LAMPORTS_PER_SOL): Promise<Keypair> {
    const kp = Keypair.generate();
    const t = new Transaction({ feePayer: faucet.publicKey, recentBlockhash: await blockhash() }).add(SystemProgram.transfer({ fromPubkey: faucet.publicKey, toPubkey: kp.publicKey, lamports }));
    t.sign(faucet);
    const sig = await conn.sendRawTransaction(t.serialize(), { skipPreflight: true });
    await waitFor(() => landed(sig), 20_000, 'funding transfer', 100);
    return kp;
  }

  /**
   * The fence for "never reached the chain": a valid transaction from `payer` sent through the service after
   * everything before it, until it has landed. A forward dispatched earlier left for the node before this one
   * did, so it has had its chance to land by then. (The exact check that nothing was dispatched is the forward
   * count, taken synchronously; this is the chain's own word on it.)
   */
  async function fenceLanded(payer: Keypair): Promise<void> {
    const fence = legacyTx({ payer, blockhash: await blockhash() });
    const sent = forwardsSent();
    const r = await post(h, '/binary', fence);
    assert.deepEqual([r.status, r.text], [200, sig58(fence)]);
    assert.equal(forwardsSent(), sent + 1);
    await waitFor(() => landed(sig58(fence)), 20_000, 'the fence transaction to land', 100);
  }

  it('a transaction accepted on /binary lands on the chain and reaches a gRPC subscriber; after delivery a resend is suppressed', async () => {
    const payer = await funded();
    const sub = StreamClient.open(fanout.address);
    clients.push(sub);
    sub.send({ transactions: { mine: { accountInclude: [payer.publicKey.toBase58()] } }, pingId: 1 });
    await sub.waitFor((r) => r.pingId === 1, 10_000);

    const tx = legacyTx({ payer, blockhash: await blockhash() });
    const marks = h.service.pipeline.metrics.deliveredMarks.value;
    const r = await post(h, '/binary', tx);
    assert.deepEqual([r.status, r.text], [200, sig58(tx)]);

    const fetchTx = () => conn.getTransaction(r.text, { maxSupportedTransactionVersion: 0, commitment: 'confirmed' });
    await waitFor(async () => (await fetchTx()) !== null, 20_000, 'getTransaction to find it', 100);
    const got = await fetchTx();
    assert.ok(got !== null);
    assert.equal(got.meta?.err, null);
    assert.equal(got.transaction.signatures[0], r.text);
    assert.equal((await conn.getBalance(TIP_ACCOUNTS[0]!)) >= MIN_TIP, true, 'the tip was paid');

    const streamed = await sub.waitFor((x) => x.transaction?.signature === r.text, 20_000);
    assert.equal(streamed.filters.length, 1);
    assert.deepEqual(streamed.filters, ['mine']);

    await waitFor(() => h.service.pipeline.metrics.deliveredMarks.value > marks, 20_000, 'the delivery mark');
    const sent = forwardsSent();
    const dup = h.service.pipeline.metrics.value('binary', 'duplicate');
    const again = await post(h, '/binary', tx);
    assert.deepEqual([again.status, again.text], [200, r.text]);
    assert.equal(h.service.pipeline.metrics.value('binary', 'duplicate'), dup + 1);
    assert.equal(forwardsSent(), sent, 'not forwarded after delivery');
  });

  it('a resend before delivery is forwarded again (a transaction the chain cannot land yet is never marked)', async () => {
    const payer = await funded();
    // A blockhash the node does not know: the node drops it, so it never appears on the stream.
    const tx = legacyTx({ payer });
    const sent = forwardsSent();
    const dup = h.service.pipeline.metrics.value('binary', 'duplicate');
    for (let i = 0; i < 3; i++) assert.equal((await post(h, '/binary', tx)).status, 200);
    assert.equal(forwardsSent(), sent + 3);
    assert.equal(h.service.pipeline.metrics.value('binary', 'duplicate'), dup, 'no resend was suppressed');
  });

  it('v1 transactions land: /binary without preflight, JSON-RPC with a preflight the node simulates', async () => {
    const seed = crypto.randomBytes(32);
    const kp = keypairFromSeed(seed);
    const web3 = Keypair.fromSeed(seed);
    const fund = new Transaction({ feePayer: faucet.publicKey, recentBlockhash: await blockhash() }).add(SystemProgram.transfer({ fromPubkey: faucet.publicKey, toPubkey: web3.publicKey, lamports: LAMPORTS_PER_SOL }));
    fund.sign(faucet);
    const fsig = await conn.sendRawTransaction(fund.serialize(), { skipPreflight: true });
    await waitFor(() => landed(fsig), 20_000, 'funding transfer', 100);
    const sigOf = (tx: Buffer): string => bs58.encode(tx.subarray(tx.length - 64));
    const a = v1TipTx({ payer: kp, blockhash: Buffer.from(bs58.decode(await blockhash())) });
    const r = await post(h, '/binary', a);
    assert.deepEqual([r.status, r.text], [200, sigOf(a)]);
    const b = v1TipTx({ payer: kp, blockhash: Buffer.from(bs58.decode(await blockhash())) });
    const j = await rpc(h, sendTx(b.toString('base64'), { encoding: 'base64', skipPreflight: false }));
    assert.equal(j.json.result, sigOf(b));
    await waitFor(() => landed(sigOf(a)), 20_000, 'the /binary v1 transaction to land', 100);
    await waitFor(() => landed(sigOf(b)), 20_000, 'the JSON-RPC v1 transaction to land', 100);
    // Both paid 5,000 + the 5,000-lamport priority fee of their config and the tip.
    await waitFor(async () => (await conn.getBalance(web3.publicKey)) === LAMPORTS_PER_SOL - 2 * (10_000 + MIN_TIP), 20_000, 'the balance', 100);
  });

  it('v0 transactions over JSON-RPC land', async () => {
    const payer = await funded();
    const tx = v0Tx({ payer, blockhash: await blockhash() });
    const { status, json } = await rpc(h, sendTx(tx.toString('base64'), { encoding: 'base64' }));
    assert.equal(status, 200);
    assert.equal(json.result, sig58(tx));
    await waitFor(() => landed(sig58(tx)), 20_000, 'the v0 transaction', 100);
  });

  it('preflight that passes simulates on the node and forwards; the transaction lands', async () => {
    const payer = await funded();
    const tx = legacyTx({ payer, blockhash: await blockhash() });
    const { json } = await rpc(h, sendTx(bs58.encode(tx), { skipPreflight: false, preflightCommitment: 'processed' }));
    assert.equal(json.result, sig58(tx));
    await waitFor(() => landed(sig58(tx)), 20_000, 'the preflighted transaction', 100);
  });

  it('a real simulation failure: -32002 Transaction simulation failed, data = the node’s simulation result with logs; not forwarded', async () => {
    const payer = await funded(LAMPORTS_PER_SOL / 10);
    const tx = legacyTx({ payer, blockhash: await blockhash(), amount: 50 * LAMPORTS_PER_SOL });
    const sent = forwardsSent();
    const { status, json } = await rpc(h, sendTx(bs58.encode(tx), { skipPreflight: false }));
    assert.equal(status, 200);
    assert.equal(json.error?.code, -32002);
    assert.match(json.error!.message, /^Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1$/);
    const data = json.error!.data as { err: unknown; logs: string[]; unitsConsumed: number };
    assert.deepEqual(data.err, { InstructionError: [0, { Custom: 1 }] });
    assert.ok(Array.isArray(data.logs) && data.logs.length > 0);
    assert.ok(data.logs.some((l) => /insufficient lamports/.test(l)), data.logs.join('\n'));
    assert.equal(typeof data.unitsConsumed, 'number');
    assert.equal(forwardsSent(), sent);
    await fenceLanded(payer);
    assert.equal(await landed(sig58(tx)), false);
  });

  it('every rejection row: the contract answer, and nothing reaches the chain', async () => {
    const payer = await funded();
    const bh = await blockhash();
    const program = Keypair.generate().publicKey;
    const cpiData = Buffer.alloc(12);
    cpiData.writeUInt32LE(2, 0);
    cpiData.writeBigUInt64LE(BigInt(MIN_TIP), 4);
    const inner = new TransactionInstruction({ programId: program, data: cpiData, keys: [
      { pubkey: payer.publicKey, isSigner: true, isWritable: true },
      { pubkey: TIP_ACCOUNTS[0]!, isSigner: false, isWritable: true },
      { pubkey: SystemProgram.programId, isSigner: false, isWritable: false },
    ] });
    const half = SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: TIP_ACCOUNTS[0]!, lamports: MIN_TIP / 2 });
    const good = (): Buffer => legacyTx({ payer, blockhash: bh });
    const forged = good();
    forged[20]! ^= 0x10;
    const unsigned = ((): Buffer => {
      const co = Keypair.generate();
      const t = new Transaction({ feePayer: payer.publicKey, recentBlockhash: bh })
        .add(SystemProgram.transfer({ fromPubkey: co.publicKey, toPubkey: payer.publicKey, lamports: 1 }))
        .add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: TIP_ACCOUNTS[0]!, lamports: MIN_TIP }));
      t.partialSign(payer);
      return t.serialize({ requireAllSignatures: false });
    })();
    const g = good();
    const countMismatch = Buffer.concat([Buffer.from([2]), g.subarray(1, 65), Buffer.alloc(64, 1), g.subarray(65)]);

    const rows: Array<{ name: string; tx: Buffer; binary: [number, RegExp]; rpcCode: number }> = [
      { name: 'missing tip', tx: legacyTx({ payer, blockhash: bh, tip: null }), binary: [400, /^missing required tip/], rpcCode: -32602 },
      { name: 'tip too small', tx: legacyTx({ payer, blockhash: bh, tip: MIN_TIP - 1 }), binary: [400, /^tip below the required minimum/], rpcCode: -32602 },
      { name: 'two transfers adding up', tx: legacyTx({ payer, blockhash: bh, tip: MIN_TIP / 2, extra: [half] }), binary: [400, /^tip below the required minimum/], rpcCode: -32602 },
      { name: 'tip through a lookup table', tx: v0Tx({ payer, blockhash: bh, tables: [lookupTable([TIP_ACCOUNTS[0]!])] }), binary: [400, /^missing required tip/], rpcCode: -32602 },
      { name: 'tip in an inner instruction', tx: legacyTx({ payer, blockhash: bh, tip: null, extra: [inner] }), binary: [400, /^missing required tip/], rpcCode: -32602 },
      { name: 'forged signature', tx: forged, binary: [400, /^Transaction signature verification failure: signature 0$/], rpcCode: -32003 },
      { name: 'missing signature', tx: unsigned, binary: [400, /^Transaction signature verification failure: missing signature/], rpcCode: -32003 },
      { name: 'signature count mismatch', tx: countMismatch, binary: [400, /^signature count does not match/], rpcCode: -32602 },
      { name: 'cannot deserialize', tx: g.subarray(0, 100), binary: [400, /^failed to deserialize transaction/], rpcCode: -32602 },
    ];
    const sent = forwardsSent();
    for (const row of rows) {
      const b = await post(h, '/binary', row.tx);
      assert.equal(b.status, row.binary[0], row.name);
      assert.match(b.text, row.binary[1], row.name);
      const j = await rpc(h, sendTx(row.tx.toString('base64'), { encoding: 'base64' }));
      assert.equal(j.status, 200, row.name);
      assert.equal(j.json.error?.code, row.rpcCode, row.name);
      const p = await post(h, '/plaintext', row.tx.toString('base64'), h.key, 'text/plain');
      assert.deepEqual([p.status, p.text], [b.status, b.text], row.name);
    }
    assert.equal(forwardsSent(), sent, 'no rejected row was forwarded');
    await fenceLanded(payer);
    const statuses = (await conn.getSignatureStatuses(rows.map((r) => sig58(r.tx)))).value;
    assert.equal(statuses.length, rows.length);
    assert.ok(statuses.every((s) => s === null), 'none of them reached the chain');

    // The transport rows: unknown key, oversize, rate limit.
    const tx = good();
    assert.deepEqual([(await post(h, '/binary', tx, crypto.randomUUID())).status], [401]);
    assert.equal((await rpc(h, sendTx(bs58.encode(tx)), crypto.randomUUID())).status, 401);
    assert.deepEqual(Object.values(await post(h, '/binary', Buffer.concat([tx, Buffer.alloc(1232)]))).slice(0, 2), [413, 'request body too large']);
    const limited = await startHarness({ upstreams: [chain.httpUrl], bus, rental: { tps: 1 } });
    try {
      assert.equal((await post(limited, '/binary', legacyTx({ payer, blockhash: bh }))).status, 200);
      const j = await rpc(limited, sendTx(bs58.encode(legacyTx({ payer, blockhash: bh }))));
      assert.deepEqual([j.status, j.json.error], [429, { code: -32001, message: 'rate limit exceeded' }]);
    } finally {
      await limited.close();
    }
  });
});
