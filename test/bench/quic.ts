import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { Keypair, PublicKey, SystemProgram, Transaction } from '@solana/web3.js';
import { rentalsFromList } from '../../bus/rental-registry';
import { EmbeddedBus } from '../../bus/embedded';
import { defaultTopicSpecs } from '../../bus/topics';
import { parseSubmitConfig } from '../../gateways/submit/config';
import type { Forwarder } from '../../gateways/submit/forwarder';
import { parseQuicConfig } from '../../gateways/submit/quic/config';
import { QuicListener } from '../../gateways/submit/quic/listener';
import { QuicMetrics } from '../../gateways/submit/quic/metrics';
import { ensureTerminatorBinary, PROBE_BIN, TERMINATOR_BIN } from '../../gateways/submit/quic/terminator-build';
import { startSubmit } from '../../gateways/submit/service';
import { keypairFromSeed, sign } from '../../infra/base/keypair';
import { createLogger } from '../../infra/base/log';
import { Registry } from '../../infra/base/metrics';
import { Probe } from '../gateways/quic/probe';
import type { BenchResult } from './stats';

// Submission over QUIC on one connection, through the published SDK (`falcon-client`, in the probe process):
//   stream mode — distinct signed one-signature transactions (transfer + tip), 16 sends in flight, each send
//                 waiting for its [0x01, status] ack: transactions/s and ack latency p50/p99 as the SDK sees it;
//   datagrams   — a quinn client like the SDK's floods datagrams: datagrams/s the service received and judged.
// The pipeline runs for real (signature verification, tip check) and forwards to a counting sink.
// Same-run references: the pipeline called directly on the same transactions (its ceiling on this core), and
// bare ed25519 verifications/s. BENCH_QUIC_TX scales the run (default 20,000 transactions).

const N = Number(process.env.BENCH_QUIC_TX ?? 20_000);
const INFLIGHT = 16;
const DATAGRAMS = Number(process.env.BENCH_QUIC_DATAGRAMS ?? 20_000);
const TIP = new PublicKey(crypto.randomBytes(32));
const MARK = 1_234_567;

class SinkForwarder implements Forwarder {
  count = 0;
  forward(): boolean {
    this.count++;
    return true;
  }
  async close(): Promise<void> {}
}

/** N distinct signed transactions: one template message, the transfer amount patched, each signed anew. */
function transactions(n: number): Buffer[] {
  const seed = crypto.randomBytes(32);
  const payer = Keypair.fromSeed(seed);
  const kp = keypairFromSeed(seed);
  const t = new Transaction({ feePayer: payer.publicKey, recentBlockhash: new PublicKey(crypto.randomBytes(32)).toBase58() });
  t.add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: Keypair.generate().publicKey, lamports: MARK }));
  t.add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: TIP, lamports: 1_000_000 }));
  const message = t.compileMessage().serialize();
  const mark = Buffer.alloc(8);
  mark.writeBigUInt64LE(BigInt(MARK));
  const at = message.indexOf(mark);
  const out: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    message.writeBigUInt64LE(BigInt(MARK + i), at);
    out.push(Buffer.concat([Buffer.from([1]), sign(kp, message), message]));
  }
  return out;
}

function bareVerifyRate(txs: Buffer[]): number {
  const kp = keypairFromSeed(crypto.randomBytes(32));
  const msg = txs[0]!.subarray(65);
  const sig = sign(kp, msg);
  const pub = crypto.createPublicKey(kp.privateKey);
  const n = Math.min(txs.length, 20_000);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) crypto.verify(null, msg, pub, sig);
  return n / ((performance.now() - t0) / 1000);
}

// ---- the Node option, measured in the same run: @matrixai/quic (quiche via napi), server and client in this
// process, the same stream exchange (0x01 + 600 bytes, FIN → [0x01, 0x00]), awaiting each step as its API asks.
// Version 1.2.12, the last whose native packages were published for every platform it lists (2.0.9's exist for
// linux-x64 only, and a lock that names unpublished packages is one `npm ci` refuses); it is CommonJS.

