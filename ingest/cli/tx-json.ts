import bs58 from 'bs58';
import type { DecodedTxn, TxnVersion } from '../../proto/txn/decode';

// One decoded transaction as a JSON object (meridian decode's output line). Keys, hashes and signatures in
// base58; programIds per instruction, in instruction order (so duplicates repeat). v1 transactions add
// `config`: the mask and the values it selects (priority fee as a decimal string: a u64 does not fit a JSON
// number); a clear bit is an absent key, and the SIMD's default applies.

export interface TxJson {
  type: 'tx';
  slot: number;
  signature: string;
  version: TxnVersion;
  header: [number, number, number];
  signatures: string[];
  accountKeys: string[];
  recentBlockhash: string;
  numInstructions: number;
  programIds: string[];
  addressTableLookups: Array<{ accountKey: string; writableIndexes: number[]; readonlyIndexes: number[] }>;
  wireLen: number;
  config?: { mask: number; priorityFee?: string; computeUnitLimit?: number; loadedAccountsDataSizeLimit?: number; heapSize?: number };
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
    ...(d.config === null ? {} : { config: configJson(d.config) }),
  };
}

function configJson(c: NonNullable<DecodedTxn['config']>): NonNullable<TxJson['config']> {
  const o: NonNullable<TxJson['config']> = { mask: c.mask };
  if (c.priorityFee !== undefined) o.priorityFee = c.priorityFee.toString();
  if (c.computeUnitLimit !== undefined) o.computeUnitLimit = c.computeUnitLimit;
  if (c.loadedAccountsDataSizeLimit !== undefined) o.loadedAccountsDataSizeLimit = c.loadedAccountsDataSizeLimit;
  if (c.heapSize !== undefined) o.heapSize = c.heapSize;
  return o;
}
