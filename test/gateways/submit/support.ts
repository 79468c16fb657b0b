import crypto from 'node:crypto';
import {
  AddressLookupTableAccount,
  Keypair,
  PublicKey,
  SystemProgram,
  Transaction,
  TransactionInstruction,
  TransactionMessage,
  VersionedTransaction,
} from '@solana/web3.js';
import { rentalsFromList, type RentalRegistry } from '../../../bus/rental-registry';
import type { Rental } from '../../../bus/topics/rentals';
import type { Forwarder } from '../../../gateways/submit/forwarder';

// Real signed transactions built with @solana/web3.js and fresh keypairs, for the submission tests and bench.

export const MIN_TIP = 1_000_000;
export const TIP_ACCOUNTS = [Keypair.generate().publicKey, Keypair.generate().publicKey];

export function rental(over: Partial<Rental> = {}): Rental {
  return { id: `r-${crypto.randomUUID().slice(0, 8)}`, rps: 100, tps: 1000, region: 'local', ips: [], apiKeys: [crypto.randomUUID()], tokens: [], dedicatedPaths: [], pps: 0, evmIps: [], status: 'active', ...over };
}

export function registry(...rentals: Rental[]): RentalRegistry {
  return rentalsFromList(rentals);
}

/** A blockhash-shaped value (for tests that never reach the chain). */
export function fakeBlockhash(): string {
  return new PublicKey(crypto.randomBytes(32)).toBase58();
}

export interface TxOptions {
  payer?: Keypair;
  blockhash?: string;
  /** Lamports of the tip; null = no tip instruction. */
  tip?: number | null;
  tipAccount?: PublicKey;
  /** Extra instructions before the tip. */
  extra?: TransactionInstruction[];
  /** Transfer to a fresh account of this many lamports (makes each transaction distinct). */
  amount?: number;
  to?: PublicKey;
}

function instructions(payer: Keypair, o: TxOptions): TransactionInstruction[] {
  const ixs: TransactionInstruction[] = [...(o.extra ?? [])];
  ixs.push(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: o.to ?? Keypair.generate().publicKey, lamports: o.amount ?? 1_000_000 + Math.floor(Math.random() * 1000) }));
  const tip = o.tip === undefined ? MIN_TIP : o.tip;
  if (tip !== null) ixs.push(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: o.tipAccount ?? TIP_ACCOUNTS[0]!, lamports: tip }));
  return ixs;
}

/** A signed legacy transaction: a transfer plus (by default) a minimum tip. */
export function legacyTx(o: TxOptions = {}): Buffer {
  const payer = o.payer ?? Keypair.generate();
  const tx = new Transaction({ feePayer: payer.publicKey, recentBlockhash: o.blockhash ?? fakeBlockhash() });
  tx.add(...instructions(payer, o));
  tx.sign(payer);
  return tx.serialize();
}

/** A signed v0 transaction; `tables` lets the compiler move non-signer keys into lookup tables. */
export function v0Tx(o: TxOptions & { tables?: AddressLookupTableAccount[] } = {}): Buffer {
  const payer = o.payer ?? Keypair.generate();
  const msg = new TransactionMessage({ payerKey: payer.publicKey, recentBlockhash: o.blockhash ?? fakeBlockhash(), instructions: instructions(payer, o) }).compileToV0Message(o.tables ?? []);
  const tx = new VersionedTransaction(msg);
  tx.sign([payer]);
  return Buffer.from(tx.serialize());
}

export function lookupTable(addresses: PublicKey[]): AddressLookupTableAccount {
  return new AddressLookupTableAccount({
    key: Keypair.generate().publicKey,
    state: { deactivationSlot: BigInt('18446744073709551615'), lastExtendedSlot: 0, lastExtendedSlotStartIndex: 0, authority: undefined, addresses },
  });
}

/** Records what the pipeline dispatched (unit tests; the integration tests forward to the local chain node). */
export class RecordingForwarder implements Forwarder {
  readonly sent: Buffer[] = [];
  full = false;
  forward(tx: Buffer): boolean {
    if (this.full) return false;
    this.sent.push(Buffer.from(tx));
    return true;
  }
  async close(): Promise<void> {}
}