export async function matrixaiStreams(inflight: number, ms: number): Promise<{ perSec: number; p50: number; p99: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mxquic-'));
  const cert = (name: string, cn: string): { key: string; cert: string } => {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ed25519', '-nodes', '-days', '1', '-subj', `/CN=${cn}`, '-keyout', `${dir}/${name}.key`, '-out', `${dir}/${name}.crt`], { stdio: 'ignore' });
    return { key: fs.readFileSync(`${dir}/${name}.key`, 'utf8'), cert: fs.readFileSync(`${dir}/${name}.crt`, 'utf8') };
  };
  const srv = cert('server', 'falcon');
  const cli = cert('client', crypto.randomUUID());
  fs.rmSync(dir, { recursive: true, force: true });
  const { QUICServer, QUICClient } = require('@matrixai/quic'); // eslint-disable-line @typescript-eslint/no-require-imports
  const { default: Logger, LogLevel } = require('@matrixai/logger'); // eslint-disable-line @typescript-eslint/no-require-imports
  const quiet = new Logger('bench', LogLevel.SILENT);
  const hmac = crypto.randomBytes(32);
  const mac = (k: ArrayBuffer, d: ArrayBuffer): Buffer => crypto.createHmac('sha256', Buffer.from(k)).update(Buffer.from(d)).digest();
  const server = new QUICServer({
    crypto: { key: hmac.buffer, ops: { sign: async (k: ArrayBuffer, d: ArrayBuffer) => mac(k, d).buffer, verify: async (k: ArrayBuffer, d: ArrayBuffer, sig: ArrayBuffer) => mac(k, d).equals(Buffer.from(sig)) } },
    config: { ...srv, verifyPeer: true, verifyCallback: async () => undefined, applicationProtos: ['falcon-tx'], initialMaxStreamsBidi: 256 },
    logger: quiet,
  });
  server.addEventListener('EventQUICServerConnection', (e: any) => { // eslint-disable-line @typescript-eslint/no-explicit-any
    e.detail.addEventListener('EventQUICConnectionStream', async (se: any) => { // eslint-disable-line @typescript-eslint/no-explicit-any
      const stream = se.detail;
      for await (const _c of stream.readable) void _c;
      const w = stream.writable.getWriter();
      await w.write(new Uint8Array([1, 0]));
      await w.close();
    });
  });
  await server.start({ host: '127.0.0.1', port: 0 });
  const client = await QUICClient.createQUICClient({ host: '127.0.0.1', port: server.port, serverName: 'falcon', crypto: { ops: { randomBytes: async (b: ArrayBuffer) => void crypto.randomFillSync(Buffer.from(b)) } }, config: { ...cli, verifyPeer: false, applicationProtos: ['falcon-tx'], initialMaxStreamsBidi: 256 }, logger: quiet });
  const payload = new Uint8Array(601).fill(7);
  payload[0] = 1;
  const lat: number[] = [];
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (performance.now() - t0 < ms) {
      const s0 = performance.now();
      const s = client.connection.newStream('bidi');
      const w = s.writable.getWriter();
      await w.write(payload);
      await w.close();
      for await (const _c of s.readable) void _c;
      lat.push(performance.now() - s0);
    }
  };
  await Promise.all(Array.from({ length: inflight }, worker));
  const secs = (performance.now() - t0) / 1000;
  await client.destroy({ force: true });
  await server.stop({ force: true });
  lat.sort((a, b) => a - b);
  return { perSec: lat.length / secs, p50: lat[Math.floor(lat.length / 2)] ?? NaN, p99: lat[Math.floor(lat.length * 0.99)] ?? NaN };
}

