import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { Keypair, SystemProgram, Transaction, TransactionInstruction } from '@solana/web3.js';
import { QUIC_STATUS } from '../../../gateways/submit/rejections';
import { ensureTerminatorBinary, PROBE_BIN, TERMINATOR_BIN } from '../../../gateways/submit/quic/terminator-build';
import { keypairFromSeed, sign } from '../../../infra/base/keypair';
import { waitFor } from '../../support/wait';
import { fakeBlockhash, legacyTx, MIN_TIP, TIP_ACCOUNTS } from '../submit/support';
import { startUpstream, type Upstream } from '../submit/upstream';
import { startQuicHarness, type QuicHarness } from './harness';
import { hex, Probe } from './probe';

// Submission over QUIC end to end on loopback: the published SDK (`falcon-client`, through the probe) and a
// quinn client configured like it, against the QUIC terminator in front of the real submission pipeline,
// which forwards to a recording chain RPC upstream (the local-chain test is in landing.test.ts).

const PAD_PROGRAM = Keypair.generate().publicKey;

/** A signed legacy transaction (transfer + minimum tip) padded with a data-only instruction to exactly `size` bytes. */
export function txOfSize(size: number): Buffer {
  const seed = crypto.randomBytes(32);
  const kp = keypairFromSeed(seed);
  const payer = Keypair.fromSeed(seed);
  let pad = 0;
  for (;;) {
    const t = new Transaction({ feePayer: payer.publicKey, recentBlockhash: fakeBlockhash() });
    t.add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 1_000_000 }));
    t.add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: TIP_ACCOUNTS[0]!, lamports: MIN_TIP }));
    t.add(new TransactionInstruction({ programId: PAD_PROGRAM, keys: [], data: Buffer.alloc(pad, 7) }));
    // Signed by hand: web3.js refuses to serialize above 1,232 bytes, and the 1,233-byte case must be real too.
    const message = t.compileMessage().serialize();
    const wire = Buffer.concat([Buffer.from([1]), sign(kp, message), message]);
    if (wire.length === size) return wire;
    pad += size - wire.length;
    if (pad < 0) throw new Error(`cannot make a ${size}-byte transaction`);
  }
}

