import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import bs58 from 'bs58';
import { Keypair, SystemProgram, Transaction, type TransactionInstruction } from '@solana/web3.js';
import { encodeTxRecord } from '../../../bus/topics/stream-transactions';
import { decodeTransaction } from '../../../proto/txn/decode';
import { encodeTransaction } from '../../../proto/wire';
import { cliCommand } from '../../support/paths';
import { waitFor } from '../../support/wait';
import { makeTx, startTestFanout, testKey, testKey58, type TestFanout } from '../support';

// `meridian subscribe --v2`: prints updates with their cursors, and a later run resumes from the last one with
// --from-cursor and prints exactly what it missed.

interface Run {
  out: () => string;
  err: () => string;
  stop: () => Promise<number | null>;
  exited: Promise<number | null>;
}

function runCli(args: string[]): Run {
  const { cmd, args: pre } = cliCommand();
  const child = spawn(cmd, [...pre, 'subscribe', '--v2', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const closed = new Promise<number | null>((r) => child.on('close', r));
  return {
    out: () => out,
    err: () => err,
    stop: () => {
      child.kill('SIGINT');
      return closed;
    },
    exited: closed,
  };
}

type Line = { seq: number; cursor: string; slot?: number; signature?: string; filters?: string[]; replayComplete?: unknown };

describe('meridian subscribe --v2', function () {
  this.timeout(60_000);
  let f: TestFanout;
  before(async () => (f = await startTestFanout()));
  after(async () => f.close());

  it('prints transactions with cursors; --from-cursor resumes with exactly what was missed', async () => {
    const key = testKey(9, 4242);
    const a = runCli(['--url', f.address, '--include', testKey58(9, 4242), '--json']);
    await waitFor(() => a.err().includes('subscribed'), 20_000, 'subscribed');
    await waitFor(() => f.fanout.v2Stats()!.streams === 1, 5000, 'stream open');
    const first = Array.from({ length: 3 }, () => makeTx({ keys: [key], slot: 77n }));
    await f.publishTx(...first);
    await waitFor(() => a.out().trim().split('\n').length >= 3, 20_000, 'three lines');
    assert.equal(await a.stop(), 0, a.err());
    const lines = a.out().trim().split('\n').map((l) => JSON.parse(l) as Line);
    assert.deepEqual(lines.map((l) => l.signature), first.map((t) => bs58.encode(t.signature)));
    // Without --verbose the acknowledgement (seq 1) and heartbeats are not printed; transactions are in seq order.
    assert.ok(lines.every((l, i) => i === 0 || l.seq > lines[i - 1]!.seq) && lines[0]!.seq >= 2);
    assert.deepEqual(lines[0]!.filters, ['cli']);
    const missed = Array.from({ length: 2 }, () => makeTx({ keys: [key], slot: 78n }));
    await f.publishTx(...missed);
    const b = runCli(['--url', f.address, '--include', testKey58(9, 4242), '--json', '--from-cursor', lines[2]!.cursor]);
    await waitFor(() => b.out().includes('replayComplete'), 20_000, 'replay complete');
    assert.equal(await b.stop(), 0, b.err());
    const again = b.out().trim().split('\n').map((l) => JSON.parse(l) as Line);
    assert.deepEqual(again.filter((l) => l.signature !== undefined).map((l) => l.signature), missed.map((t) => bs58.encode(t.signature)));
  });

  it('a cursor from before a restart (another bus): exit 1 with FAILED_PRECONDITION, and the options to start from the oldest point, which work', async () => {
    const key = testKey(9, 4343);
    const prev = await startTestFanout({ topics: f.cfg.topics }); // the same topics, on a bus of its own: a run before
    const a = runCli(['--url', prev.address, '--include', testKey58(9, 4343), '--json']);
    await waitFor(() => a.err().includes('subscribed'), 20_000, 'subscribed');
    await waitFor(() => prev.fanout.v2Stats()!.streams === 1, 5000, 'stream open');
    await prev.publishTx(...Array.from({ length: 2 }, () => makeTx({ keys: [key], slot: 79n })));
    await waitFor(() => a.out().trim().split('\n').length >= 2, 20_000, 'two lines');
    assert.equal(await a.stop(), 0, a.err());
    await prev.close();
    const old = (JSON.parse(a.out().trim().split('\n')[0]!) as Line).cursor;
    const now = Array.from({ length: 3 }, () => makeTx({ keys: [key], slot: 80n }));
    await f.publishTx(...now);
    const b = runCli(['--url', f.address, '--include', testKey58(9, 4343), '--json', '--from-cursor', old]);
    assert.equal(await b.exited, 1, b.err());
    assert.match(b.err(), /stream ended FAILED_PRECONDITION \(9\): cursor is not a position in the log this server reads/);
    assert.equal(b.out(), '', 'nothing served');
    const hinted = /--from-cursor ([A-Za-z0-9_-]+)/.exec(b.err())![1]!;
    const c = runCli(['--url', f.address, '--include', testKey58(9, 4343), '--json', '--from-cursor', hinted]);
    await waitFor(() => c.out().includes('replayComplete'), 20_000, 'replay complete');
    assert.equal(await c.stop(), 0, c.err());
    const got = c.out().trim().split('\n').map((l) => JSON.parse(l) as Line).filter((l) => l.signature !== undefined);
    assert.deepEqual(got.map((l) => l.signature), now.map((t) => bs58.encode(t.signature)));
  });

  it('refuses --from-slot without --v2 and two starts at once (exit 2)', async () => {
    const { cmd, args: pre } = cliCommand();
    for (const args of [['subscribe', '--from-slot', '5'], ['subscribe', '--v2', '--from-slot', '5', '--from-cursor', 'AQ']]) {
      const child = spawn(cmd, [...pre, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const code = await new Promise<number | null>((r) => child.on('close', r));
      assert.equal(code, 2, err);
    }
  });

  it('--program with --data-prefix, --signer, --writable, --signature: prints only what they match; a bad value is refused with its reason (exit 1)', async () => {
    const payer = Keypair.fromSeed(new Uint8Array(32).fill(21));
    const dest = Keypair.fromSeed(new Uint8Array(32).fill(22)).publicKey;
    const wire = (ixs: TransactionInstruction[]): { raw: Buffer; sig: string } => {
      const tx = new Transaction({ feePayer: payer.publicKey, recentBlockhash: bs58.encode(Buffer.alloc(32, 0x11)) }).add(...ixs);
      tx.sign(payer);
      return { raw: tx.serialize(), sig: bs58.encode(tx.signature!) };
    };
    const transfer = wire([SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: dest, lamports: 5 })]);
    // Allocate (data 08000000…) with dest writable beside it: payer signs, dest is writable; only the prefix differs.
    const alloc = SystemProgram.allocate({ accountPubkey: payer.publicKey, space: 8 });
    alloc.keys.push({ pubkey: dest, isSigner: false, isWritable: true });
    const create = wire([alloc]);
    const record = (raw: Buffer) => {
      const d = decodeTransaction(raw, 77n);
      assert.ok(d.ok);
      return { key: d.tx.signatures[0]!, value: encodeTxRecord({ slot: 77n, observedAtMs: Date.now(), accountKeys: d.staticKeys, message: encodeTransaction(d.tx) }) };
    };
    const a = runCli(['--url', f.address, '--json', '--program', SystemProgram.programId.toBase58(), '--data-prefix', '02000000', '--signer', payer.publicKey.toBase58(), '--writable', dest.toBase58()]);
    const b = runCli(['--url', f.address, '--json', '--signature', create.sig]);
    await waitFor(() => /subscribed/.test(a.err()) && /subscribed/.test(b.err()), 20_000, 'both subscribed');
    await waitFor(() => f.fanout.v2Stats()!.streams >= 2, 5000, 'both open');
    await f.bus.produce(f.cfg.topics.transactions, [record(create.raw), record(transfer.raw)]);
    await waitFor(() => a.out().trim() !== '' && b.out().trim() !== '', 20_000, 'a line each');
    const sigsOf = (out: string): string[] => out.trim().split('\n').map((l) => (JSON.parse(l) as Line).signature!);
    assert.deepEqual(sigsOf(b.out()), [create.sig]);
    assert.deepEqual(sigsOf(a.out()), [transfer.sig], 'the transfer (data 02000000…) only, not Allocate (08000000…)');
    assert.equal(await a.stop(), 0);
    assert.equal(await b.stop(), 0);
    const bad = runCli(['--url', f.address, '--program', 'not-a-key0']);
    assert.equal(await bad.exited, 1);
    assert.match(bad.err(), /refused \(invalid_pubkey\)/);
  });
});

