import { Connection, Keypair } from '@solana/web3.js';
import { EmbeddedBus } from '../../bus/embedded';
import { rentalsFromList } from '../../bus/rental-registry';
import { parseSubmitConfig } from '../../gateways/submit/config';
import { startSubmit, type SubmitService } from '../../gateways/submit/service';
import type { TraceView } from '../../gateways/submit/trace';
import { Registry } from '../../infra/base/metrics';
import { parseIngestConfig } from '../../ingest/config';
import { startIngest } from '../../ingest/worker';
import { quietLog } from '../support/log-capture';
import { waitFor } from '../support/wait';
import { legacyTx, MIN_TIP, rental, TIP_ACCOUNTS } from '../gateways/submit/support';
import { startTpuCluster } from '../gateways/submit/tpu-cluster';

// A first measurement of the `tpu` route on the local multi-leader cluster (4 solana-streamer TPU servers,
// leaders rotating every 4 slots of 100 ms): per configuration (`tpu` alone, `rpc` alone), interleaved in rounds
// on the same cluster, N transactions at a fixed rate through /binary; figures: landing rate, slot delta p50/p99
// (from the traces: landed slot − slot at acceptance), and for `tpu` the time from the client's answer to the
// first leader's TPU handing out the packet, from the moment the client sent its request. Not yet in `npm run bench` and no packet loss relay: see RUNS.md.
//   npx ts-node --transpile-only test/bench/tpu.ts [rounds=3] [perRound=100] [txPerSec=50]

const [rounds = 3, perRound = 100, rate = 50] = process.argv.slice(2).map(Number);

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function main(): Promise<void> {
  const { log } = quietLog('warn');
  const bus = new EmbeddedBus({ log });
  const topics = { transactions: 'b-tx', slots: 'b-slots', traces: 'b-traces' };
  await bus.createTopics(Object.values(topics).map((name) => ({ name, partitions: 1, compacted: false })));
  const ingest = await startIngest(parseIngestConfig({ listen: '127.0.0.1:0', shredVersion: 'any', leader: { mode: 'off' } }), bus, log, { registry: new Registry(), topics: { transactions: topics.transactions, slots: topics.slots } });
  const cluster = await startTpuCluster({ leaders: 4, port: 0, slotMs: 100, shredTo: `${ingest.address.host}:${ingest.address.port}`, log });
  const mine = rental({ tps: 100_000, rps: 100_000 });
  const key = mine.apiKeys[0]!;
  const services: Record<string, SubmitService> = {};
  for (const route of ['tpu', 'rpc'] as const) {
    const cfg = parseSubmitConfig({
      enabled: true,
      listen: '127.0.0.1:0',
      udp: { enabled: false },
      tips: { accounts: TIP_ACCOUNTS.map((k) => k.toBase58()), minLamports: MIN_TIP },
      forwardUrls: [cluster.chain.httpUrl],
      routes: [route],
      topics: { ...topics, traces: `b-traces-${route}` },
      traces: { pollIntervalMs: 100, statusUrl: cluster.chain.httpUrl, commitment: 'processed' },
    });
    services[route] = await startSubmit(cfg, { bus, rentals: rentalsFromList([mine]), log, registry: new Registry() });
  }
  await waitFor(() => services.tpu!.tpu!.targets() !== null && Object.values(services).every((s) => s.tracing?.store.currentSlot !== null), 20_000, 'slots and schedule');
  const conn = new Connection(cluster.chain.httpUrl, 'processed');
  const payer = Keypair.fromSecretKey(cluster.chain.payer);
  const results: Record<string, { sent: number; landed: number; deltas: number[]; deliveryMs: number[] }> = {
    tpu: { sent: 0, landed: 0, deltas: [], deliveryMs: [] },
    rpc: { sent: 0, landed: 0, deltas: [], deliveryMs: [] },
  };
  for (let r = 0; r < rounds; r++) {
    for (const route of r % 2 === 0 ? ['tpu', 'rpc'] : ['rpc', 'tpu']) {
      const svc = services[route]!;
      const base = `http://127.0.0.1:${svc.http.port}`;
      const bh = (await conn.getLatestBlockhash('processed')).blockhash;
      const sent: Array<{ sig: string; sentAt: number }> = [];
      const t0 = Date.now();
      for (let i = 0; i < perRound; i++) {
        const due = t0 + (i * 1000) / rate;
        if (due > Date.now()) await new Promise((res) => setTimeout(res, due - Date.now()));
        const tx = legacyTx({ payer, blockhash: bh, amount: 1_000_000 + r * 10_000 + i });
        const sentAt = Date.now();
        const sig = await (await fetch(`${base}/binary?api-key=${key}`, { method: 'POST', body: tx })).text();
        sent.push({ sig, sentAt });
      }
      // Settle: every trace landed or expired, or 20 s.
      const deadline = Date.now() + 20_000;
      const views = new Map<string, TraceView>();
      while (Date.now() < deadline && views.size < sent.length) {
        for (const s of sent) {
          if (views.has(s.sig)) continue;
          const res = await fetch(`${base}/trace/${s.sig}?api-key=${key}`);
          if (res.status !== 200) continue;
          const t = ((await res.json()) as { trace: TraceView }).trace;
          if (t.landed !== null || t.state === 'expired') views.set(s.sig, t);
        }
        await new Promise((res) => setTimeout(res, 200));
      }
      const out = results[route]!;
      for (const s of sent) {
        out.sent++;
        const t = views.get(s.sig);
        if (t?.landed != null) {
          out.landed++;
          if (t.landed.slotDelta !== null) out.deltas.push(t.landed.slotDelta);
        }
        const a = cluster.arrivals.get(s.sig);
        if (route === 'tpu' && a !== undefined) out.deliveryMs.push(Math.min(...a.map((x) => x.at)) - s.sentAt);
      }
    }
  }
  for (const [route, o] of Object.entries(results)) {
    console.log(JSON.stringify({
      route,
      sent: o.sent,
      landing_rate: Number((o.landed / o.sent).toFixed(4)),
      slot_delta_p50: pct(o.deltas, 50),
      slot_delta_p99: pct(o.deltas, 99),
      ...(route === 'tpu' ? { request_to_leader_ms_p50: pct(o.deliveryMs, 50), request_to_leader_ms_p99: pct(o.deliveryMs, 99) } : {}),
    }));
  }
  console.log(JSON.stringify({ chain_tpu_intake: cluster.chain.tpuCounts() }));
  for (const s of Object.values(services)) await s.close();
  await cluster.close();
  await ingest.close();
  await bus.close();
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
