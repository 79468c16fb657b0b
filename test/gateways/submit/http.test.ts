import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import net from 'node:net';
import bs58 from 'bs58';
import { Keypair, SystemProgram, Transaction } from '@solana/web3.js';
import { waitFor } from '../../support/wait';
import { post, rpc, sendTx, startHarness, type Harness } from './harness';
import { fakeBlockhash, legacyTx, MIN_TIP, TIP_ACCOUNTS, v0Tx } from './support';
import { startUpstream, type Upstream } from './upstream';

// The HTTP transport end to end over loopback: web3.js transactions in, the RPC forwarder out to a recording
// upstream (the real-chain tests forward to the local chain node instead). Every framing and option rule.

// Every rule holds on both HTTP front ends: the pipelined fast path for plain /binary and /plaintext
// (the default) and node:http alone (fastPath off).
for (const fastPath of [true, false])
describe(`submit HTTP transport (fastPath ${fastPath ? 'on' : 'off'})`, function () {
  let up: Upstream;
  let h: Harness;
  before(async () => {
    up = await startUpstream();
    h = await startHarness({ upstreams: [up.url], config: { fastPath } });
  });
  after(async () => {
    await h.close();
    await up.close();
  });
  beforeEach(() => {
    up.simulate = 'pass';
  });

  const sig58 = (tx: Buffer): string => bs58.encode(tx.subarray(1, 65));

  describe('JSON-RPC', () => {
    it('sendTransaction (base58 by default) answers the signature and forwards with skipPreflight and no retries', async () => {
      const tx = legacyTx();
      const before = up.sends.length;
      const { status, json } = await rpc(h, sendTx(bs58.encode(tx), undefined, 7));
      assert.equal(status, 200);
      assert.deepEqual(json, { jsonrpc: '2.0', result: sig58(tx), id: 7 });
      await waitFor(() => up.sends.length === before + 1, 5000, 'the forward');
      const sent = up.sends[before]!;
      assert.deepEqual(sent.tx, tx);
      assert.deepEqual(sent.options, { encoding: 'base64', skipPreflight: true, maxRetries: 0 });
      assert.equal(up.simulations.length, 0, 'skipPreflight defaults to true');
    });

    it('base64 with encoding base64; v0 as well', async () => {
      const tx = v0Tx();
      const { json } = await rpc(h, sendTx(tx.toString('base64'), { encoding: 'base64' }));
      assert.equal(json.result, sig58(tx));
    });

    it('a base64 string without encoding base64 gets -32602 saying it is not valid base58', async () => {
      const tx = legacyTx();
      const { status, json } = await rpc(h, sendTx(tx.toString('base64')));
      assert.equal(status, 200);
      assert.equal(json.error?.code, -32602);
      assert.match(json.error!.message, /not valid base58/);
    });

    it('an encoding other than base58 or base64 gets -32602 unsupported encoding', async () => {
      for (const encoding of ['json', 'base32', 'binary']) {
        const { status, json } = await rpc(h, sendTx(bs58.encode(legacyTx()), { encoding }));
        assert.equal(status, 200);
        assert.equal(json.error?.code, -32602);
        assert.match(json.error!.message, /^unsupported encoding/);
      }
    });

    it('a batch array gets a clear -32600', async () => {
      const { status, json } = await rpc(h, [sendTx(bs58.encode(legacyTx()))]);
      assert.equal(status, 200);
      assert.equal(json.error?.code, -32600);
      assert.match(json.error!.message, /batch/);
      assert.equal(json.id, null);
    });

    it('any other method gets -32601 method not found; getVersion answers the version object', async () => {
      const m = await rpc(h, { jsonrpc: '2.0', id: 'a', method: 'getBalance', params: [] });
      assert.equal(m.status, 200);
      assert.deepEqual(m.json, { jsonrpc: '2.0', error: { code: -32601, message: 'method not found' }, id: 'a' });
      const v = await rpc(h, { jsonrpc: '2.0', id: 2, method: 'getVersion' });
      assert.deepEqual(v.json, { jsonrpc: '2.0', result: { 'solana-core': 'meridian/0.1.0', 'feature-set': null }, id: 2 });
    });

    it('missing, malformed or unknown key: HTTP 401, -32000 unauthorized', async () => {
      for (const key of [null, 'nope', crypto.randomUUID()]) {
        const { status, json } = await rpc(h, sendTx(bs58.encode(legacyTx())), key);
        assert.equal(status, 401);
        assert.deepEqual(json.error, { code: -32000, message: 'unauthorized' });
        assert.equal(json.id, 1);
      }
    });

    it('a body over 3,072 bytes is refused (-32600, HTTP 200) and the server goes on serving', async () => {
      const { status, json } = await rpc(h, sendTx('1'.repeat(3100)));
      assert.equal(status, 200);
      assert.equal(json.error?.code, -32600);
      assert.match(json.error!.message, /too large/);
      assert.equal((await rpc(h, { jsonrpc: '2.0', id: 3, method: 'getVersion' })).status, 200);
    });

    it('malformed JSON gets -32700; an envelope without jsonrpc/method gets -32600', async () => {
      assert.equal((await rpc(h, '{"jsonrpc":')).json.error?.code, -32700);
      assert.equal((await rpc(h, { id: 1, method: 'sendTransaction' })).json.error?.code, -32600);
      assert.equal((await rpc(h, '"x"')).json.error?.code, -32600);
    });

    it('params and option types are checked (-32602); maxRetries and unknown options are accepted and ignored', async () => {
      for (const params of [[], [42], ['x', 'y'], ['x', {}, 3]]) {
        const { json } = await rpc(h, { jsonrpc: '2.0', id: 1, method: 'sendTransaction', params });
        assert.equal(json.error?.code, -32602, JSON.stringify(params));
      }
      for (const bad of [{ skipPreflight: 'no' }, { preflightCommitment: 'max' }, { minContextSlot: -1 }, { minContextSlot: 1.5 }]) {
        const { json } = await rpc(h, sendTx(bs58.encode(legacyTx()), bad));
        assert.equal(json.error?.code, -32602, JSON.stringify(bad));
      }
      const tx = legacyTx();
      const before = up.sends.length;
      const { json } = await rpc(h, sendTx(bs58.encode(tx), { maxRetries: 5, somethingNew: true }));
      assert.equal(json.result, sig58(tx));
      await waitFor(() => up.sends.length === before + 1, 5000, 'the forward');
      assert.equal(up.sends[before]!.options.maxRetries, 0, 'nothing is re-driven');
    });

    it('preflightCommitment and minContextSlot without preflight are accepted and not used', async () => {
      const sims = up.simulations.length;
      const { json } = await rpc(h, sendTx(bs58.encode(legacyTx()), { preflightCommitment: 'finalized', minContextSlot: 9 }));
      assert.equal(typeof json.result, 'string');
      assert.equal(up.simulations.length, sims);
    });

    it('skipPreflight false simulates with sigVerify, the commitment and minContextSlot, then forwards', async () => {
      const tx = legacyTx();
      const sims = up.simulations.length;
      const sends = up.sends.length;
      const { json } = await rpc(h, sendTx(tx.toString('base64'), { encoding: 'base64', skipPreflight: false, preflightCommitment: 'confirmed', minContextSlot: 3 }));
      assert.equal(json.result, sig58(tx));
      assert.equal(up.simulations.length, sims + 1);
      assert.deepEqual(up.simulations[sims]!.options, { encoding: 'base64', sigVerify: true, commitment: 'confirmed', minContextSlot: 3 });
      assert.deepEqual(up.simulations[sims]!.tx, tx);
      await waitFor(() => up.sends.length === sends + 1, 5000, 'the forward');
    });

    it('preflight: an upstream error or unreadable answer → -32603 RPC node returned an error; a hang → -32603 timed out; none forwards', async () => {
      const cases: Array<[Upstream['simulate'], string]> = [
        ['rpc-error', 'preflight check failed: RPC node returned an error'],
        ['http-500', 'preflight check failed: RPC node returned an error'],
        ['garbage', 'preflight check failed: RPC node returned an error'],
        ['hang', 'preflight check timed out'],
      ];
      for (const [mode, message] of cases) {
        up.simulate = mode;
        const sends = up.sends.length;
        const { status, json } = await rpc(h, sendTx(bs58.encode(legacyTx()), { skipPreflight: false }));
        assert.equal(status, 200);
        assert.deepEqual(json.error, { code: -32603, message }, mode);
        await new Promise((r) => setTimeout(r, 50));
        assert.equal(up.sends.length, sends, `${mode}: not forwarded`);
      }
    });

    it('pipeline rejections arrive as JSON-RPC errors with HTTP 200', async () => {
      const noTip = await rpc(h, sendTx(bs58.encode(legacyTx({ tip: null }))));
      assert.equal(noTip.status, 200);
      assert.equal(noTip.json.error?.code, -32602);
      assert.match(noTip.json.error!.message, /^missing required tip/);
      const forged = legacyTx();
      forged[5]! ^= 1;
      assert.deepEqual((await rpc(h, sendTx(bs58.encode(forged)))).json.error, { code: -32003, message: 'Transaction signature verification failure: signature 0' });
      const big = await rpc(h, sendTx(Buffer.alloc(1300, 1).toString('base64'), { encoding: 'base64' }));
      assert.equal(big.json.error?.code, -32602);
      assert.match(big.json.error!.message, /^decoded transaction too large/);
    });
  });

  describe('/binary', () => {
    it('200 text/plain with the base58 signature', async () => {
      const tx = legacyTx();
      const r = await post(h, '/binary', tx);
      assert.deepEqual([r.status, r.text], [200, sig58(tx)]);
      assert.match(r.type ?? '', /^text\/plain/);
    });
    it('a body over 1,232 bytes: 413 request body too large', async () => {
      const r = await post(h, '/binary', Buffer.alloc(1233, 1));
      assert.deepEqual([r.status, r.text], [413, 'request body too large']);
    });
    it('a rejected transaction: 400 with the reason as plain text', async () => {
      const r = await post(h, '/binary', legacyTx({ tip: MIN_TIP - 1 }));
      assert.equal(r.status, 400);
      assert.match(r.text, /^tip below the required minimum/);
      const g = await post(h, '/binary', Buffer.from('garbage'));
      assert.equal(g.status, 400);
      assert.match(g.text, /^failed to deserialize transaction/);
    });
    it('no key: 401 unauthorized', async () => {
      const r = await post(h, '/binary', legacyTx(), null);
      assert.deepEqual([r.status, r.text], [401, 'unauthorized']);
    });
    it('never preflights', async () => {
      const sims = up.simulations.length;
      up.simulate = 'hang';
      assert.equal((await post(h, '/binary', legacyTx())).status, 200);
      assert.equal(up.simulations.length, sims);
    });
  });

  describe('/plaintext', () => {
    it('base64 text with surrounding whitespace: 200 with the signature', async () => {
      const tx = v0Tx();
      const r = await post(h, '/plaintext', `\n  ${tx.toString('base64')}\r\n `, h.key, 'text/plain');
      assert.deepEqual([r.status, r.text], [200, sig58(tx)]);
    });
    it('413 request body too large over 2,048 bytes; 413 decoded transaction too large over 1,232 decoded', async () => {
      const r1 = await post(h, '/plaintext', 'A'.repeat(2049), h.key, 'text/plain');
      assert.deepEqual([r1.status, r1.text], [413, 'request body too large']);
      const r2 = await post(h, '/plaintext', Buffer.alloc(1300, 7).toString('base64'), h.key, 'text/plain');
      assert.deepEqual([r2.status, r2.text], [413, 'decoded transaction too large']);
    });
    it('400 invalid base64; 400 invalid utf8', async () => {
      const r1 = await post(h, '/plaintext', 'not*base64!', h.key, 'text/plain');
      assert.deepEqual([r1.status, r1.text], [400, 'invalid base64']);
      const r2 = await post(h, '/plaintext', Buffer.from([0x41, 0xff, 0xfe, 0x41]), h.key, 'text/plain');
      assert.deepEqual([r2.status, r2.text], [400, 'invalid utf8']);
    });
  });

  it('GET /health answers 200 without a key; unknown paths 404', async () => {
    const r = await fetch(`${h.base}/health`);
    assert.deepEqual([r.status, await r.text()], [200, 'ok']);
    assert.equal((await fetch(`${h.base}/nope?api-key=${h.key}`, { method: 'POST' })).status, 404);
  });

  it('the rate limit: HTTP 429 -32001 on JSON-RPC, 429 plain text on /binary', async () => {
    const limited = await startHarness({ upstreams: [up.url], rental: { tps: 2 }, config: { fastPath } });
    try {
      assert.equal((await post(limited, '/binary', legacyTx())).status, 200);
      assert.equal((await post(limited, '/binary', legacyTx())).status, 200);
      const b = await post(limited, '/binary', legacyTx());
      assert.deepEqual([b.status, b.text], [429, 'rate limit exceeded']);
      const j = await rpc(limited, sendTx(bs58.encode(legacyTx())));
      assert.equal(j.status, 429);
      assert.deepEqual(j.json.error, { code: -32001, message: 'rate limit exceeded' });
    } finally {
      await limited.close();
    }
  });

  it('caps open connections per client address; the others keep being served', async () => {
    const capped = await startHarness({ upstreams: [up.url], config: { maxConnectionsPerIp: 2, fastPath } });
    const socks: net.Socket[] = [];
    try {
      const closed: boolean[] = [];
      for (let i = 0; i < 3; i++) {
        const s = net.connect(capped.service.http.port, '127.0.0.1');
        socks.push(s);
        closed.push(false);
        s.on('close', () => (closed[i] = true));
        s.on('error', () => undefined);
        await new Promise<void>((r) => s.once('connect', () => r()));
      }
      await waitFor(() => closed[2] === true, 5000, 'the third connection to be closed');
      assert.deepEqual(closed, [false, false, true]);
      socks[0]!.destroy();
      await waitFor(() => closed[0] === true, 5000, 'a slot to free');
      await new Promise((r) => setTimeout(r, 50));
      assert.equal((await fetch(`${capped.base}/health`)).status, 200);
    } finally {
      for (const s of socks) s.destroy();
      await capped.close();
    }
  });

  it('never logs the key or a URL', async () => {
    await post(h, '/binary', legacyTx(), crypto.randomUUID());
    const joined = h.logLines.join('\n');
    assert.ok(h.logLines.length > 0, 'the service logged its start');
    assert.equal(joined.includes(h.key), false);
    assert.equal(joined.includes('127.0.0.1:' + new URL(up.url).port), false);
    assert.equal(/https?:\/\//.test(joined), false);
  });

  it('a partially signed web3.js transaction is refused as unsigned', async () => {
    const payer = Keypair.generate();
    const co = Keypair.generate();
    const t = new Transaction({ feePayer: payer.publicKey, recentBlockhash: fakeBlockhash() })
      .add(SystemProgram.transfer({ fromPubkey: co.publicKey, toPubkey: payer.publicKey, lamports: 1 }))
      .add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: TIP_ACCOUNTS[0]!, lamports: MIN_TIP }));
    t.partialSign(payer);
    const r = await post(h, '/binary', t.serialize({ requireAllSignatures: false }));
    assert.deepEqual([r.status, r.text], [400, 'Transaction signature verification failure: missing signature: signature 1']);
  });
});
