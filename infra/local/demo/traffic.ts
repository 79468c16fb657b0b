import bs58 from 'bs58';
import type { JsonRpcCall } from '../../base/json-rpc';
import { keypairFromSeed, randomKeypair, type Keypair } from '../../base/keypair';
import type { Log } from '../../base/log';
import { metrics } from '../../base/metrics';
import type { DemoConfig } from './config';
import { signedTransfer, type Tip } from './transfers';
import { createAndExtendTx, tableTransferTx } from './lookup-table';
import { decodeLookupTable } from '../../../proto/lookup-table/account';

// Demo traffic for the one-command local run: real signed System transfers that execute on the local chain.
// The chain puts them in its blocks and shreds those into ingest, so what a subscriber sees is the production
// path. Demo accounts are funded once from the chain's faucet payer, then pass lamports around a ring
// (account i → i+1), so only fees drain them and no transfer has to create an account.
//
// How a transaction reaches the chain is the launcher's choice (`send`): the chain's sendTransaction today,
// the submission service once it runs.

/** Hands one signed wire transaction to whatever carries it to the chain; rejects when it was refused. */
export type SendTx = (tx: Buffer) => Promise<void>;

export interface DemoDeps {
  /** JSON-RPC of the chain the transfers execute on (blockhash, balances). */
  call: JsonRpcCall;
  send: SendTx;
  /** A funded keypair of that chain, 64 bytes (seed ‖ public key). */
  payerSecretKey: Uint8Array;
  /** Paid in every transfer when `send` goes through the submission service, which requires one. */
  tip?: Tip;
}

export interface DemoTraffic {
  /** Base58 public keys of the demo senders: subscribe to one of them to see its transfers. */
  accounts: string[];
  /** Base58 key of the lookup table holding the demo accounts (demo.lookupTable), else undefined. */
  lookupTable: string | undefined;
  /** Transfers the chain accepted so far. */
  sent(): number;
  close(): Promise<void>;
}

const BLOCKHASH_REFRESH_MS = 5_000;
const FUNDING_TIMEOUT_MS = 30_000;

const sentTotal = metrics.counter('meridian_demo_sent_total', 'Demo transfers the chain accepted');
const failedTotal = metrics.counter('meridian_demo_send_errors_total', 'Demo transfers refused or not answered');
const skippedTotal = metrics.counter('meridian_demo_skipped_total', 'Demo ticks skipped because maxInFlight sends were outstanding');

async function latestBlockhash(call: JsonRpcCall): Promise<Buffer> {
  const r = await call<{ value?: { blockhash?: unknown } }>('getLatestBlockhash', [{ commitment: 'confirmed' }]);
  const bh = r?.value?.blockhash;
  if (typeof bh !== 'string') throw new Error('getLatestBlockhash: unexpected result shape');
  const bytes = Buffer.from(bs58.decode(bh));
  if (bytes.length !== 32) throw new Error('getLatestBlockhash: blockhash is not 32 bytes');
  return bytes;
}

async function balanceOf(call: JsonRpcCall, account: Buffer): Promise<number> {
  const r = await call<{ value?: unknown }>('getBalance', [bs58.encode(account), { commitment: 'confirmed' }]);
  return typeof r?.value === 'number' ? r.value : 0;
}

/** 1st, 10th, 100th… occurrence: enough to see a problem, never a flood. */
/**
 * Makes the demo table (create + extend in one transaction) and waits until its addresses are usable: the chain
 * holds them and a slot after the extension has begun (addresses appended in a slot are usable from the next).
 */
