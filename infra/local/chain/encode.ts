import bs58 from 'bs58';
import type { TxFields } from '../../../proto/tx-fields';
import type { TxRecord } from './ledger';
import { RpcError, invalidParams, unsupportedVersion } from './rpc/errors';
import type { ExecMeta, ChainAccount, InnerIx } from './svm';

// Accounts and transactions in the shapes agave's RPC returns (UiAccount, EncodedTransactionWithStatusMeta,
// UiTransactionStatusMeta). Pure: records in, plain JSON-ready objects out.

export const ACCOUNT_ENCODINGS = ['base58', 'base64', 'base64+zstd', 'jsonParsed', 'binary'] as const;
export type AccountEncoding = (typeof ACCOUNT_ENCODINGS)[number];
export const TX_ENCODINGS = ['json', 'jsonParsed', 'base64', 'base58', 'binary'] as const;
export type TxEncoding = (typeof TX_ENCODINGS)[number];

/** agave refuses base58 for account data above this size. */
const MAX_BASE58_BYTES = 128;
const SYSTEM_PROGRAM = '11111111111111111111111111111111';

export interface DataSlice {
  offset: number;
  length: number;
}

export function encodeAccountData(data: Uint8Array, enc: AccountEncoding, slice?: DataSlice): unknown {
  let d = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (slice !== undefined) d = d.subarray(Math.min(slice.offset, d.length), Math.min(slice.offset + slice.length, d.length));
  switch (enc) {
    case 'base58':
    case 'binary': {
      if (d.length > MAX_BASE58_BYTES) {
        throw new RpcError(-32600, `Encoded binary (base 58) data should be less than ${MAX_BASE58_BYTES} bytes, please use Base64 encoding.`);
      }
      return enc === 'binary' ? bs58.encode(d) : [bs58.encode(d), 'base58'];
    }
    case 'base64+zstd':
      throw invalidParams('base64+zstd is not supported by this node (use base64)');
    default:
      // jsonParsed falls back to base64 for accounts no parser knows.
      return [d.toString('base64'), 'base64'];
  }
}

/** jsonParsed's parser: parsed data for accounts it knows (token accounts and mints), else null. */
export type AccountParser = (owner: string, data: Uint8Array) => unknown;

export function encodeAccount(a: ChainAccount, enc: AccountEncoding, slice?: DataSlice, parse?: AccountParser): Record<string, unknown> {
  const parsed = enc === 'jsonParsed' && slice === undefined && parse !== undefined ? parse(bs58.encode(a.owner), a.data) : null;
  return {
    data: parsed ?? encodeAccountData(a.data, enc, slice),
    executable: a.executable,
    lamports: a.lamports <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(a.lamports) : a.lamports,
    owner: bs58.encode(a.owner),
    rentEpoch: a.rentEpoch,
    space: a.data.length,
  };
}

function messageHeader(tx: TxFields): Record<string, number> {
  return {
    numReadonlySignedAccounts: tx.numReadonlySignedAccounts,
    numReadonlyUnsignedAccounts: tx.numReadonlyUnsignedAccounts,
    numRequiredSignatures: tx.numRequiredSignatures,
  };
}

function lookupsJson(tx: TxFields): unknown[] {
  return tx.addressTableLookups.map((l) => ({ accountKey: bs58.encode(l.accountKey), readonlyIndexes: [...l.readonlyIndexes], writableIndexes: [...l.writableIndexes] }));
}

function parsedInstruction(keys: string[], programIdIndex: number, accounts: Uint8Array, data: Uint8Array, stackHeight: number | null): Record<string, unknown> {
  const programId = keys[programIdIndex] ?? '';
  const accs = [...accounts].map((i) => keys[i] ?? '');
  const d = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (programId === SYSTEM_PROGRAM && d.length >= 4) {
    const kind = d.readUInt32LE(0);
    if (kind === 2 && d.length >= 12 && accs.length >= 2) {
      return { parsed: { info: { destination: accs[1], lamports: Number(d.readBigUInt64LE(4)), source: accs[0] }, type: 'transfer' }, program: 'system', programId, stackHeight };
    }
    if (kind === 0 && d.length >= 52 && accs.length >= 2) {
      return {
        parsed: { info: { lamports: Number(d.readBigUInt64LE(4)), newAccount: accs[1], owner: bs58.encode(d.subarray(20, 52)), source: accs[0], space: Number(d.readBigUInt64LE(12)) }, type: 'createAccount' },
        program: 'system', programId, stackHeight,
      };
    }
  }
  return { accounts: accs, data: bs58.encode(d), programId, stackHeight };
}

