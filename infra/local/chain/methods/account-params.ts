import bs58 from 'bs58';
import { ACCOUNT_ENCODINGS, type AccountEncoding, type DataSlice } from '../encode';
import { invalidParams } from '../rpc/errors';
import { isObj, oneOf, u64, type Raw } from '../rpc/params';
import type { ChainAccount } from '../svm';

// Account-read params shared by the account, token and simulate methods and the PubSub: encoding, dataSlice,
// and getProgramAccounts-style filters compiled once into predicates.

const MAX_FILTERS = 4;
const MAX_MEMCMP_BYTES = 128;

export function dataSliceOf(cfg: Raw): DataSlice | undefined {
  const v = cfg.dataSlice;
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) throw invalidParams('invalid type: expected dataSlice {offset, length}');
  return { offset: u64(v.offset, 'dataSlice.offset'), length: u64(v.length, 'dataSlice.length') };
}

export function accountEncoding(cfg: Raw, dflt: AccountEncoding): AccountEncoding {
  return oneOf(cfg, 'encoding', ACCOUNT_ENCODINGS, dflt);
}

export type AccountFilter = (a: ChainAccount) => boolean;

function compileFilter(f: unknown): AccountFilter {
  if (!isObj(f)) throw invalidParams('invalid type: expected a filter object');
  if (f.dataSize !== undefined) {
    const n = u64(f.dataSize, 'dataSize');
    return (a) => a.data.length === n;
  }
  if (isObj(f.memcmp)) {
    const offset = u64(f.memcmp.offset, 'memcmp.offset');
    const enc = f.memcmp.encoding ?? 'base58';
    if (typeof f.memcmp.bytes !== 'string' || (enc !== 'base58' && enc !== 'base64')) throw invalidParams('memcmp: expected bytes as a base58 or base64 string');
    const bytes = enc === 'base64' ? Buffer.from(f.memcmp.bytes, 'base64') : Buffer.from(bs58.decodeUnsafe(f.memcmp.bytes) ?? []);
    if (bytes.length > MAX_MEMCMP_BYTES) throw invalidParams('Encoded binary (base 58) data should be less than 128 bytes');
    return (a) => offset + bytes.length <= a.data.length && Buffer.from(a.data.buffer, a.data.byteOffset + offset, bytes.length).equals(bytes);
  }
  throw invalidParams('unknown filter: expected dataSize or memcmp');
}

export function compileFilters(raw: unknown[]): AccountFilter[] {
  if (raw.length > MAX_FILTERS) throw invalidParams(`Too many filters provided; max ${MAX_FILTERS}`);
  return raw.map(compileFilter);
}

