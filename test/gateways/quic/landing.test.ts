import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import bs58 from 'bs58';
import { Keypair, SystemProgram, Transaction } from '@solana/web3.js';
import { EmbeddedBus } from '../../../bus/embedded';
import { emptyRegistry, rentalsFromList } from '../../../bus/rental-registry';
import { defaultTopicSpecs } from '../../../bus/topics';
import { parseFanoutConfig } from '../../../fanout/config';
import { startFanout, type FanoutHandle } from '../../../fanout/server';
import { parseSubmitConfig } from '../../../gateways/submit/config';
import { parseQuicConfig } from '../../../gateways/submit/quic/config';
import { QuicListener } from '../../../gateways/submit/quic/listener';
import { QuicMetrics } from '../../../gateways/submit/quic/metrics';
import { ensureTerminatorBinary, PROBE_BIN, TERMINATOR_BIN } from '../../../gateways/submit/quic/terminator-build';
import { startSubmit, type SubmitService } from '../../../gateways/submit/service';
import { parseIngestConfig } from '../../../ingest/config';
import { startIngest, type RunningIngest } from '../../../ingest/worker';
import { startLocalChain, type LocalChain } from '../../../infra/local/chain';
import { Registry } from '../../../infra/base/metrics';
import { quietLog } from '../../support/log-capture';
import { StreamClient } from '../../support/stream-client';
import { waitFor } from '../../support/wait';
import { MIN_TIP, rental, TIP_ACCOUNTS } from '../submit/support';
import { hex, Probe } from './probe';

// The whole loop on one machine: the SDK sends over QUIC → the pipeline forwards to the local chain node →
// the transaction executes and lands → the node shreds its block to ingest → the bus → the fanout → a gRPC
// subscriber filtering on the payer sees it; the delivery feed marks it delivered, so a resend is then
// suppressed by the signature cache.

async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const j = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (j.error !== undefined) throw new Error(`${method}: ${j.error.message}`);
  return j.result;
}

describe('submission over QUIC lands on the local chain and reaches a gRPC subscriber', function () {
  this.timeout(120_000);
  const { log } = quietLog('warn');
  let bus: EmbeddedBus;
  let ingest: RunningIngest;
  let chain: LocalChain;
  let fanout: FanoutHandle;
  let service: SubmitService;
  let quic: QuicListener;
  let probe: Probe;
  let sub: StreamClient;
  const r = rental({ tps: 1000 });

  before(async function () {
    this.timeout(30 * 60_000);
    await ensureTerminatorBinary(TERMINATOR_BIN);
    await ensureTerminatorBinary(PROBE_BIN);
    bus = new EmbeddedBus();
    await bus.createTopics(defaultTopicSpecs());
    const reg = new Registry();
    ingest = await startIngest(parseIngestConfig({ listen: '127.0.0.1:0', shredVersion: 'any', leader: { mode: 'off' } }), bus, log, { registry: reg });
    chain = await startLocalChain({ port: 0, shredTo: `127.0.0.1:${ingest.address.port}`, slotMs: 200, log });
    fanout = await startFanout(parseFanoutConfig({ listen: '127.0.0.1:0' }), bus, emptyRegistry(), log);
    const cfg = parseSubmitConfig({ enabled: true, listen: '127.0.0.1:0', udp: { enabled: false }, tips: { accounts: TIP_ACCOUNTS.map((k) => k.toBase58()), minLamports: MIN_TIP }, forwardUrls: [chain.httpUrl] });
    service = await startSubmit(cfg, { bus, rentals: rentalsFromList([r]), log, registry: reg });
    quic = await QuicListener.start({ config: parseQuicConfig({ listen: '127.0.0.1:0' }), pipeline: service.pipeline, log, metrics: new QuicMetrics(reg) });
    probe = await Probe.start();
  });
  after(async () => {
    await sub?.close();
    await probe?.close();
    await quic?.close();
    await service?.close();
    await fanout?.close();
    await chain?.close();
    await ingest?.close();
    await bus?.close();
  });

  it('an accepted transaction sent by the SDK in stream mode executes on the chain and is streamed to the subscriber', async () => {
    const payer = Keypair.fromSecretKey(chain.payer);
    const to = Keypair.generate().publicKey;
    sub = StreamClient.open(fanout.address);
    sub.send({ transactions: { mine: { accountInclude: [to.toBase58()] } }, pingId: 1 });
    await sub.waitFor((x) => x.pingId === 1, 10_000);

    const { value } = (await rpc(chain.httpUrl, 'getLatestBlockhash', [])) as { value: { blockhash: string } };
    const t = new Transaction({ feePayer: payer.publicKey, recentBlockhash: value.blockhash });
    t.add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 5_000_000 + crypto.randomInt(1000) }));
    t.add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: TIP_ACCOUNTS[0]!, lamports: MIN_TIP }));
    t.sign(payer);
    const tx = t.serialize();
    const sig = bs58.encode(tx.subarray(1, 65));

    await probe.ok(`sdk connect 127.0.0.1:${quic.address.port} ${r.apiKeys[0]}`);
    assert.equal(await probe.ok(`sdk send ${hex(tx)}`), 'sent');

    let status: { err: unknown; confirmationStatus?: string } | null = null;
    for (let i = 0; i < 100 && status === null; i++) {
      const s = (await rpc(chain.httpUrl, 'getSignatureStatuses', [[sig]])) as { value: Array<{ err: unknown; confirmationStatus?: string } | null> };
      status = s.value[0] ?? null;
      if (status === null) await new Promise((res) => setTimeout(res, 100));
    }
    assert.notEqual(status, null, 'the transaction is known to the chain');
    assert.equal(status!.err, null, 'and it executed without error');
    const balance = (await rpc(chain.httpUrl, 'getBalance', [to.toBase58()])) as { value: number };
    assert.ok(balance.value >= 5_000_000);

    const got = await sub.waitFor((x) => x.transaction?.signature === sig, 30_000);
    assert.equal(got.transaction!.signatures.length, 1);
    assert.deepEqual(got.filters, ['mine']);

    // Delivered (seen on stream.transactions): a resend is answered accepted but not forwarded again.
    await waitFor(() => service.pipeline.metrics.deliveredMarks.value >= 1, 10_000, 'the delivery mark');
    const dup = service.pipeline.metrics.value('quic', 'duplicate');
    assert.equal(await probe.ok(`sdk send ${hex(tx)}`), 'sent');
    assert.equal(service.pipeline.metrics.value('quic', 'duplicate'), dup + 1);
  });
});
