import { WireInstruction, type TxnConfig } from '../tx-fields';
import type { TxnCursor } from './cursor';
import { BLOCKHASH_SZ, HEADER_SZ, PUBKEY_SZ, type MessageBody } from './message';
import type { TxnReason } from './reasons';

// Transaction v1 (SIMD-0385, with SIMD-0296's 4,096-byte size), as the published SDK writes it
// (solana-message 4.5.0 `v1::Message` + solana-transaction 4.3.0 `VersionedTransaction`, wincode schema):
//
//   +0      u8      0x81                      version byte; legacy/v0 start with their signature count (< 0x80)
//   +1      u8 ×3   header                    num_required_signatures · num_readonly_signed · num_readonly_unsigned
//   +4      u32 LE  TransactionConfigMask     which config values follow (below)
//   +8      [32]    lifetime specifier        the recent blockhash (or nonce)
//   +40     u8      num_instructions          ≤ 64
//   +41     u8      num_addresses             ≤ 64, no duplicates, ≥ required signatures + readonly unsigned
//   +42     num_addresses × [32]              account keys (same order rules as legacy; no lookup tables)
//           config values, 4 bytes per set mask bit, in bit order:
//             bits 0+1  u64 LE priority fee (lamports, total)   both bits or neither
//             bit  2    u32 LE compute-unit limit
//             bit  3    u32 LE loaded-accounts data size limit
//             bit  4    u32 LE heap size (multiple of 1024, 32 KiB..256 KiB)
//             bits 5..31 unassigned: a transaction setting one is invalid
//           num_instructions × { u8 program_id_index · u8 num_accounts · u16 LE data_len }   instruction headers
//           num_instructions × { num_accounts × u8 account index · data_len × u8 data }     instruction payloads
//   ─────── end of message: the signing payload is bytes [+0, here) (version byte included)
//           num_required_signatures × [64]    signatures, no length prefix; [i] by account key i
//
// Sanitize rules (SIMD-0385 "Transaction Constraints", the SDK's v1::Message::validate): at most 12 signatures,
// 64 addresses, 64 instructions; payer a writable signer; programs are keys other than the payer; account
// indexes below num_addresses. Nothing may follow the signatures when a single transaction is decoded.

export const V1_PREFIX = 0x81;
/** SIMD-0385 / SIMD-0296: a v1 transaction is at most 4,096 bytes (legacy and v0 stay at 1,232). */
export const V1_MAX_TX_SZ = 4096;
export const V1_MAX_SIGNATURES = 12;
export const V1_MAX_ADDRESSES = 64;
export const V1_MAX_INSTRUCTIONS = 64;
export const V1_SIGNATURE_SZ = 64;
const MASK_SZ = 4;
const IX_HEADER_SZ = 4;
/** version + header + mask + lifetime + 2 counts. */
export const V1_FIXED_SZ = 1 + HEADER_SZ + MASK_SZ + BLOCKHASH_SZ + 2;

// Config mask bits (SIMD-0385 "TransactionConfigMask").
export const MASK_PRIORITY_FEE = 0b11;
export const MASK_COMPUTE_UNIT_LIMIT = 0b100;
export const MASK_LOADED_ACCOUNTS_DATA_SIZE = 0b1000;
export const MASK_HEAP_SIZE = 0b10000;
export const MASK_KNOWN = 0b11111;
/** Heap size bounds of the SDK's validate (MIN_HEAP_SIZE, MAX_HEAP_SIZE) and its 1 KiB granularity. */
export const MIN_HEAP_SIZE = 32 * 1024;
export const MAX_HEAP_SIZE = 256 * 1024;
const HEAP_GRANULE = 1024;

export type { TxnConfig };

export interface V1Message {
  body: MessageBody;
  config: TxnConfig;
  /** Offset just past the message (where the signatures start). */
  messageEnd: number;
}

function fail(c: TxnCursor, reason: TxnReason): null {
  c.fail = reason;
  return null;
}

/**
 * Reads a v1 message at `c.off`, which points at the 0x81 byte. The cursor's `end` must allow 4,096 bytes
 * from the transaction's start. Returns null with `c.fail` set on failure.
 */