describe('submission over QUIC', function () {
  let up: Upstream;
  let h: QuicHarness;
  let sdk: Probe;
  let raw: Probe;

  before(async function () {
    this.timeout(30 * 60_000); // a fresh machine builds the terminator and the SDK client with cargo first
    await ensureTerminatorBinary(TERMINATOR_BIN);
    await ensureTerminatorBinary(PROBE_BIN);
    up = await startUpstream();
    h = await startQuicHarness({ upstreams: [up.url], quic: { maxConnectionsPerKey: 4 } });
    sdk = await Probe.start();
    raw = await Probe.start();
    assert.equal(await sdk.ok(`sdk connect ${h.addr} ${h.key}`), 'connected');
    assert.equal(await raw.ok(`raw connect ${h.addr} ${h.key}`), 'connected');
  });
  after(async () => {
    await sdk?.close();
    await raw?.close();
    await h?.close();
    await up?.close();
  });

  const sendsOf = (tx: Buffer): number => up.sends.filter((s) => s.tx.equals(tx)).length;
  const status = async (tx: Buffer): Promise<string> => raw.ok(`raw stream ${hex(tx)}`);
  const st = (s: number): string => `01${s.toString(16).padStart(2, '0')}`;

  it('the SDK connects with its Ed25519 certificate (CN = key), sends in stream mode and gets Ok; the transaction is forwarded', async () => {
    const tx = legacyTx();
    assert.equal(await sdk.ok(`sdk send ${hex(tx)}`), 'sent');
    await waitFor(() => sendsOf(tx) === 1, 5000, 'the forward');
    assert.ok(h.quic.metrics.value('admission', 'admitted') >= 2);
    assert.equal(await sdk.ok('sdk connected'), 'true');
  });

  it('an unknown key: the connection is closed with application code 1 "unknown api key" and nothing is forwarded', async () => {
    const p = await Probe.start();
    try {
      const refusedBefore = h.quic.metrics.value('admission', 'unknown_key');
      assert.equal(await p.ok(`raw connect ${h.addr} ${crypto.randomUUID()}`), 'connected'); // TLS completes first
      assert.equal(await p.ok('raw wait-close 3000'), 'app 1 unknown api key');
      // The SDK: connect succeeds, the first send fails (after its one reconnect-and-retry) with the reason.
      const tx = legacyTx();
      assert.equal(await p.ok(`sdk connect ${h.addr} ${crypto.randomUUID()}`), 'connected');
      const answer = await p.cmd(`sdk send ${hex(tx)}`);
      assert.match(answer, /^err .*unknown api key/);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(sendsOf(tx), 0);
      assert.equal(h.quic.metrics.value('admission', 'unknown_key'), refusedBefore + 3);
    } finally {
      await p.close();
    }
  });

  it('a client certificate that is not Ed25519 fails the handshake (the server closes with a TLS error)', async () => {
    const p = await Probe.start();
    try {
      const failed = h.quic.metrics.value('event', 'handshake_failed');
      // TLS 1.3: the client finishes before the server has judged its certificate, so connect itself succeeds.
      const answer = await p.cmd(`raw connect ${h.addr} ${h.key} ecdsa`);
      if (answer === 'ok connected') assert.match(await p.ok('raw wait-close 3000'), /^other .*(tls|crypto|handshake|certificate|signature)/i);
      else assert.match(answer, /^err /);
      await waitFor(() => h.quic.metrics.value('event', 'handshake_failed') === failed + 1, 5000, 'the failed handshake counted');
    } finally {
      await p.close();
    }
  });

  it('every status byte is reached by a real transaction, and the connection survives every rejection', async () => {
    const good = legacyTx();
    const unsigned = Buffer.from(legacyTx());
    unsigned.fill(0, 1, 65);
    const forged = Buffer.from(legacyTx());
    forged[10]! ^= 0xff;
    const noTip = legacyTx({ tip: null });
    const smallTip = legacyTx({ tip: MIN_TIP - 1 });
    const garbage = legacyTx().subarray(0, 120);
    const base = legacyTx();
    const countMismatch = Buffer.concat([Buffer.from([2]), base.subarray(1, 65), Buffer.alloc(64, 9), base.subarray(65)]);
    const big = txOfSize(1233);

    assert.equal(await status(good), st(QUIC_STATUS.accepted));
    assert.equal(await status(unsigned), st(QUIC_STATUS.unsigned));
    assert.equal(await status(forged), st(QUIC_STATUS.unsigned));
    assert.equal(await status(noTip), st(QUIC_STATUS.missingTip));
    assert.equal(await status(smallTip), st(QUIC_STATUS.missingTip));
    assert.equal(await status(garbage), st(QUIC_STATUS.cannotDeserialize));
    assert.equal(await status(big), st(QUIC_STATUS.tooLarge));
    assert.equal(await status(countMismatch), st(QUIC_STATUS.signatureCountMismatch));
    // Framing: a stream that does not start with 0x01, and an empty one, cannot be deserialized.
    assert.equal(await raw.ok(`raw streambytes 02${hex(good)}`), st(QUIC_STATUS.cannotDeserialize));
    assert.equal(await raw.ok('raw streambytes 01'), st(QUIC_STATUS.cannotDeserialize));

    // Rate limited: the second rental has 1 TPS; its second distinct transaction at once is over it.
    const p = await Probe.start();
    try {
      await p.ok(`raw connect ${h.addr} ${h.slowKey}`);
      assert.equal(await p.ok(`raw stream ${hex(legacyTx())}`), st(QUIC_STATUS.accepted));
      assert.equal(await p.ok(`raw stream ${hex(legacyTx())}`), st(QUIC_STATUS.rateLimited));
      assert.equal(await p.ok('raw wait-close 50'), 'open');
    } finally {
      await p.close();
    }

    // Still the same connection, still serving.
    assert.equal(await raw.ok('raw wait-close 50'), 'open');
    const after = legacyTx();
    assert.equal(await status(after), st(QUIC_STATUS.accepted));
    await waitFor(() => sendsOf(good) === 1 && sendsOf(after) === 1, 5000, 'the accepted forwards');
    for (const rejected of [unsigned, forged, noTip, smallTip, garbage, big, countMismatch]) assert.equal(sendsOf(rejected), 0);
    for (const s of [0, 1, 2, 3, 4, 5, 7]) assert.ok(h.quic.metrics.value('status', s) >= 1, `status ${s} counted`);
  });

  it('a 1,232-byte transaction is accepted; a 1,233-byte one gets 0x05 too large (stream and SDK)', async () => {
    const max = txOfSize(1232);
    const over = txOfSize(1233);
    assert.equal(max.length, 1232);
    assert.equal(over.length, 1233);
    assert.equal(await status(max), st(QUIC_STATUS.accepted));
    assert.equal(await status(over), st(QUIC_STATUS.tooLarge));
    assert.equal(await sdk.ok(`sdk send ${hex(over)}`), `rejected 0x05`);
    assert.equal(await sdk.ok('sdk connected'), 'true');
    await waitFor(() => sendsOf(max) === 1, 5000, 'the 1,232-byte forward');
    assert.equal(sendsOf(over), 0);
  });

  it('the SDK surfaces a rejection as its SubmitError after one reconnect-and-retry, and stays connected', async () => {
    const noTip = legacyTx({ tip: null });
    const admitted = h.quic.metrics.value('admission', 'admitted');
    const rejectedBefore = h.service.pipeline.metrics.value('quic', 'missing_tip');
    assert.equal(await sdk.ok(`sdk send ${hex(noTip)}`), 'rejected 0x03');
    assert.equal(h.quic.metrics.value('admission', 'admitted'), admitted + 1, 'one forced reconnect');
    assert.equal(h.service.pipeline.metrics.value('quic', 'missing_tip'), rejectedBefore + 2, 'the server saw it twice');
    assert.equal(await sdk.ok('sdk connected'), 'true');
    const tx = legacyTx();
    assert.equal(await sdk.ok(`sdk send ${hex(tx)}`), 'sent');
  });

  it('the older form: one unidirectional stream per transaction, raw bytes, no answer', async () => {
    const tx = legacyTx();
    const noTip = legacyTx({ tip: null });
    const uni = h.quic.metrics.value('received', 'uni');
    const missing = h.service.pipeline.metrics.value('quic', 'missing_tip');
    assert.equal(await raw.ok(`raw uni ${hex(tx)}`), 'sent');
    assert.equal(await raw.ok(`raw uni ${hex(noTip)}`), 'sent');
    await waitFor(() => sendsOf(tx) === 1 && h.service.pipeline.metrics.value('quic', 'missing_tip') === missing + 1, 5000, 'the uni submissions');
    assert.equal(h.quic.metrics.value('received', 'uni'), uni + 2);
    assert.equal(sendsOf(noTip), 0);
  });

  it('datagram mode: the raw transaction in one DATAGRAM, no answer (SDK and a 1,232-byte one)', async () => {
    const tx = legacyTx();
    const max = txOfSize(1232);
    const noTip = legacyTx({ tip: null });
    const dg = h.quic.metrics.value('received', 'datagram');
    await sdk.ok('sdk mode datagram');
    try {
      assert.equal(await sdk.ok(`sdk send ${hex(tx)}`), 'sent');
      assert.equal(await sdk.ok(`sdk send ${hex(max)}`), 'sent');
      assert.equal(await sdk.ok(`sdk send ${hex(noTip)}`), 'sent', 'datagram mode reports no server error');
    } finally {
      await sdk.ok('sdk mode stream');
    }
    await waitFor(() => sendsOf(tx) === 1 && sendsOf(max) === 1 && h.quic.metrics.value('received', 'datagram') === dg + 3, 5000, 'the datagram submissions');
    assert.equal(sendsOf(noTip), 0);
    // A 1,233-byte datagram (the SDK would send it: its limit is ~1,434) is judged too large, silently.
    const tooLarge = h.service.pipeline.metrics.value('quic', 'too_large');
    const over = txOfSize(1233);
    assert.match(await raw.ok(`raw datagram ${hex(over)}`), /^sent max=(\d+)/);
    await waitFor(() => h.service.pipeline.metrics.value('quic', 'too_large') === tooLarge + 1, 5000, 'the oversized datagram judged');
    assert.equal(sendsOf(over), 0);
  });

  it('a stream and a datagram carrying the same transaction are one submission; a later resend is forwarded again', async () => {
    const tx = legacyTx();
    const twins = h.quic.metrics.twins.value;
    const accepted = h.service.pipeline.metrics.value('quic', 'accepted');
    assert.match(await raw.ok(`raw datagram ${hex(tx)}`), /^sent max=\d+/);
    await waitFor(() => sendsOf(tx) === 1, 5000, 'the datagram forward');
    assert.equal(await status(tx), st(QUIC_STATUS.accepted), 'the stream copy gets the datagram copy\'s status');
    assert.equal(h.quic.metrics.twins.value, twins + 1);
    assert.equal(h.service.pipeline.metrics.value('quic', 'accepted'), accepted + 1, 'one submission');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(sendsOf(tx), 1, 'forwarded once');
    // The other order (stream first), then a resend: before delivery a resend is forwarded again (cache rule).
    const tx2 = legacyTx();
    assert.equal(await status(tx2), st(QUIC_STATUS.accepted));
    await raw.ok(`raw datagram ${hex(tx2)}`);
    await waitFor(() => h.quic.metrics.twins.value === twins + 2, 5000, 'the second pair');
    assert.equal(await status(tx2), st(QUIC_STATUS.accepted));
    await waitFor(() => sendsOf(tx2) === 2, 5000, 'the resend forwarded');
  });

  it('limits are counted: connections per key (4 here) are refused past the limit with code 2', async () => {
    const probes: Probe[] = [];
    try {
      // `sdk` and `raw` hold two of this key's four.
      for (let i = 0; i < 3; i++) {
        const p = await Probe.start();
        probes.push(p);
        await p.ok(`raw connect ${h.addr} ${h.key}`);
      }
      const answers = await Promise.all(probes.map((p) => p.ok('raw wait-close 300')));
      assert.equal(answers.filter((a) => a === 'open').length, 2);
      assert.equal(answers.filter((a) => a === 'app 2 too many connections for this api key').length, 1);
      assert.ok(h.quic.metrics.value('admission', 'per_key_limit') >= 1);
    } finally {
      for (const p of probes) await p.close();
    }
    await waitFor(() => h.quic.openConnections === 2, 5000, 'closed connections released');
  });
});

