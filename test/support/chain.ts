import bs58 from 'bs58';
import { jsonRpc, type JsonRpcCall } from '../../infra/base/json-rpc';
import { firstSignature, signedTransfer } from '../../infra/local/demo/transfers';
import type { Endpoints } from '../../infra/base/endpoints';
import { keypairFromSeed, type Keypair } from '../../infra/base/keypair';

// A client's view of the local chain for tests and benches: the funded payer from the endpoints file, signed
// System transfers, and confirmation through the chain's own JSON-RPC.

export interface ChainClient {
  call: JsonRpcCall;
  payer: Keypair;
}

export function chainClient(e: Endpoints): ChainClient {
  if (e.chain === undefined) throw new Error('endpoints: no chain');
  const secret = e.demo?.payerSecretKey;
  if (secret === undefined || secret.length !== 64) throw new Error('endpoints: demo.payerSecretKey is not 64 numbers');
  return { call: jsonRpc(e.chain.http), payer: keypairFromSeed(Buffer.from(secret.slice(0, 32))) };
}

export async function latestBlockhash(call: JsonRpcCall): Promise<Buffer> {
  const r = await call<{ value: { blockhash: string } }>('getLatestBlockhash', [{ commitment: 'confirmed' }]);
  return Buffer.from(bs58.decode(r.value.blockhash));
}

/** A signed transfer, ready to send, with its base58 signature. */
export function transfer(from: Keypair, to: Buffer, lamports: bigint, blockhash: Buffer): { tx: Buffer; signature: string } {
  const tx = signedTransfer(from, to, lamports, blockhash);
  return { tx, signature: bs58.encode(firstSignature(tx)) };
}

export async function sendTx(call: JsonRpcCall, tx: Buffer): Promise<string> {
  return call<string>('sendTransaction', [tx.toString('base64'), { encoding: 'base64' }]);
}

export interface SignatureStatus {
  slot: number;
  err: unknown;
  confirmationStatus: string | null;
}

/** Polls getSignatureStatuses until the signature is at least confirmed. */
export async function waitConfirmed(call: JsonRpcCall, signature: string, timeoutMs = 30_000): Promise<SignatureStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await call<{ value: Array<SignatureStatus | null> }>('getSignatureStatuses', [[signature]]);
    const s = r.value[0];
    if (s != null && (s.confirmationStatus === 'confirmed' || s.confirmationStatus === 'finalized')) return s;
    if (Date.now() > deadline) throw new Error(`${signature} not confirmed within ${timeoutMs} ms (last status ${JSON.stringify(s)})`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function balance(call: JsonRpcCall, account: Buffer): Promise<number> {
  return (await call<{ value: number }>('getBalance', [bs58.encode(account), { commitment: 'confirmed' }])).value;
}
