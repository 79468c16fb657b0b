import type { LookupFields } from '../tx-fields';
import type { TxnCursor } from './cursor';
import { checkIndexes, PUBKEY_SZ, readMessageBody, type MessageBody } from './message';

// v0 message: prefix byte 0x80, the common body (message.ts), then address-table lookups:
//
//   compact-u16 L · L × { table key 32 · compact-u16 + writable indexes (u8 each) · compact-u16 + readonly indexes }
//
// Lookups are carried as they are: the stream does not resolve table addresses.

export const V0_PREFIX = 0x80;
/** table key + two empty compact-u16 vectors: the smallest lookup. */
const MIN_LOOKUP_SZ = PUBKEY_SZ + 2;
const NO_LOOKUPS: LookupFields[] = [];

export interface V0Message {
  body: MessageBody;
  lookups: LookupFields[];
}

/** Starts after the version byte. */
export function readV0Message(c: TxnCursor, signatureCount: number): V0Message | null {
  const body = readMessageBody(c, signatureCount);
  if (body === null) return null;
  const n = c.cu16();
  if (!c.has(n * MIN_LOOKUP_SZ)) return null;
  const lookups = n === 0 ? NO_LOOKUPS : new Array<LookupFields>(n);
  for (let i = 0; i < n; i++) {
    const accountKey = c.take(PUBKEY_SZ);
    const writableIndexes = c.vec();
    const readonlyIndexes = c.vec();
    if (c.fail !== null) return null;
    // sanitize: a lookup that loads nothing is invalid.
    if (writableIndexes.length + readonlyIndexes.length === 0) {
      c.fail = 'empty_lookup';
      return null;
    }
    lookups[i] = { accountKey, writableIndexes, readonlyIndexes };
  }
  if (!checkIndexes(c, body, lookups)) return null;
  return { body, lookups };
}
