import { fork, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import bs58 from 'bs58';
import { Account, LiteSvm } from 'litesvm/dist/internal';
import { Pool } from 'undici';
import { keypairFromSeed, randomKeypair } from '../../infra/base/keypair';
import { transferTx } from '../../infra/local/chain/system-tx';
import { summarize, type BenchResult } from './stats';

// Executed transactions/s of the local chain node: signed System transfers sent with sendTransaction over
// HTTP (keep-alive pool, CONCURRENCY requests in flight) to a node in its own process, with preflight
// (simulate, then execute: what clients do by default) and with skipPreflight; "executed" = the node's
// transaction count grew by that many. Beside the wall-clock rate, the rate per CPU second of the node process
// (the machine's cores are shared with the load generator and whatever else runs). The same-run reference is
// litesvm called directly on the same kind of transactions (no RPC, no blocks, no PoH, no shreds).
// BENCH_LOCALCHAIN_TXS scales the run (default 2000 per case).

const N = Number(process.env.BENCH_LOCALCHAIN_TXS ?? 2000);
const CONCURRENCY = 16;
const WARMUP = 500;

function makeTxs(seed: Buffer, blockhash: Buffer, n: number, salt: number): Buffer[] {
  const payer = keypairFromSeed(seed);
  const to = crypto.randomBytes(32);
  // Distinct amounts → distinct signatures; above rent exemption so every transfer succeeds.
  return Array.from({ length: n }, (_, i) => transferTx(payer, to, 1_000_000n + BigInt(salt * 10_000_000 + i), blockhash));
}

function direct(): BenchResult {
  const svm = new LiteSvm();
  svm.setBlockhashCheck(false);
  svm.setTransactionHistory(0n);
  const payer = randomKeypair();
  svm.setAccount(payer.publicKey, new Account(10n ** 15n, new Uint8Array(0), new Uint8Array(32), false, 0n));
  const txs = makeTxs(payer.seed, Buffer.from(bs58.decode(svm.latestBlockhash())), N, 0);
  const t0 = performance.now();
  let ok = 0;
  for (const tx of txs) if (svm.sendLegacyTransaction(tx).constructor.name === 'TransactionMetadata') ok++;
  const s = (performance.now() - t0) / 1000;
  return { bench: 'localchain', case: 'reference: litesvm direct (same transfers)', figures: { txs: N, executed: ok, tx_per_s: ok / s, tx_per_cpu_s: ok / s } };
}

interface Child {
  proc: ChildProcess;
  httpUrl: string;
  payer: Buffer;
  cpu(): Promise<number>;
  close(): Promise<void>;
}

async function startChild(): Promise<Child> {
  const proc = fork(path.join(__dirname, '..', 'infra', 'local', 'chain', 'node-child.js'), [], { env: { ...process.env, LOCALCHAIN_LEDGER_TXS: String(4 * N) }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const ready = await new Promise<{ httpUrl: string; payer: number[] }>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code) => reject(new Error(`node child exited (${code})`)));
    proc.on('message', (m: { ready?: { httpUrl: string; payer: number[] } }) => { if (m.ready !== undefined) resolve(m.ready); });
  });
  return {
    proc,
    httpUrl: ready.httpUrl,
    payer: Buffer.from(ready.payer),
    cpu: () => new Promise((resolve) => {
      const on = (m: { cpu?: { user: number; system: number } }): void => {
        if (m.cpu === undefined) return;
        proc.off('message', on);
        resolve((m.cpu.user + m.cpu.system) / 1e6);
      };
      proc.on('message', on);
      proc.send('cpu');
    }),
    close: () => new Promise((resolve) => {
      proc.removeAllListeners('exit');
      proc.once('exit', () => resolve());
      proc.send('close');
    }),
  };
}

async function overHttp(child: Child, skipPreflight: boolean, salt: number, n = N): Promise<BenchResult> {
  const pool = new Pool(child.httpUrl, { connections: CONCURRENCY });
  const call = async (method: string, params: unknown[]): Promise<{ result?: unknown; error?: { message: string } }> => {
    const r = await pool.request({ path: '/', method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
    return (await r.body.json()) as { result?: unknown; error?: { message: string } };
  };
  try {
    const bh = ((await call('getLatestBlockhash', [])).result as { value: { blockhash: string } }).value.blockhash;
    const txs = makeTxs(child.payer.subarray(0, 32), Buffer.from(bs58.decode(bh)), n, salt).map((t) => t.toString('base64'));
    const count0 = (await call('getTransactionCount', [{ commitment: 'processed' }])).result as number;
    const cpu0 = await child.cpu();
    const lat: number[] = [];
    let next = 0;
    let errors = 0;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < txs.length) {
        const tx = txs[next++]!;
        const s = performance.now();
        const r = await call('sendTransaction', [tx, { encoding: 'base64', skipPreflight }]);
        lat.push(performance.now() - s);
        if (r.error !== undefined) errors++;
      }
    }));
    const s = (performance.now() - t0) / 1000;
    const cpu = (await child.cpu()) - cpu0;
    const executed = ((await call('getTransactionCount', [{ commitment: 'processed' }])).result as number) - count0;
    const l = summarize(lat);
    return {
      bench: 'localchain',
      case: `sendTransaction over HTTP, ${skipPreflight ? 'skipPreflight' : 'preflight'} (${CONCURRENCY} in flight)`,
      figures: { txs: n, executed, tx_per_s: executed / s, tx_per_cpu_s: executed / cpu, p50_ms: l.p50, p99_ms: l.p99 },
      note: errors > 0 ? `${errors} sends answered an error` : undefined,
    };
  } finally {
    await pool.close();
  }
}

export async function benchLocalChain(): Promise<BenchResult[]> {
  const ref = direct();
  const child = await startChild();
  try {
    // Warm-up (JIT, litesvm's program cache): the first few hundred transactions run several times slower.
    await overHttp(child, true, 3, WARMUP);
    return [ref, await overHttp(child, false, 1), await overHttp(child, true, 2)];
  } finally {
    await child.close();
  }
}
