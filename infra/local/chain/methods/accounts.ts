import bs58 from 'bs58';
import type { Chain } from '../chain';
import { encodeAccount } from '../encode';
import { invalidParams } from '../rpc/errors';
import { config, optBool, pubkey, required, u64, type Raw } from '../rpc/params';
import type { ChainAccount } from '../svm';
import { accountEncoding, compileFilters, dataSliceOf } from './account-params';
import { contextSlot, withContext, type Methods } from './common';
import { tokenParser } from './tokens';

// Account reads. The bank holds only the newest state, so every commitment reads it (context.slot still
// follows the commitment).

const MAX_MULTIPLE_ACCOUNTS = 100;
export function accountMethods(chain: Chain): Methods {
  const parse = tokenParser(chain);
  const one = (a: ChainAccount | null, cfg: Raw): unknown => (a === null ? null : encodeAccount(a, accountEncoding(cfg, 'base64'), dataSliceOf(cfg), parse));
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
      return withContext(slot, a === null ? null : encodeAccount(a, enc, dataSliceOf(cfg), parse));
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
      const slice = dataSliceOf(cfg);
      const rawFilters = cfg.filters ?? [];
      if (!Array.isArray(rawFilters)) throw invalidParams('invalid type: expected a sequence of filters');
      const filters = compileFilters(rawFilters);
      const list = chain.bank
        .programAccounts(program)
        .filter((x) => x.account.lamports > 0n && filters.every((f) => f(x.account)))
        .map((x) => ({ account: encodeAccount(x.account, enc, slice, parse), pubkey: bs58.encode(x.pubkey) }));
      return optBool(cfg, 'withContext', false) ? withContext(slot, list) : list;
    },
    getMinimumBalanceForRentExemption: (p) => {
      const len = p[0] === undefined ? 0 : u64(p[0], 'data_len');
      contextSlot(chain, config(p[1]));
      return chain.bank.rentExempt(len);
    },
  };
}
