import { WireInstruction, type LookupFields } from '../tx-fields';
import type { TxnCursor } from './cursor';
import type { TxnReason } from './reasons';

// The message body shared by every version (after the optional version byte):
//
//   header        u8 num_required_signatures · u8 num_readonly_signed · u8 num_readonly_unsigned
//   account keys  compact-u16 N · N × 32
//   blockhash     32
//   instructions  compact-u16 M · M × { u8 program_id_index · compact-u16 + account indexes · compact-u16 + data }
//
// v0 appends address-table lookups (v0.ts). Index checks follow the validators' Message::sanitize so what we
// stream is what a validator would accept.

export const HEADER_SZ = 3;
export const PUBKEY_SZ = 32;
export const BLOCKHASH_SZ = 32;
/** program_id_index + two empty compact-u16 vectors: the smallest instruction. */
const MIN_INSTRUCTION_SZ = 3;
/** Account indexes are u8. */
export const MAX_ACCOUNTS = 256;

export interface MessageBody {
  numRequiredSignatures: number;
  numReadonlySignedAccounts: number;
  numReadonlyUnsignedAccounts: number;
  /** N × 32 contiguous (what the stream record carries). */
  staticKeys: Buffer;
  accountKeys: Buffer[];
  recentBlockhash: Buffer;
  /** Ranges of the cursor's bytes (views made on first use). */
  instructions: WireInstruction[];
}

/** Reads header .. instructions. Returns null with `c.fail` set on failure. */
export function readMessageBody(c: TxnCursor, signatureCount: number): MessageBody | null {
  if (!c.has(HEADER_SZ)) return null;
  const b = c.bytes;
  const numRequiredSignatures = b[c.off]!;
  const numReadonlySignedAccounts = b[c.off + 1]!;
  const numReadonlyUnsignedAccounts = b[c.off + 2]!;
  c.off += HEADER_SZ;
  if (numRequiredSignatures !== signatureCount) return fail(c, 'signature_count_mismatch');
  // The fee payer (key 0) must be a writable signer.
  if (numReadonlySignedAccounts >= numRequiredSignatures) return fail(c, 'bad_header');

  const keyCount = c.cu16();
  if (!c.has(keyCount * PUBKEY_SZ)) return null;
  if (numRequiredSignatures + numReadonlyUnsignedAccounts > keyCount) return fail(c, 'bad_header');
  const staticKeys = c.take(keyCount * PUBKEY_SZ);
  const accountKeys = new Array<Buffer>(keyCount);
  for (let i = 0; i < keyCount; i++) accountKeys[i] = staticKeys.subarray(i * PUBKEY_SZ, (i + 1) * PUBKEY_SZ);
  const recentBlockhash = c.take(BLOCKHASH_SZ);

  const ixCount = c.cu16();
  if (!c.has(ixCount * MIN_INSTRUCTION_SZ)) return null;
  const instructions = new Array<WireInstruction>(ixCount);
  for (let i = 0; i < ixCount; i++) {
    const programIdIndex = c.u8();
    const accountsLength = c.cu16();
    const accountsOff = c.off;
    if (!c.has(accountsLength)) return null;
    c.off += accountsLength;
    const dataLength = c.cu16();
    const dataOff = c.off;
    if (!c.has(dataLength)) return null;
    c.off += dataLength;
    instructions[i] = new WireInstruction(programIdIndex, b, accountsOff, accountsLength, dataOff, dataLength);
  }
  return {
    numRequiredSignatures,
    numReadonlySignedAccounts,
    numReadonlyUnsignedAccounts,
    staticKeys,
    accountKeys,
    recentBlockhash,
    instructions,
  };
}

/**
 * Index rules of sanitize: programs are static keys other than the payer (v0 rejects table-loaded programs);
 * account indexes address static + table-loaded accounts; at most 256 accounts in all.
 */
export function checkIndexes(c: TxnCursor, body: MessageBody, lookups: LookupFields[]): boolean {
  const staticCount = body.accountKeys.length;
  let total = staticCount;
  for (const l of lookups) total += l.writableIndexes.length + l.readonlyIndexes.length;
  if (total > MAX_ACCOUNTS) return reject(c, 'too_many_accounts');
  for (const ix of body.instructions) {
    if (ix.programIdIndex === 0 || ix.programIdIndex >= staticCount) return reject(c, 'program_index_out_of_bounds');
    const a = ix.bytes;
    for (let i = ix.accountsOff, end = i + ix.accountsLength; i < end; i++) if (a[i]! >= total) return reject(c, 'account_index_out_of_bounds');
  }
  return true;
}

function fail(c: TxnCursor, reason: TxnReason): null {
  c.fail = reason;
  return null;
}

function reject(c: TxnCursor, reason: TxnReason): false {
  c.fail = reason;
  return false;
}
