import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { Connection, Keypair } from '@solana/web3.js';
import { EmbeddedBus } from '../../../../bus/embedded';
import { KafkaBus } from '../../../../bus/kafka';
import { rentalsFromList } from '../../../../bus/rental-registry';
import { TOPIC, defaultTopicSpecs } from '../../../../bus/topics';
import { UsageProducer } from '../../../../bus/usage-producer';
import { parseSubmitConfig } from '../../../../gateways/submit/config';
import { startSubmit, type SubmitService } from '../../../../gateways/submit/service';
import type { LocalChain } from '../../../../infra/local/chain';
import { Registry } from '../../../../infra/base/metrics';
import { post } from '../../../gateways/fake-node';
import { chainUpstream, localChain, rental, testGateway, type TestGateway } from '../../../gateways/rpc/support';
import { legacyTx, MIN_TIP, TIP_ACCOUNTS } from '../../../gateways/submit/support';
import { restartableBroker } from '../../../support/kafka';
import { quietLog } from '../../../support/log-capture';
import { waitFor } from '../../../support/wait';
import { StreamClient } from '../../../support/stream-client';
import { makeTx, startTestFanout, testKey, testKey58, type TestFanout } from '../../../fanout/support';
import { startBillingChild, totalsIn, type BillingChild } from './support';

// Billing from real traffic: 10,000 metered requests of mixed methods through the chain gateway (batches of 10,
// each item metered at its weight) plus submissions through the submission service, on a real Kafka broker that
// is restarted during the run, with the billing job SIGKILLed and restarted in the middle. The totals must equal
// the weights of the requests made, unit for unit. The weights below are the contract's and compat.md's, written
// out here on purpose: the test checks the gateway's table, it does not reuse it.

const WEIGHTS: Record<string, number> = {
  getSlot: 1,
  getBlockHeight: 1,
  getBalance: 1,
  getLatestBlockhash: 1,
  getEpochInfo: 1,
  getAccountInfo: 2,
  getMultipleAccounts: 5,
  getTransaction: 10,
  getSignaturesForAddress: 10,
  getBlockTime: 10,
};
const METHODS = Object.keys(WEIGHTS);
const REQUESTS = 10_000;
const BATCH = 10;
const SUBMISSIONS = 40;
const STREAMED = 25;
const TOKEN = 'tok-billing-e2e-0123456789';
const RENTAL = 'bill-e2e';
const API_KEY = '5a0e6c1d-7b2f-4c3a-9d8e-1f2a3b4c5d6e';

