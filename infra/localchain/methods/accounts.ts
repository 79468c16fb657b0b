import bs58 from 'bs58';
import type { Chain } from '../chain';
import { ACCOUNT_ENCODINGS, encodeAccount, type AccountEncoding, type DataSlice } from '../encode';
import { invalidParams } from '../rpc/errors';
import { config, isObj, oneOf, optBool, pubkey, required, u64, type Raw } from '../rpc/params';
import type { ChainAccount } from '../svm';
import { contextSlot, withContext, type Methods } from './common';

// Account reads. The bank holds only the newest state, so every commitment reads it (context.slot still
// follows the commitment).

const MAX_MULTIPLE_ACCOUNTS = 100;
const MAX_FILTERS = 4;
const MAX_MEMCMP_BYTES = 128;

function dataSlice(cfg: Raw): DataSlice | undefined {
  const v = cfg.dataSlice;
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) throw invalidParams('invalid type: expected dataSlice {offset, length}');
  return { offset: u64(v.offset, 'dataSlice.offset'), length: u64(v.length, 'dataSlice.length') };
}

export function accountEncoding(cfg: Raw, dflt: AccountEncoding): AccountEncoding {
  return oneOf(cfg, 'encoding', ACCOUNT_ENCODINGS, dflt);
}

type Filter = (a: ChainAccount) => boolean;

function compileFilter(f: unknown): Filter {
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

export function accountMethods(chain: Chain): Methods {
  const one = (a: ChainAccount | null, cfg: Raw): unknown => (a === null ? null : encodeAccount(a, accountEncoding(cfg, 'base64'), dataSlice(cfg)));
  return {
    getBalance: (p) => {
      const key = pubkey(required(p, 0, 'pubkey'));
      const slot = contextSlot(chain, config(p[1]));
      return withContext(slot, Number(chain.bank.balance(key)));
    },
    getAccountInfo: (p) => {
      const key = pubkey(required(p, 0, 'pubkey'));
      const cfg = config(p[1]);
      // agave's default account encoding here is the legacy `binary` (base58 string).
      const enc = accountEncoding(cfg, 'binary');
      const slot = contextSlot(chain, cfg);
      const a = chain.bank.account(key);
      return withContext(slot, a === null ? null : encodeAccount(a, enc, dataSlice(cfg)));
    },
    getMultipleAccounts: (p) => {
      const keys = required(p, 0, 'pubkeys');
      if (!Array.isArray(keys)) throw invalidParams('invalid type: expected a sequence of pubkeys');
      if (keys.length > MAX_MULTIPLE_ACCOUNTS) throw invalidParams(`Too many inputs provided; max ${MAX_MULTIPLE_ACCOUNTS}`);
      const parsed = keys.map(pubkey);
      const cfg = config(p[1]);
      const slot = contextSlot(chain, cfg);
      return withContext(slot, parsed.map((k) => one(chain.bank.account(k), cfg)));
    },
    getProgramAccounts: (p) => {
      const program = pubkey(required(p, 0, 'program_id'));
      const cfg = config(p[1]);
      const slot = contextSlot(chain, cfg);
      const enc = accountEncoding(cfg, 'binary');
      const slice = dataSlice(cfg);
      const rawFilters = cfg.filters ?? [];
      if (!Array.isArray(rawFilters)) throw invalidParams('invalid type: expected a sequence of filters');
      if (rawFilters.length > MAX_FILTERS) throw invalidParams(`Too many filters provided; max ${MAX_FILTERS}`);
      const filters = rawFilters.map(compileFilter);
      const list = chain.bank
        .programAccounts(program)
        .filter((x) => x.account.lamports > 0n && filters.every((f) => f(x.account)))
        .map((x) => ({ account: encodeAccount(x.account, enc, slice), pubkey: bs58.encode(x.pubkey) }));
      return optBool(cfg, 'withContext', false) ? withContext(slot, list) : list;
    },
    getMinimumBalanceForRentExemption: (p) => {
      const len = p[0] === undefined ? 0 : u64(p[0], 'data_len');
      contextSlot(chain, config(p[1]));
      return chain.bank.rentExempt(len);
    },
  };
}