function messageJson(r: TxRecord, parsed: boolean): Record<string, unknown> {
  const tx = r.tx;
  const versioned = tx.versioned === true;
  const out: Record<string, unknown> = {};
  if (parsed) {
    const nStatic = tx.accountKeys.length;
    out.accountKeys = r.keys.map((k, i) => ({ pubkey: k, signer: i < tx.numRequiredSignatures, source: i < nStatic ? 'transaction' : 'lookupTable', writable: r.writable[i] === true }));
    out.instructions = tx.instructions.map((ix) => parsedInstruction(r.keys, ix.programIdIndex, ix.accounts, ix.data, null));
  } else {
    out.accountKeys = tx.accountKeys.map((k) => bs58.encode(k));
    out.header = messageHeader(tx);
    out.instructions = tx.instructions.map((ix) => ({ accounts: [...ix.accounts], data: bs58.encode(ix.data), programIdIndex: ix.programIdIndex, stackHeight: null }));
  }
  out.recentBlockhash = bs58.encode(tx.recentBlockhash);
  if (versioned) out.addressTableLookups = lookupsJson(tx);
  return out;
}

export function encodeTransaction(r: TxRecord, enc: TxEncoding): unknown {
  switch (enc) {
    case 'base64':
      return [r.raw.toString('base64'), 'base64'];
    case 'base58':
      return [bs58.encode(r.raw), 'base58'];
    case 'binary':
      return bs58.encode(r.raw);
    default:
      return { message: messageJson(r, enc === 'jsonParsed'), signatures: r.tx.signatures.map((s) => bs58.encode(s)) };
  }
}

export function errStatus(m: ExecMeta): { err: unknown; status: unknown } {
  const err = m.err === null ? null : m.err.json;
  return { err, status: err === null ? { Ok: null } : { Err: err } };
}

function innerJson(r: TxRecord | null, inner: InnerIx[][], parsed: boolean): unknown[] {
  const out: unknown[] = [];
  inner.forEach((list, index) => {
    if (list.length === 0) return;
    out.push({
      index,
      instructions: list.map((ii) => (parsed && r !== null
        ? parsedInstruction(r.keys, ii.programIdIndex, ii.accounts, ii.data, ii.stackHeight)
        : { accounts: [...ii.accounts], data: bs58.encode(ii.data), programIdIndex: ii.programIdIndex, stackHeight: ii.stackHeight })),
    });
  });
  return out;
}

export function returnDataJson(m: ExecMeta): unknown {
  return m.returnData === null ? null : { data: [m.returnData.data.toString('base64'), 'base64'], programId: bs58.encode(m.returnData.programId) };
}

export function innerInstructionsJson(inner: InnerIx[][]): unknown[] {
  return innerJson(null, inner, false);
}

export function encodeMeta(r: TxRecord, enc: TxEncoding, accountsOnly = false): Record<string, unknown> {
  const m = r.meta;
  const out: Record<string, unknown> = {
    ...errStatus(m),
    fee: m.fee,
    postBalances: m.postBalances,
    postTokenBalances: m.postTokenBalances,
    preBalances: m.preBalances,
    preTokenBalances: m.preTokenBalances,
  };
  if (accountsOnly) return out;
  out.innerInstructions = innerJson(r, m.innerInstructions, enc === 'jsonParsed');
  out.logMessages = m.logs;
  out.rewards = [];
  if (enc !== 'jsonParsed') out.loadedAddresses = { readonly: m.loaded.readonly.map((k) => bs58.encode(k)), writable: m.loaded.writable.map((k) => bs58.encode(k)) };
  out.computeUnitsConsumed = m.unitsConsumed;
  const rd = returnDataJson(m);
  if (rd !== null) out.returnData = rd;
  return out;
}

/** -32015 unless the client said it reads this version; the `version` field is only present when it did. */
export function versionField(r: TxRecord, maxSupported: number | undefined): { version?: 'legacy' | 0 | 1 } {
  const v = r.tx.v1Config !== undefined ? 1 : r.tx.versioned === true ? 0 : 'legacy';
  if (maxSupported === undefined) {
    if (v !== 'legacy') throw unsupportedVersion(v);
    return {};
  }
  if (v !== 'legacy' && v > maxSupported) throw unsupportedVersion(v);
  return { version: v };
}

export function encodeTxWithMeta(r: TxRecord, enc: TxEncoding, maxSupported: number | undefined): Record<string, unknown> {
  return { meta: encodeMeta(r, enc), transaction: encodeTransaction(r, enc), ...versionField(r, maxSupported) };
}

/** transactionDetails "accounts": signatures and account keys, and the balance part of the meta. */
export function encodeTxAccounts(r: TxRecord, maxSupported: number | undefined): Record<string, unknown> {
  const nStatic = r.tx.accountKeys.length;
  return {
    meta: encodeMeta(r, 'json', true),
    transaction: {
      accountKeys: r.keys.map((k, i) => ({ pubkey: k, signer: i < r.tx.numRequiredSignatures, source: i < nStatic ? 'transaction' : 'lookupTable', writable: r.writable[i] === true })),
      signatures: r.tx.signatures.map((s) => bs58.encode(s)),
    },
    ...versionField(r, maxSupported),
  };
}