export function readV1Message(c: TxnCursor): V1Message | null {
  if (!c.has(V1_FIXED_SZ)) return null;
  const b = c.bytes;
  const o = c.off;
  const numRequiredSignatures = b[o + 1]!;
  const numReadonlySignedAccounts = b[o + 2]!;
  const numReadonlyUnsignedAccounts = b[o + 3]!;
  const mask = b.readUInt32LE(o + 4);
  const recentBlockhash = b.subarray(o + 8, o + 8 + BLOCKHASH_SZ);
  const ixCount = b[o + 40]!;
  const keyCount = b[o + 41]!;
  c.off += V1_FIXED_SZ;

  if (numRequiredSignatures === 0) return fail(c, 'no_signatures');
  if (numRequiredSignatures > V1_MAX_SIGNATURES) return fail(c, 'too_many_signatures');
  if (numReadonlySignedAccounts >= numRequiredSignatures) return fail(c, 'bad_header');
  if (ixCount > V1_MAX_INSTRUCTIONS) return fail(c, 'too_many_instructions');
  if (keyCount > V1_MAX_ADDRESSES) return fail(c, 'too_many_addresses');
  if (numRequiredSignatures + numReadonlyUnsignedAccounts > keyCount) return fail(c, 'bad_header');
  if ((mask & ~MASK_KNOWN) !== 0) return fail(c, 'unknown_config_bit');
  const fee = mask & MASK_PRIORITY_FEE;
  if (fee !== 0 && fee !== MASK_PRIORITY_FEE) return fail(c, 'partial_config_field');

  const staticKeys = c.take(keyCount * PUBKEY_SZ);
  if (c.fail !== null) return null;
  const accountKeys = new Array<Buffer>(keyCount);
  for (let i = 0; i < keyCount; i++) accountKeys[i] = staticKeys.subarray(i * PUBKEY_SZ, (i + 1) * PUBKEY_SZ);
  if (hasDuplicate(staticKeys, keyCount)) return fail(c, 'duplicate_account_keys');

  const config: TxnConfig = { mask };
  if (!c.has(popcount(mask) * 4)) return null;
  let v = c.off;
  if (fee !== 0) {
    config.priorityFee = b.readBigUInt64LE(v);
    v += 8;
  }
  if ((mask & MASK_COMPUTE_UNIT_LIMIT) !== 0) {
    config.computeUnitLimit = b.readUInt32LE(v);
    v += 4;
  }
  if ((mask & MASK_LOADED_ACCOUNTS_DATA_SIZE) !== 0) {
    config.loadedAccountsDataSizeLimit = b.readUInt32LE(v);
    v += 4;
  }
  if ((mask & MASK_HEAP_SIZE) !== 0) {
    const heap = b.readUInt32LE(v);
    v += 4;
    if (heap % HEAP_GRANULE !== 0 || heap < MIN_HEAP_SIZE || heap > MAX_HEAP_SIZE) return fail(c, 'bad_heap_size');
    config.heapSize = heap;
  }
  c.off = v;

  // Instruction headers, then payloads; the headers are read twice (counts first, so the payloads' total is
  // checked against the bytes left before any view is made).
  const headers = c.take(ixCount * IX_HEADER_SZ);
  if (c.fail !== null) return null;
  const instructions = new Array<WireInstruction>(ixCount);
  for (let i = 0; i < ixCount; i++) {
    const h = i * IX_HEADER_SZ;
    const programIdIndex = headers[h]!;
    const accountsLength = headers[h + 1]!;
    const dataLength = headers[h + 2]! | (headers[h + 3]! << 8);
    if (!c.has(accountsLength + dataLength)) return null;
    const accountsOff = c.off;
    const dataOff = accountsOff + accountsLength;
    c.off = dataOff + dataLength;
    if (programIdIndex === 0 || programIdIndex >= keyCount) return fail(c, 'program_index_out_of_bounds');
    for (let a = accountsOff; a < dataOff; a++) if (b[a]! >= keyCount) return fail(c, 'account_index_out_of_bounds');
    instructions[i] = new WireInstruction(programIdIndex, b, accountsOff, accountsLength, dataOff, dataLength);
  }
  return {
    body: { numRequiredSignatures, numReadonlySignedAccounts, numReadonlyUnsignedAccounts, staticKeys, accountKeys, recentBlockhash, instructions },
    config,
    messageEnd: c.off,
  };
}

function popcount(x: number): number {
  let n = 0;
  for (let v = x >>> 0; v !== 0; v &= v - 1) n++;
  return n;
}

