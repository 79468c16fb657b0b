import bs58 from 'bs58';
import type { DecodedTxn } from '../../proto/txn/decode';

// One decoded transaction as a JSON object (meridian decode's output line). Keys, hashes and signatures in
// base58; programIds per instruction, in instruction order (so duplicates repeat).

export interface TxJson {
  type: 'tx';
  slot: number;
  signature: string;
  version: 'legacy' | 0;
  header: [number, number, number];
  signatures: string[];
  accountKeys: string[];
  recentBlockhash: string;
  numInstructions: number;
  programIds: string[];
  addressTableLookups: Array<{ accountKey: string; writableIndexes: number[]; readonlyIndexes: number[] }>;
  wireLen: number;
}

const b58 = (b: Uint8Array): string => bs58.encode(b);

export function txJson(d: DecodedTxn): TxJson {
  const t = d.tx;
  return {
    type: 'tx',
    slot: Number(t.slot),
    signature: b58(t.signatures[0]!),
    version: d.version,
    header: [t.numRequiredSignatures, t.numReadonlySignedAccounts, t.numReadonlyUnsignedAccounts],
    signatures: t.signatures.map(b58),
    accountKeys: t.accountKeys.map(b58),
    recentBlockhash: b58(t.recentBlockhash),
    numInstructions: t.instructions.length,
    // The decoder guarantees 0 < programIdIndex < static key count.
    programIds: t.instructions.map((ix) => b58(t.accountKeys[ix.programIdIndex]!)),
    addressTableLookups: t.addressTableLookups.map((l) => ({
      accountKey: b58(l.accountKey),
      writableIndexes: [...l.writableIndexes],
      readonlyIndexes: [...l.readonlyIndexes],
    })),
    wireLen: d.wireLen,
  };
}
