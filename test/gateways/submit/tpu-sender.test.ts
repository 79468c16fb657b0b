import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Keypair } from '@solana/web3.js';
import { ensureTpuBinary, SENDER_BIN } from '../../../gateways/submit/tpu/sender-build';
import { SenderProcess } from '../../../gateways/submit/tpu/sender-process';
import { quietLog } from '../../support/log-capture';

// The sender process's identity: the keypair file's public key (what a leader looks up for stake), or an
// ephemeral one it says is ephemeral; a file that is not a keypair stops it with one line, before any QUIC.

describe('tpu sender identity', function () {
  this.timeout(30 * 60_000);
  const { log } = quietLog('debug');
  let bin: string;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpu-id-'));
  before(async () => {
    bin = await ensureTpuBinary(SENDER_BIN);
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function hello(args: string[]): Promise<{ identity: string; ephemeral: boolean }> {
    const p = new SenderProcess({ bin, args: ['--bind', '127.0.0.1:0', ...args], log, onMessage: () => undefined, onExit: () => undefined, onRestart: () => undefined });
    try {
      return await p.start();
    } finally {
      await p.close();
    }
  }

  it('presents the identity file\'s key (solana-keygen format)', async () => {
    const kp = Keypair.generate();
    const file = path.join(dir, 'id.json');
    fs.writeFileSync(file, JSON.stringify([...kp.secretKey]));
    assert.deepEqual(await hello(['--identity', file]), { identity: kp.publicKey.toBase58(), ephemeral: false });
  });

  it('without one, an ephemeral identity that says so', async () => {
    const h = await hello([]);
    assert.equal(h.ephemeral, true);
    assert.equal(typeof h.identity, 'string');
    assert.notEqual(h.identity, (await hello([])).identity, 'a fresh key each start');
  });

  it('a file that is not a keypair: exit 2 with one line naming the problem', async () => {
    const file = path.join(dir, 'bad.json');
    fs.writeFileSync(file, '{"not":"a keypair"}');
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync(bin, ['--identity', file], { encoding: 'utf8' });
    assert.equal(r.status, 2);
    assert.match(r.stderr.trim(), /^meridian-tpu-sender: identity file: expected a JSON array of 64 bytes \(solana-keygen format\)$/);
  });
});