/** At most 64 keys: pairwise compare, first on one 32-bit word (cheap), then in full. */
function hasDuplicate(keys: Buffer, n: number): boolean {
  for (let i = 1; i < n; i++) {
    const wi = keys.readUInt32LE(i * PUBKEY_SZ);
    for (let j = 0; j < i; j++) {
      if (keys.readUInt32LE(j * PUBKEY_SZ) !== wi) continue;
      if (keys.compare(keys, j * PUBKEY_SZ, (j + 1) * PUBKEY_SZ, i * PUBKEY_SZ, (i + 1) * PUBKEY_SZ) === 0) return true;
    }
  }
  return false;
}

/** What encodeV1Transaction writes (tests, bench, the shredder's inputs). */
export interface V1TxInput {
  numRequiredSignatures: number;
  numReadonlySignedAccounts: number;
  numReadonlyUnsignedAccounts: number;
  config?: Omit<TxnConfig, 'mask'> & { mask?: number };
  recentBlockhash: Buffer;
  accountKeys: Buffer[];
  instructions: Array<{ programIdIndex: number; accounts: Uint8Array | number[]; data: Uint8Array }>;
}

/**
 * The v1 message bytes (the signing payload). The mask is derived from the values present unless `config.mask`
 * is given (tests that need an invalid mask). Throws on inputs the wire cannot carry (counts above a u8/u16).
 */
export function encodeV1Message(m: V1TxInput): Buffer {
  const cfg = m.config ?? {};
  let mask = 0;
  if (cfg.priorityFee !== undefined) mask |= MASK_PRIORITY_FEE;
  if (cfg.computeUnitLimit !== undefined) mask |= MASK_COMPUTE_UNIT_LIMIT;
  if (cfg.loadedAccountsDataSizeLimit !== undefined) mask |= MASK_LOADED_ACCOUNTS_DATA_SIZE;
  if (cfg.heapSize !== undefined) mask |= MASK_HEAP_SIZE;
  if (cfg.mask !== undefined) mask = cfg.mask;
  if (m.accountKeys.length > 255 || m.instructions.length > 255) throw new RangeError('v1 counts are u8');
  if (m.recentBlockhash.length !== BLOCKHASH_SZ) throw new RangeError('lifetime specifier must be 32 bytes');
  const parts: Buffer[] = [];
  const fixed = Buffer.alloc(V1_FIXED_SZ);
  fixed[0] = V1_PREFIX;
  fixed[1] = m.numRequiredSignatures;
  fixed[2] = m.numReadonlySignedAccounts;
  fixed[3] = m.numReadonlyUnsignedAccounts;
  fixed.writeUInt32LE(mask >>> 0, 4);
  m.recentBlockhash.copy(fixed, 8);
  fixed[40] = m.instructions.length;
  fixed[41] = m.accountKeys.length;
  parts.push(fixed);
  for (const k of m.accountKeys) {
    if (k.length !== PUBKEY_SZ) throw new RangeError('account keys are 32 bytes');
    parts.push(k);
  }
  if (cfg.priorityFee !== undefined) {
    const v = Buffer.alloc(8);
    v.writeBigUInt64LE(cfg.priorityFee);
    parts.push(v);
  }
  for (const x of [cfg.computeUnitLimit, cfg.loadedAccountsDataSizeLimit, cfg.heapSize]) {
    if (x === undefined) continue;
    const v = Buffer.alloc(4);
    v.writeUInt32LE(x >>> 0);
    parts.push(v);
  }
  for (const ix of m.instructions) {
    if (ix.accounts.length > 255 || ix.data.length > 0xffff) throw new RangeError('instruction too large for a v1 header');
    const h = Buffer.alloc(IX_HEADER_SZ);
    h[0] = ix.programIdIndex;
    h[1] = ix.accounts.length;
    h.writeUInt16LE(ix.data.length, 2);
    parts.push(h);
  }
  for (const ix of m.instructions) parts.push(Buffer.from(ix.accounts), Buffer.from(ix.data));
  return Buffer.concat(parts);
}

/** message ‖ signatures (each 64 bytes, in signer order). */
export function encodeV1Transaction(message: Buffer, signatures: Buffer[]): Buffer {
  for (const s of signatures) if (s.length !== V1_SIGNATURE_SZ) throw new RangeError('signatures are 64 bytes');
  return Buffer.concat([message, ...signatures]);
}
