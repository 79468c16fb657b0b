import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection, Keypair, PublicKey } from '@solana/web3.js';
import bs58 from 'bs58';
import { parseConfig } from '../../../infra/config';
import { launch } from '../../../infra/launcher';
import { startLocalChain, type LocalChain } from '../../../infra/local/chain';
import { ensureTerminatorBinary, PROBE_BIN, TERMINATOR_BIN } from '../../../gateways/submit/quic/terminator-build';
import { quietLog } from '../../support/log-capture';
import { legacyTx } from '../submit/support';
import { hex, Probe } from './probe';

// The launcher block: gateways.submit.quic starts the QUIC listener in front of the service's pipeline,
// advertises submit.quic, and what the SDK sends there lands on the chain the service forwards to.

describe('launcher: submission QUIC block', function () {
  this.timeout(60_000);
  let chain: LocalChain;
  before(async function () {
    this.timeout(30 * 60_000);
    await ensureTerminatorBinary(TERMINATOR_BIN);
    await ensureTerminatorBinary(PROBE_BIN);
    chain = await startLocalChain({ port: 0 });
  });
  after(async () => {
    await chain?.close();
  });

  it('starts with gateways.submit.quic enabled, advertises submit.quic, and an SDK send lands on the chain', async () => {
    const apiKey = '5c1f3d1e-2a4c-4e5f-8a9b-0c1d2e3f4a5b';
    const tip = Keypair.generate().publicKey.toBase58();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quic-launch-'));
    const rentalsFile = path.join(dir, 'rentals.json');
    fs.writeFileSync(rentalsFile, JSON.stringify([{ id: 'local', ips: ['127.0.0.1'], apiKeys: [apiKey], tps: 100 }]));
    const cfg = parseConfig({
      ingest: { enabled: false },
      fanout: { listen: '127.0.0.1:0' },
      rentals: { file: rentalsFile },
      metrics: { enabled: false },
      gateways: { submit: { enabled: true, listen: '127.0.0.1:0', udp: { enabled: false }, tips: { accounts: [tip], minLamports: 1_000_000 }, forwardUrls: [chain.httpUrl], quic: { enabled: true, listen: '127.0.0.1:0' } } },
    });
    const { log, lines } = quietLog();
    const running = await launch(cfg, log);
    const probe = await Probe.start();
    try {
      const addr = running.endpoints.submit?.quic;
      assert.match(addr!, /^127\.0\.0\.1:\d+$/);
      const conn = new Connection(chain.httpUrl, 'processed');
      const payer = Keypair.fromSecretKey(chain.payer);
      const tx = legacyTx({ payer, blockhash: (await conn.getLatestBlockhash()).blockhash, tipAccount: new PublicKey(tip) });
      await probe.ok(`sdk connect ${addr} ${apiKey}`);
      assert.equal(await probe.ok(`sdk send ${hex(tx)}`), 'sent');
      const sig = bs58.encode(tx.subarray(1, 65));
      let status = null;
      for (let i = 0; i < 100 && status === null; i++) {
        await new Promise((res) => setTimeout(res, 100));
        status = (await conn.getSignatureStatuses([sig])).value[0];
      }
      assert.ok(status !== null, 'landed');
      assert.equal(status.err, null);
    } finally {
      await probe.close();
      await running.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
    assert.ok(!lines.some((l) => l.includes(apiKey)), 'the key is in no log line');
  });

  it('is off unless enabled (other launches, and their tests, get no fixed-port QUIC listener)', () => {
    const cfg = parseConfig({ gateways: { submit: { enabled: false } } });
    assert.equal(cfg.gateways.submitQuic.enabled, false);
    assert.equal(cfg.gateways.submitQuic.port, 5000);
  });
});
