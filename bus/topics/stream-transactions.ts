// stream.transactions — one record per decoded transaction, produced once per entry batch.
//
//   key   = signatures[0], 64 raw bytes (dedupe across redundant ingest workers is by this key)
//   value:
//   +0   u8    VERSION (1)
//   +1   u8    reserved (0)
//   +2   u16   static account key count N (LE)
//   +4   f64   observed-at, ms since epoch (LE; first shred of the batch seen by ingest)
//   +12  u64   slot (LE)
//   +20  32*N  static account keys, in message order (what filters match against, without decoding)
//   +..  rest  the encoded SubscribeResponseTransaction message (forwarded by fanout without re-encoding)
//
//   headers (Kafka record headers; the value above is the same with or without them):
//   lookups  the transaction's address-table lookups, as stream-transactions-lookups.ts lays out (set by ingest
//            on every record since it was added; a record without it has them in the message only)
//   facts    its header counts, signature and instruction positions in the message, as stream-transactions-facts.ts
//            lays out (set by ingest since it was added; a record without it has them in the message only)

import type { BlockRef } from './block-ref';

export const TX_RECORD_VERSION = 1;
const VERSION_OFF = 0;
const KEY_COUNT_OFF = 2;
const OBSERVED_AT_OFF = 4;
const SLOT_OFF = 12;
/** Where the slot sits in a record's value (readers that key on it without decoding). */
export const TX_RECORD_SLOT_OFF = SLOT_OFF;
export const TX_RECORD_HEADER_SZ = 20;
export const PUBKEY_SZ = 32;
export const SIGNATURE_SZ = 64;

import { factsHeaderOf } from './stream-transactions-facts';
import { lookupsHeaderOf } from './stream-transactions-lookups';

export interface TxRecord {
  slot: bigint;
  observedAtMs: number;
  /** N × 32 bytes, contiguous. */
  accountKeys: Buffer;
  /** Encoded SubscribeResponseTransaction. */
  message: Buffer;
  /** The block it belongs to, from the record's `blk` header (block-ref.ts; not part of the value), when read. */
  block?: BlockRef | null;

  /** The `lookups` header's value (stream-transactions-lookups.ts), or null when the record has none this reader
   *  knows: its lookups are then read from `message`. Not part of the value (encodeTxRecord ignores it). */
  lookups: Buffer | null;
  /** The `facts` header's value (stream-transactions-facts.ts), or null / absent when the record has none this
   *  reader knows: what the v2 filters beyond account lists need is then read from `message`. Not in the value. */
  facts?: Buffer | null;
}

/** What encodeTxRecord writes into the value. */
export type TxRecordValue = Omit<TxRecord, 'lookups' | 'facts'>;

export function encodeTxRecord(r: TxRecordValue): Buffer {
  const out = allocTxRecord(r.slot, r.observedAtMs, r.accountKeys, r.message.length);
  r.message.copy(out, TX_RECORD_HEADER_SZ + r.accountKeys.length);
  return out;
}

/**
 * A record's value with its header and keys written and `messageSize` bytes left at the end, at
 * TX_RECORD_HEADER_SZ + accountKeys.length, for the caller to write the message into (ingest encodes it there).
 */
export function allocTxRecord(slot: bigint, observedAtMs: number, accountKeys: Buffer, messageSize: number): Buffer {
  const out = Buffer.allocUnsafe(txRecordSize(accountKeys, messageSize));
  writeTxRecordHead(out, slot, observedAtMs, accountKeys);
  return out;
}

/** The length of a record's value whose message is `messageSize` bytes. */
export function txRecordSize(accountKeys: Buffer, messageSize: number): number {
  return TX_RECORD_HEADER_SZ + accountKeys.length + messageSize;
}

/**
 * allocTxRecord into a value the caller sized (txRecordSize) — a view of a buffer it shares with other records
 * (ingest writes one batch's records into one allocation).
 */
export function writeTxRecordHead(out: Buffer, slot: bigint, observedAtMs: number, accountKeys: Buffer): void {
  const n = accountKeys.length / PUBKEY_SZ;
  if (!Number.isInteger(n)) throw new RangeError(`accountKeys length ${accountKeys.length} is not a multiple of 32`);
  if (n > 0xffff) throw new RangeError(`${n} account keys do not fit the u16 count`);
  out[VERSION_OFF] = TX_RECORD_VERSION;
  out[1] = 0;
  out.writeUInt16LE(n, KEY_COUNT_OFF);
  out.writeDoubleLE(observedAtMs, OBSERVED_AT_OFF);
  out.writeBigUInt64LE(slot, SLOT_OFF);
  accountKeys.copy(out, TX_RECORD_HEADER_SZ);
}

export type TxRecordDecode = { ok: true; record: TxRecord } | { ok: false; reason: string };

/** Views into `value`, no copies. Checks every length against the bytes present. `headers`: the record's, when
 *  the caller has them (the lookups and facts headers are taken from them). */
export function decodeTxRecord(value: Buffer, headers?: Readonly<Record<string, Buffer>>): TxRecordDecode {
  if (value.length < TX_RECORD_HEADER_SZ) return { ok: false, reason: 'short header' };
  if (value[VERSION_OFF] !== TX_RECORD_VERSION) return { ok: false, reason: `unknown version ${value[VERSION_OFF]}` };
  const n = value.readUInt16LE(KEY_COUNT_OFF);
  const keysEnd = TX_RECORD_HEADER_SZ + n * PUBKEY_SZ;
  if (keysEnd > value.length) return { ok: false, reason: 'account keys past end' };
  return {
    ok: true,
    record: {
      observedAtMs: value.readDoubleLE(OBSERVED_AT_OFF),
      slot: value.readBigUInt64LE(SLOT_OFF),
      accountKeys: value.subarray(TX_RECORD_HEADER_SZ, keysEnd),
      message: value.subarray(keysEnd),
      lookups: lookupsHeaderOf(headers),
      facts: factsHeaderOf(headers),
    },
  };
}
