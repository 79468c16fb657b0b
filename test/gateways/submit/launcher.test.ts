import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection, Keypair, PublicKey } from '@solana/web3.js';
import bs58 from 'bs58';
import { parseConfig } from '../../../infra/config';
import { launch } from '../../../infra/launcher';
import { startLocalChain, type LocalChain } from '../../../infra/local/chain';
import { quietLog } from '../../support/log-capture';
import { legacyTx } from './support';

// The launcher block: `gateways.submit` starts the service, its addresses and the demo tip rule go to the
// endpoints, and a transaction sent to the advertised /binary address lands on the chain it forwards to.

describe('launcher: submission service block', function () {
  this.timeout(60_000);
  let chain: LocalChain;
  before(async () => {
    chain = await startLocalChain({ port: 0 });
  });
  after(async () => {
    await chain?.close();
  });

  it('starts with gateways.submit, advertises submit.http/submit.udp and the demo tip rule, forwards to the chain', async () => {
    const apiKey = '0b6f3d1e-2a4c-4e5f-8a9b-0c1d2e3f4a5b';
    const tip = Keypair.generate().publicKey.toBase58();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'submit-launch-'));
    const rentalsFile = path.join(dir, 'rentals.json');
    fs.writeFileSync(rentalsFile, JSON.stringify([{ id: 'local', ips: ['127.0.0.1'], apiKeys: [apiKey], tps: 100 }]));
    const cfg = parseConfig({
      ingest: { enabled: false },
      fanout: { listen: '127.0.0.1:0' },
      rentals: { file: rentalsFile },
      metrics: { enabled: false },
      gateways: { submit: { enabled: true, listen: '127.0.0.1:0', udp: { listen: '127.0.0.1:0' }, tips: { accounts: [tip], minLamports: 1_000_000 }, forwardUrls: [chain.httpUrl] } },
    });
    const { log, lines } = quietLog();
    const running = await launch(cfg, log);
    try {
      const e = running.endpoints;
      assert.match(e.submit!.http!, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.match(e.submit!.udp!, /^127\.0\.0\.1:\d+$/);
      assert.deepEqual([e.demo!.apiKey, e.demo!.tipAccounts, e.demo!.minTipLamports], [apiKey, [tip], 1_000_000]);

      const conn = new Connection(chain.httpUrl, 'processed');
      const payer = Keypair.fromSecretKey(chain.payer);
      const tx = legacyTx({ payer, blockhash: (await conn.getLatestBlockhash()).blockhash, tipAccount: new PublicKey(tip) });
      const r = await fetch(`${e.submit!.http!}/binary?api-key=${apiKey}`, { method: 'POST', body: tx });
      const sig = await r.text();
      assert.deepEqual([r.status, sig], [200, bs58.encode(tx.subarray(1, 65))]);
      let status = null;
      for (let i = 0; i < 100 && status === null; i++) {
        await new Promise((res) => setTimeout(res, 100));
        status = (await conn.getSignatureStatuses([sig])).value[0];
      }
      assert.ok(status !== null, 'landed');
      assert.equal(status.err, null);
    } finally {
      await running.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
    assert.equal(lines.some((l) => l.includes(apiKey) || l.includes(chain.httpUrl)), false, 'no key or URL in the log');
  });
});