describe('submission over QUIC: limits of the QUIC stack', function () {
  let up: Upstream;
  before(async function () {
    this.timeout(30 * 60_000);
    await ensureTerminatorBinary(TERMINATOR_BIN);
    await ensureTerminatorBinary(PROBE_BIN);
    up = await startUpstream();
  });
  after(async () => {
    await up?.close();
  });

  it('handshakes per IP: past the burst, handshakes are refused and counted', async () => {
    // One token per 1,000 s after a burst of 2: the third handshake is refused however slow the machine is.
    const h = await startQuicHarness({ upstreams: [up.url], quic: { handshakesPerSecPerIp: 0.001, handshakeBurstPerIp: 2 } });
    const probes: Probe[] = [];
    try {
      for (let i = 0; i < 3; i++) probes.push(await Probe.start());
      const answers: string[] = [];
      for (const p of probes) answers.push(await p.cmd(`raw connect ${h.addr} ${h.key}`));
      assert.equal(answers.length, 3);
      assert.deepEqual(answers.slice(0, 2), ['ok connected', 'ok connected']);
      assert.match(answers[2]!, /^err .*refused/i);
      // The refusal reaches the client before the terminator's event frame reaches the service: fence on the count.
      await waitFor(() => h.quic.metrics.value('event', 'handshake_rate_limited') >= 1, 5000, 'the refusal counted');
      assert.equal(h.quic.metrics.value('event', 'handshake_rate_limited'), 1);
    } finally {
      for (const p of probes) await p.close();
      await h.close();
    }
  });

  it('idle timeout closes a silent connection (counted); streams per connection at the limit are counted', async () => {
    const h = await startQuicHarness({ upstreams: [up.url], quic: { idleTimeoutMs: 300, maxStreamsPerConnection: 1 } });
    const p = await Probe.start();
    try {
      await p.ok(`raw connect ${h.addr} ${h.key}`);
      assert.equal(await p.ok(`raw stream ${hex(legacyTx())}`), '0100');
      await waitFor(() => h.quic.metrics.value('event', 'stream_limit_reached') >= 1, 5000, 'the stream limit counted');
      assert.match(await p.ok('raw wait-close 3000'), /timed out/i);
      await waitFor(() => h.quic.metrics.value('closed', 'idle_timeout') === 1, 5000, 'the idle close counted');
      assert.equal(h.quic.openConnections, 0);
    } finally {
      await p.close();
      await h.close();
    }
  });

  it('a terminator that dies is started again on the same port; the SDK reconnects on its next send', async () => {
    const h = await startQuicHarness({ upstreams: [up.url] });
    const p = await Probe.start();
    try {
      await p.ok(`sdk connect ${h.addr} ${h.key}`);
      assert.equal(await p.ok(`sdk send ${hex(legacyTx())}`), 'sent');
      const pid = h.quic.terminatorPid!;
      process.kill(pid, 'SIGKILL');
      await waitFor(() => h.quic.starts === 2 && h.quic.terminatorPid !== pid, 20_000, 'the restarted terminator ready');
      assert.equal(h.quic.metrics.restarts.value, 1);
      assert.equal(`127.0.0.1:${h.quic.address.port}`, h.addr);
      const tx = legacyTx();
      await p.ok('sdk timeout 2000');
      assert.equal(await p.ok(`sdk send ${hex(tx)}`), 'sent');
      await waitFor(() => up.sends.some((s) => s.tx.equals(tx)), 5000, 'the forward after the restart');
    } finally {
      await p.close();
      await h.close();
    }
  });
});
