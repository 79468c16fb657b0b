import crypto from 'node:crypto';
import bs58 from 'bs58';
import { Account, LiteSvm } from 'litesvm/dist/internal';
import { Pool } from 'undici';
import { keypairFromSeed, randomKeypair } from '../../infra/keys';
import { startLocalChain } from '../../infra/localchain';
import { transferTx } from '../../infra/localchain/system-tx';
import { quietLog } from '../support/log-capture';
import { summarize, type BenchResult } from './stats';

// Executed transactions/s of the local chain node: signed System transfers sent with sendTransaction over
// HTTP (keep-alive pool, CONCURRENCY requests in flight), with preflight (simulate, then execute: what clients
// do by default) and with skipPreflight; "executed" = the node's transaction count grew by that many. The
// same-run reference is litesvm called directly on the same kind of transactions (no RPC, no blocks, no PoH).
// BENCH_LOCALCHAIN_TXS scales the run (default 2000 per case).

const N = Number(process.env.BENCH_LOCALCHAIN_TXS ?? 2000);
const CONCURRENCY = 16;

function makeTxs(seed: Buffer, blockhash: Buffer, n: number): Buffer[] {
  const payer = keypairFromSeed(seed);
  const to = crypto.randomBytes(32);
  // Distinct amounts → distinct signatures; above rent exemption so every transfer succeeds.
  return Array.from({ length: n }, (_, i) => transferTx(payer, to, 1_000_000n + BigInt(i), blockhash));
}

function direct(): BenchResult {
  const svm = new LiteSvm();
  svm.setBlockhashCheck(false);
  svm.setTransactionHistory(0n);
  const payer = randomKeypair();
  svm.setAccount(payer.publicKey, new Account(10n ** 15n, new Uint8Array(0), new Uint8Array(32), false, 0n));
  const txs = makeTxs(payer.seed, Buffer.from(bs58.decode(svm.latestBlockhash())), N);
  const t0 = performance.now();
  let ok = 0;
  for (const tx of txs) if (svm.sendLegacyTransaction(tx).constructor.name === 'TransactionMetadata') ok++;
  const s = (performance.now() - t0) / 1000;
  return { bench: 'localchain', case: 'reference: litesvm direct (same transfers)', figures: { txs: N, executed: ok, tx_per_s: ok / s } };
}

async function overHttp(skipPreflight: boolean): Promise<BenchResult> {
  const node = await startLocalChain({ host: '127.0.0.1', port: 0, log: quietLog().log, ledgerTransactions: 4 * N });
  const pool = new Pool(node.httpUrl, { connections: CONCURRENCY });
  const call = async (method: string, params: unknown[]): Promise<{ result?: unknown; error?: { message: string } }> => {
    const r = await pool.request({ path: '/', method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
    return (await r.body.json()) as { result?: unknown; error?: { message: string } };
  };
  try {
    const bh = ((await call('getLatestBlockhash', [])).result as { value: { blockhash: string } }).value.blockhash;
    const txs = makeTxs(Buffer.from(node.payer.subarray(0, 32)), Buffer.from(bs58.decode(bh)), N).map((t) => t.toString('base64'));
    const count0 = (await call('getTransactionCount', [{ commitment: 'processed' }])).result as number;
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
    const executed = ((await call('getTransactionCount', [{ commitment: 'processed' }])).result as number) - count0;
    const l = summarize(lat);
    return {
      bench: 'localchain',
      case: `sendTransaction over HTTP, ${skipPreflight ? 'skipPreflight' : 'preflight'} (${CONCURRENCY} in flight)`,
      figures: { txs: N, executed, tx_per_s: executed / s, p50_ms: l.p50, p99_ms: l.p99 },
      note: errors > 0 ? `${errors} sends answered an error` : undefined,
    };
  } finally {
    await pool.close();
    await node.close();
  }
}

export async function benchLocalChain(): Promise<BenchResult[]> {
  const ref = direct();
  return [ref, await overHttp(false), await overHttp(true)];
}
