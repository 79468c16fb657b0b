import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import bs58 from 'bs58';
import { randomKeypair } from '../../infra/base/keypair';
import type { Running } from '../../infra/launcher';
import { jsonRpc } from '../../infra/base/json-rpc';
import { quietLog } from '../support/log-capture';
import { StreamClient } from '../support/stream-client';
import { waitFor } from '../support/wait';
import { launchOneMachine } from '../support/one-machine';
import { blockFormatsFor } from '../support/block-formats';

// The whole loop with lookup tables: the demo traffic makes a real table on the local chain and sends v0
// transfers naming their recipient only through it; they are shredded to ingest, published, and a v1 subscriber
// filtering on a demo account receives the ones that reach it only through the table (fanout.lookupTables.matchV1,
// the table cache fed by the stream and the local chain's JSON-RPC, wired by the launcher).

const randomTip = (): string => bs58.encode(randomKeypair().publicKey);

// Tower-era blocks once more with the chain carrier only (blockFormatsFor: the format is the chain's and ingest's business).
for (const carrier of ['chain', 'submit'] as const) for (const format of carrier === 'chain' ? blockFormatsFor('embedded') : blockFormatsFor('kafka')) describe(`one machine (demo sent via the ${carrier}, ${format} blocks): demo v0 traffic through a lookup table → chain → shreds → ingest → bus → fanout (matchV1) → subscriber`, function () {
  this.timeout(240_000);
  let running: Running | undefined;
  const clients: StreamClient[] = [];
  after(async () => {
    for (const c of clients) await c.close();
    await running?.stop();
  });

  it('delivers a transfer whose recipient is named only through the demo table, as the chain loads it', async () => {
    const { log, lines } = quietLog();
    // Through the submission service the demo pays its tip (a static key, as the service requires) in every v0 transfer.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lut-loop-'));
    const rentalsFile = path.join(dir, 'rentals.json');
    fs.writeFileSync(rentalsFile, JSON.stringify([{ id: 'local', ips: ['127.0.0.1'], apiKeys: ['0b6f3d1e-2a4c-4e5f-8a9b-0c1d2e3f4a5b'], tps: 1000 }]));
    const submit: Record<string, Record<string, unknown>> = carrier === 'submit'
      ? { rentals: { file: rentalsFile }, gateways: { submit: { enabled: true, listen: '127.0.0.1:0', udp: { listen: '127.0.0.1:0' }, quic: { enabled: false }, tips: { accounts: [randomTip()], minLamports: 1_000_000 } } } }
      : {};
    running = await launchOneMachine({
      bus: 'embedded',
      log,
      blockFormat: format,
      config: { ...submit, fanout: { lookupTables: { matchV1: true } }, demo: { enabled: true, txPerSec: 20, accounts: 2, lookupTable: true } },
    });
    const e = running.endpoints;
    assert.ok(lines.some((l) => l.includes('lookup-table cache on')), 'the launcher gave the fanout the local chain');
    const watched = e.demo!.accounts![0]!;
    const sub = StreamClient.open(e.stream!);
    clients.push(sub);
    sub.send({ transactions: { demo: { accountInclude: [watched] } }, pingId: 1 });
    await sub.waitFor((r) => r.pingId === 1, 10_000);

    const viaTable = await sub.waitFor((r) => r.transaction !== undefined && !r.transaction.accountKeys.includes(watched) && r.transaction.addressTableLookups.length === 1, 120_000);
    const tx = viaTable.transaction!;
    assert.deepEqual(viaTable.filters, ['demo']);
    assert.equal(tx.versioned, true);
    const call = jsonRpc(e.chain!.http);
    type Got = { meta: { loadedAddresses: { writable: string[]; readonly: string[] } } } | null;
    const fetchTx = (): Promise<Got> => call<Got>('getTransaction', [tx.signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 }]);
    await waitFor(async () => (await fetchTx()) !== null, 30_000, 'the chain to report it');
    const got = (await fetchTx())!;
    assert.deepEqual(got.meta.loadedAddresses.writable, [watched], 'the chain loads the watched account through the table');
  });
});