async function makeTable(deps: DemoDeps, payer: Keypair, accounts: Keypair[]): Promise<Buffer> {
  const recentSlot = await deps.call<number>('getSlot', [{ commitment: 'finalized' }]);
  const { tx, table } = createAndExtendTx(payer, BigInt(recentSlot), accounts.map((a) => a.publicKey), await latestBlockhash(deps.call), deps.tip);
  await deps.send(tx);
  const deadline = Date.now() + FUNDING_TIMEOUT_MS;
  for (;;) {
    const r = await deps.call<{ value?: { data?: unknown } | null }>('getAccountInfo', [bs58.encode(table), { encoding: 'base64', commitment: 'confirmed' }]);
    const data = r?.value?.data;
    if (Array.isArray(data) && typeof data[0] === 'string') {
      const d = decodeLookupTable(Buffer.from(data[0], 'base64'));
      if (d.ok && d.table.addresses.length === accounts.length * 32) {
        const slot = await deps.call<number>('getSlot', [{ commitment: 'processed' }]);
        if (BigInt(slot) > d.table.lastExtendedSlot) return table;
      }
    }
    if (Date.now() > deadline) throw new Error(`demo traffic: the lookup table was not usable within ${FUNDING_TIMEOUT_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const worthLogging = (n: number): boolean => Number.isInteger(Math.log10(n));

async function fund(cfg: DemoConfig, deps: DemoDeps, payer: Keypair, accounts: Keypair[]): Promise<void> {
  const blockhash = await latestBlockhash(deps.call);
  await Promise.all(accounts.map((a) => deps.send(signedTransfer(payer, a.publicKey, BigInt(cfg.fundLamports), blockhash, deps.tip))));
  const deadline = Date.now() + FUNDING_TIMEOUT_MS;
  for (const a of accounts) {
    while ((await balanceOf(deps.call, a.publicKey)) < cfg.fundLamports) {
      if (Date.now() > deadline) throw new Error(`demo traffic: funding of the demo accounts not confirmed within ${FUNDING_TIMEOUT_MS / 1000} s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export async function startDemoTraffic(cfg: DemoConfig, deps: DemoDeps, log: Log): Promise<DemoTraffic> {
  if (deps.payerSecretKey.length !== 64) throw new Error('demo traffic: payer secret key must be 64 bytes');
  const payer = keypairFromSeed(Buffer.from(deps.payerSecretKey.subarray(0, 32)));
  const senders = Array.from({ length: cfg.accounts }, () => randomKeypair());
  await fund(cfg, deps, payer, senders);
  const table = cfg.lookupTable ? await makeTable(deps, payer, senders) : undefined;

  let blockhash = await latestBlockhash(deps.call);
  let refreshing = false;
  const refresher = setInterval(() => {
    if (refreshing) return;
    refreshing = true;
    latestBlockhash(deps.call)
      .then((bh) => (blockhash = bh))
      .catch((e: unknown) => log.warn({ reason: e instanceof Error ? e.message : 'error' }, 'demo traffic: blockhash refresh failed'))
      .finally(() => (refreshing = false));
  }, BLOCKHASH_REFRESH_MS);

  // Every transfer differs in its amount (a run-wide counter), so signatures never repeat within a blockhash.
  let amount = 1n;
  let next = 0;
  let inFlight = 0;
  let sent = 0;
  let failed = 0;
  const tick = (): void => {
    if (inFlight >= cfg.maxInFlight) {
      skippedTotal.inc();
      return;
    }
    const from = senders[next]!;
    next = (next + 1) % senders.length;
    const to = senders[next]!;
    // Every other transfer names its recipient only through the table (index = the recipient's place in it).
    const viaTable = table !== undefined && amount % 2n === 0n;
    const tx = viaTable ? tableTransferTx(from, table, next, amount++, blockhash, deps.tip) : signedTransfer(from, to.publicKey, amount++, blockhash, deps.tip);
    inFlight++;
    deps.send(tx).then(
      () => {
        sent++;
        sentTotal.inc();
      },
      (e: unknown) => {
        failed++;
        failedTotal.inc();
        if (worthLogging(failed)) log.warn({ reason: e instanceof Error ? e.message : 'error', failed }, 'demo transfer not accepted');
      },
    ).finally(() => inFlight--);
  };
  const timer = setInterval(tick, 1000 / cfg.txPerSec);
  const accounts = senders.map((s) => bs58.encode(s.publicKey));
  const lookupTable = table === undefined ? undefined : bs58.encode(table);
  log.info({ accounts, txPerSec: cfg.txPerSec, lookupTable }, 'demo traffic: sending signed transfers to the local chain');

  return {
    accounts,
    lookupTable,
    sent: () => sent,
    close: async () => {
      clearInterval(timer);
      clearInterval(refresher);
      // Let outstanding sends settle so none lands on a closed chain after stop().
      const deadline = Date.now() + 2000;
      while (inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      log.info({ sent, failed }, 'demo traffic stopped');
    },
  };
}