describe('billing end to end: gateway and submission traffic on Kafka, through a broker restart and a SIGKILL', function () {
  this.timeout(900_000);

  it('bills exactly the weights of the requests made', async () => {
    const broker = await restartableBroker();
    const { log } = quietLog('warn');
    const kafka = new KafkaBus({ brokers: broker.brokers, clientId: 'billing-e2e', idempotent: true, retry: { retries: 1, maxRetryTimeMs: 1_000 }, log });
    const topic = 'usage.billing-e2e';
    await kafka.createTopics([{ name: topic, partitions: 3, compacted: false }]);
    const usage = new UsageProducer(kafka, { topic, log, registry: new Registry(), retryMaxMs: 1_000, closeTimeoutMs: 120_000 });
    const localBus = new EmbeddedBus(); // the submission service's delivery feed and traces (stream.transactions, stream.slots, submit.traces)
    await localBus.createTopics(defaultTopicSpecs().filter((s) => s.name === TOPIC.streamTransactions || s.name === TOPIC.streamSlots || s.name === TOPIC.submitTraces));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-e2e-'));
    let chain: LocalChain | undefined;
    let gw: TestGateway | undefined;
    let submit: SubmitService | undefined;
    let job: BillingChild | undefined;
    let stream: TestFanout | undefined;
    try {
      chain = await localChain();
      const r = rental({ id: RENTAL, ips: ['127.0.0.1'], apiKeys: [API_KEY], tokens: [TOKEN], rps: 1_000_000, tps: 10_000, region: 'fra' });
      gw = await testGateway({ upstreams: [chainUpstream(chain)], rentals: [r], usage });
      const cfg = parseSubmitConfig({ enabled: true, listen: '127.0.0.1:0', udp: { enabled: false }, tips: { accounts: TIP_ACCOUNTS.map((k) => k.toBase58()), minLamports: MIN_TIP } });
      submit = await startSubmit(cfg, { bus: localBus, rentals: rentalsFromList([r]), usage, log, defaultUpstreams: [chain.httpUrl], registry: new Registry() });
      const submitUrl = `http://127.0.0.1:${submit.http.port}`;
      job = startBillingChild({ brokers: broker.brokers, group: 'billing-e2e', outDir: dir, topic });

      const payer = Keypair.fromSecretKey(chain.payer).publicKey.toBase58();
      const params: Record<string, unknown[]> = {
        getBalance: [payer],
        getAccountInfo: [payer, { encoding: 'base64' }],
        getMultipleAccounts: [[payer]],
        getTransaction: ['1111111111111111111111111111111111111111111111111111111111111111'],
        getSignaturesForAddress: [payer, { limit: 1 }],
        getBlockTime: [0],
      };
      const expected = new Map<string, number>();
      let sent = 0;
      const sendBatches = async (n: number): Promise<void> => {
        for (let b = 0; b < n; b++) {
          const items = Array.from({ length: BATCH }, (_v, i) => {
            const method = METHODS[(sent + i) % METHODS.length]!;
            expected.set(method, (expected.get(method) ?? 0) + WEIGHTS[method]!);
            return { jsonrpc: '2.0', id: i, method, params: params[method] ?? [] };
          });
          sent += BATCH;
          const res = await post(gw!.http.url, JSON.stringify(items));
          assert.equal(res.status, 200, res.body);
          assert.equal((res.json as unknown[]).length, BATCH);
        }
      };
      const conn = new Connection(chain.httpUrl, 'processed');
      const funded = Keypair.fromSecretKey(chain.payer);
      const submitSome = async (n: number): Promise<void> => {
        const { blockhash } = await conn.getLatestBlockhash();
        for (let i = 0; i < n; i++) {
          const res = await fetch(`${submitUrl}/binary?api-key=${API_KEY}`, { method: 'POST', body: legacyTx({ payer: funded, blockhash }) });
          assert.equal(res.status, 200, await res.text());
          expected.set('binary', (expected.get('binary') ?? 0) + 1);
        }
      };

      // The stream surface: transactions written to the rental's stream are billed per period and at its end.
      stream = await startTestFanout({ auth: { mode: 'token' } }, rentalsFromList([r]), localBus, { usage, usagePeriodMs: 500 });
      const meta = new grpc.Metadata();
      meta.set('x-token', TOKEN);
      const sub = StreamClient.open(stream.address, { metadata: meta });
      sub.send({ transactions: { billed: { accountInclude: [testKey58(1, 99)] } }, pingId: 1 });
      await sub.waitFor((x) => x.pingId === 1);
      await stream.publishTx(...Array.from({ length: STREAMED }, () => makeTx({ keys: [testKey(1, 99)] })));
      await waitFor(() => sub.responses.filter((x) => x.transaction !== undefined).length === STREAMED, 30_000, 'the streamed transactions');
      await sub.close();
      expected.set('Subscribe', STREAMED);

      await sendBatches(300);
      await submitSome(SUBMISSIONS / 2);
      await waitFor(() => totalsIn([dir], RENTAL).events > 0, 120_000, 'the job to count something');
      job.proc.kill('SIGKILL');
      await job.exited();
      await sendBatches(200);
      job = startBillingChild({ brokers: broker.brokers, group: 'billing-e2e', outDir: dir, topic });
      await sendBatches(200);
      await broker.stop();
      await sendBatches(100); // metered while no broker runs: the usage producer holds the events
      await submitSome(SUBMISSIONS / 2);
      await broker.start();
      await sendBatches(REQUESTS / BATCH - 800);
      assert.equal(sent, REQUESTS);
      await usage.flush();

      const want = new Map([...expected].map(([m, u]) => [`${RENTAL}|${m}`, u]));
      const units = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);
      const same = (): boolean => {
        const got = totalsIn([dir], RENTAL).byKey;
        return got.size === want.size && [...want].every(([k, u]) => got.get(k) === u);
      };
      await waitFor(same, 300_000, `${units(want)} units in the ledgers`).catch((e: Error) => {
        throw new Error(`${e.message}; ledgers hold ${units(totalsIn([dir], RENTAL).byKey)}; job said: ${job!.stderr().slice(-600)}`);
      });
      await new Promise((res) => setTimeout(res, 1_500)); // a late replay would show as more units than were metered
      const got = totalsIn([dir], RENTAL);
      assert.deepEqual(got.byKey, want);
      // One event per metered request and submission; the stream's are one per rental and period.
      assert.ok(got.events >= REQUESTS + SUBMISSIONS + 1 && got.events <= REQUESTS + SUBMISSIONS + STREAMED, `${got.events} events`);
      // Ten getTransaction in one batch are 100 units: the batches above hold exactly one per 10 items.
      assert.equal(got.byKey.get(`${RENTAL}|getTransaction`), (REQUESTS / METHODS.length) * 10);
    } finally {
      job?.proc.kill('SIGKILL');
      await stream?.close();
      await submit?.close();
      await gw?.close();
      await usage.close();
      await chain?.close();
      await localBus.close();
      await kafka.close();
      await broker.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
