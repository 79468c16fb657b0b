import bs58 from 'bs58';
import WebSocket from 'ws';
import type { SubscribeResponse } from '../../proto/gen/arpc_pb';
import { parseConfig } from '../../infra/config';
import { randomKeypair } from '../../infra/base/keypair';
import { launch } from '../../infra/launcher';
import { balance, chainClient, latestBlockhash, sendTx, transfer, waitConfirmed } from '../support/chain';
import { quietLog } from '../support/log-capture';
import { StreamClient } from '../support/stream-client';
import { sleep, summarize, type BenchResult } from './stats';

// The whole loop on one machine (`npm start`'s wiring, embedded bus, in this process):
//   sendTransaction → executed by the local chain → entries shredded to ingest (leader check on) → bus → fanout
//   → a gRPC subscriber filtering on the sender holds the transaction.
// Same-run references, on the very same transactions:
//   - the chain alone: sendTransaction → signatureNotification at `confirmed` (its block frozen) over PubSub;
//   - sendTransaction's HTTP answer (the node executed it).
// Transfers are paced (RATE/s, one sender), so this is latency at light load, not throughput.

const COUNT = 200;
const RATE = 20;

interface Pending {
  sentAt: number;
  answeredAt?: number;
  confirmedAt?: number;
  streamedAt?: number;
}

export async function benchLoop(): Promise<BenchResult[]> {
  const cfg = parseConfig({
    metrics: { enabled: false },
    admin: { enabled: false },
    localchain: { enabled: true, listen: '127.0.0.1:0' },
    ingest: { listen: '127.0.0.1:0' },
    fanout: { listen: '127.0.0.1:0' },
  });
  const running = await launch(cfg, quietLog('warn').log);
  const e = running.endpoints;
  const sub = StreamClient.open(e.stream!);
  const ws = new WebSocket(e.chain!.ws);
  try {
    const { call, payer } = chainClient(e);
    const sender = randomKeypair();
    const to = randomKeypair().publicKey;
    const fund = transfer(payer, sender.publicKey, 100_000_000_000n, await latestBlockhash(call));
    await sendTx(call, fund.tx);
    await waitConfirmed(call, fund.signature);
    if ((await balance(call, sender.publicKey)) === 0) throw new Error('sender not funded');

    const bySig = new Map<string, Pending>();
    sub.call.on('data', (r: SubscribeResponse) => {
      const sig = r.getTransaction()?.getSignaturesList_asU8()[0];
      if (sig === undefined) return;
      const p = bySig.get(bs58.encode(sig));
      if (p !== undefined && p.streamedAt === undefined) p.streamedAt = performance.now();
    });
    sub.send({ transactions: { loop: { accountInclude: [bs58.encode(sender.publicKey)] } }, pingId: 1 });
    await sub.waitFor((r) => r.pingId === 1, 10_000);

    if (ws.readyState !== WebSocket.OPEN) {
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
    }
    const subAcks = new Map<number, (subId: number) => void>();
    const subToSig = new Map<number, string>();
    ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString()) as { id?: number; result?: number; method?: string; params?: { subscription: number } };
      if (m.id !== undefined && typeof m.result === 'number') subAcks.get(m.id)?.(m.result);
      if (m.method === 'signatureNotification' && m.params !== undefined) {
        const p = bySig.get(subToSig.get(m.params.subscription) ?? '');
        if (p !== undefined && p.confirmedAt === undefined) p.confirmedAt = performance.now();
      }
    });

    let blockhash = await latestBlockhash(call);
    const t0 = performance.now();
    for (let i = 0; i < COUNT; i++) {
      if (i % 50 === 0) blockhash = await latestBlockhash(call);
      const t = transfer(sender, to, BigInt(1_000_000 + i), blockhash);
      // Subscribe first (acknowledged), so the notification cannot be missed.
      const subId = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('signatureSubscribe not acknowledged within 5 s')), 5000);
        subAcks.set(i + 1, (id) => {
          clearTimeout(timer);
          subAcks.delete(i + 1);
          resolve(id);
        });
        ws.send(JSON.stringify({ jsonrpc: '2.0', id: i + 1, method: 'signatureSubscribe', params: [t.signature, { commitment: 'confirmed' }] }));
      });
      subToSig.set(subId, t.signature);
      const p: Pending = { sentAt: performance.now() };
      bySig.set(t.signature, p);
      void sendTx(call, t.tx).then(() => (p.answeredAt = performance.now()));
      const next = t0 + ((i + 1) * 1000) / RATE;
      await sleep(Math.max(0, next - performance.now()));
    }
    const deadline = performance.now() + 10_000;
    const done = (): boolean => [...bySig.values()].every((p) => p.streamedAt !== undefined && p.confirmedAt !== undefined);
    while (!done() && performance.now() < deadline) await sleep(20);

    const all = [...bySig.values()];
    const lat = (pick: (p: Pending) => number | undefined): number[] => all.flatMap((p) => (pick(p) === undefined ? [] : [pick(p)! - p.sentAt]));
    const row = (name: string, samples: number[], note?: string): BenchResult => {
      const s = summarize(samples);
      return { bench: 'loop', case: name, figures: { n: s.count, of: all.length, p50_ms: s.p50, p99_ms: s.p99, max_ms: s.max }, ...(note !== undefined ? { note } : {}) };
    };
    return [
      row('sendTransaction → gRPC subscriber holds it (whole loop)', lat((p) => p.streamedAt), `${RATE} tx/s from one sender; slots of ${cfg.localchain.slotMs} ms, entries shredded every ${cfg.localchain.entryBatchMs} ms mid-slot`),
      row('reference: sendTransaction → signatureNotification confirmed (chain alone)', lat((p) => p.confirmedAt)),
      row('reference: sendTransaction HTTP answer (executed)', lat((p) => p.answeredAt)),
    ];
  } finally {
    ws.close();
    await sub.close();
    await running.stop();
  }
}