export async function benchQuic(): Promise<BenchResult[]> {
  await ensureTerminatorBinary(TERMINATOR_BIN);
  await ensureTerminatorBinary(PROBE_BIN);
  const key = crypto.randomUUID();
  const rental = { id: 'bench', rps: 1e9, tps: 1e9, region: 'local', ips: [], apiKeys: [key], tokens: [], dedicatedPaths: [], pps: 0, evmIps: [], status: 'active' as const };
  const bus = new EmbeddedBus();
  await bus.createTopics(defaultTopicSpecs());
  const log = createLogger({ level: 'error' });
  const reg = new Registry();
  const sink = new SinkForwarder();
  const cfg = parseSubmitConfig({ enabled: true, listen: '127.0.0.1:0', udp: { enabled: false }, tips: { accounts: [TIP.toBase58()], minLamports: 1_000_000 }, forwardUrls: [] });
  const service = await startSubmit(cfg, { bus, rentals: rentalsFromList([rental]), log, registry: reg, forwarder: sink });
  const quic = await QuicListener.start({ config: parseQuicConfig({ listen: '127.0.0.1:0' }), pipeline: service.pipeline, log, metrics: new QuicMetrics(reg) });
  const probe = await Probe.start();
  const file = path.join(os.tmpdir(), `meridian-quic-bench-${process.pid}.bin`);
  const results: BenchResult[] = [];
  try {
    const txs = transactions(N);
    fs.writeFileSync(file, Buffer.concat(txs.flatMap((t) => [Buffer.from([t.length & 0xff, t.length >> 8]), t])));

    // References first: the pipeline called directly, and bare verification, on this core in this run.
    const direct = txs.slice(0, Math.min(N, 10_000));
    let t0 = performance.now();
    for (const tx of direct) service.pipeline.submitNow({ apiKey: key, bytes: tx, transport: 'binary' });
    const directRate = direct.length / ((performance.now() - t0) / 1000);
    const verifyRate = bareVerifyRate(txs);

    const addr = `127.0.0.1:${quic.address.port}`;
    await probe.ok(`sdk connect ${addr} ${key}`);
    const accepted0 = service.pipeline.metrics.value('quic', 'accepted');
    const [count, secs, p50, p99, errors] = (await probe.ok(`sdk bench ${file} ${INFLIGHT}`)).split(' ').map(Number) as [number, number, number, number, number];
    const accepted = service.pipeline.metrics.value('quic', 'accepted') - accepted0;
    results.push({
      bench: 'quic',
      case: `stream mode, 1 connection, ${INFLIGHT} in flight (SDK)`,
      figures: { tx_per_s: count / secs, ack_p50_ms: p50, ack_p99_ms: p99, accepted, errors, ref_pipeline_direct_tx_per_s: directRate, ref_bare_verify_per_s: verifyRate },
      note: 'ack = SDK send_transaction_bytes until Ok (open stream, 0x01+tx, FIN, [0x01,status]); aim ≥ 5,000 tx/s, p99 < 5 ms',
    });

    await probe.ok(`raw connect ${addr} ${key}`);
    const dg0 = quic.metrics.value('received', 'datagram');
    const one = txs[0]!.toString('hex');
    t0 = performance.now();
    const [sent] = (await probe.ok(`raw dgflood ${DATAGRAMS} ${one}`)).split(' ').map(Number) as [number, number];
    // Received = what reached the pipeline; wait until the count stops moving.
    let last = -1;
    while (quic.metrics.value('received', 'datagram') !== last) {
      last = quic.metrics.value('received', 'datagram');
      await new Promise((r) => setTimeout(r, 200));
    }
    const received = last - dg0;
    const recvSecs = (performance.now() - t0) / 1000 - 0.2;
    results.push({
      bench: 'quic',
      case: 'datagrams, 1 connection (quinn client like the SDK)',
      figures: { received_per_s: received / recvSecs, received, sent, lost: sent - received, ref_pipeline_direct_tx_per_s: directRate },
      note: 'each datagram goes through the pipeline (verify + tip); the QUIC stack drops the oldest when its per-connection buffer is full',
    });

    // The transport alone: the same SDK run against a listener whose pipeline accepts at once (no verification),
    // i.e. what QUIC + the bridge cost per transaction; the real figure above is bounded by the pipeline.
    const bare = await QuicListener.start({
      config: parseQuicConfig({ listen: '127.0.0.1:0' }),
      pipeline: { authorize: () => rental, submitNow: (s) => ({ ok: true, signature: Buffer.from(s.bytes.subarray(1, 65)), forwarded: true }) },
      log,
      metrics: new QuicMetrics(new Registry()),
    });
    const p2 = await Probe.start();
    try {
      await p2.ok(`sdk connect 127.0.0.1:${bare.address.port} ${key}`);
      const [c2, s2, q50, q99, e2] = (await p2.ok(`sdk bench ${file} ${INFLIGHT}`)).split(' ').map(Number) as [number, number, number, number, number];
      results.push({
        bench: 'quic',
        case: `stream mode, transport only (pipeline = immediate accept), ${INFLIGHT} in flight`,
        figures: { tx_per_s: c2 / s2, ack_p50_ms: q50, ack_p99_ms: q99, errors: e2 },
      });
    } finally {
      await p2.close();
      await bare.close();
    }
    for (const inflight of [1, INFLIGHT]) {
      try {
        const m = await matrixaiStreams(inflight, 3000);
        results.push({ bench: 'quic', case: `@matrixai/quic 1.2.12 in-process, stream exchange, ${inflight} in flight`, figures: { tx_per_s: m.perSec, ack_p50_ms: m.p50, ack_p99_ms: m.p99 }, note: 'the measured Node option (why the terminator is Rust): no pipeline, no verification' });
      } catch (e) {
        results.push({ bench: 'quic', case: `@matrixai/quic, ${inflight} in flight`, figures: {}, note: `skipped: ${(e as Error).message}` });
      }
    }
  } finally {
    fs.rmSync(file, { force: true });
    await probe.close();
    await quic.close();
    await service.close();
    await bus.close();
  }
  return results;
}
