import bs58 from 'bs58';
import type { Chain } from '../chain';
import { encodeAccount, type AccountParser } from '../encode';
import { invalidParam, invalidParams } from '../rpc/errors';
import { config, isObj, pubkey, required, type Raw } from '../rpc/params';
import type { ChainAccount } from '../svm';
import { DELEGATE_OFF, OWNER_OFF, TOKEN_2022_PROGRAM, TOKEN_PROGRAM, isTokenProgram, parsedTokenData, readMint, readTokenAccount, uiAmount } from '../token';
import { accountEncoding, dataSliceOf } from './account-params';
import { contextSlot, withContext, type Methods } from './common';

// SPL Token reads (Token and Token-2022): balances, supply, accounts by owner or delegate, largest holders,
// and the jsonParsed form of token accounts and mints.

const MAX_LARGEST = 20;

export function tokenParser(chain: Chain): AccountParser {
  const decimalsOf = (mint: string): number | null => {
    const a = chain.bank.account(Buffer.from(bs58.decode(mint)));
    return a === null ? null : readMint(a.data)?.decimals ?? null;
  };
  return (owner, data) => (isTokenProgram(owner) ? parsedTokenData(owner, data, decimalsOf) : null);
}

export function tokenMethods(chain: Chain): Methods {
  const parse = tokenParser(chain);
  const tokenAccountOf = (key: Buffer): { account: ChainAccount; token: NonNullable<ReturnType<typeof readTokenAccount>> } => {
    const account = chain.bank.account(key);
    const token = account !== null && isTokenProgram(bs58.encode(account.owner)) ? readTokenAccount(account.data) : null;
    if (account === null || token === null) throw invalidParam('not a Token account');
    return { account, token };
  };
  const mintOf = (mint: string): NonNullable<ReturnType<typeof readMint>> => {
    const a = chain.bank.account(Buffer.from(bs58.decode(mint)));
    const m = a !== null && isTokenProgram(bs58.encode(a.owner)) ? readMint(a.data) : null;
    if (m === null) throw invalidParam('not a Token mint');
    return m;
  };
  /** getTokenAccountsBy{Owner,Delegate}: the filter says a mint or a token program. */
  const byKey = (offset: number, delegate: boolean) => (p: unknown[]): unknown => {
    const key = pubkey(required(p, 0, delegate ? 'delegate' : 'owner'));
    const filter = required(p, 1, 'filter');
    const cfg: Raw = config(p[2]);
    const slot = contextSlot(chain, cfg);
    let programs: string[];
    let mint: string | null = null;
    if (isObj(filter) && typeof filter.mint === 'string') {
      mint = bs58.encode(pubkey(filter.mint));
      const a = chain.bank.account(Buffer.from(bs58.decode(mint)));
      if (a === null || !isTokenProgram(bs58.encode(a.owner))) throw invalidParam('could not find mint');
      programs = [bs58.encode(a.owner)];
    } else if (isObj(filter) && typeof filter.programId === 'string') {
      const program = bs58.encode(pubkey(filter.programId));
      if (!isTokenProgram(program)) throw invalidParam('unrecognized Token program id');
      programs = [program];
    } else {
      throw invalidParams('expected a filter object with `mint` or `programId`');
    }
    const enc = accountEncoding(cfg, 'binary');
    const slice = dataSliceOf(cfg);
    const out: unknown[] = [];
    for (const program of programs) {
      for (const x of chain.bank.programAccounts(Buffer.from(bs58.decode(program)))) {
        const t = readTokenAccount(x.account.data);
        if (t === null || (mint !== null && t.mint !== mint)) continue;
        const d = x.account.data;
        const at = delegate ? DELEGATE_OFF + 4 : offset;
        if (delegate && t.delegate === null) continue;
        if (!Buffer.from(d.buffer, d.byteOffset + at, 32).equals(key)) continue;
        out.push({ account: encodeAccount(x.account, enc, slice, parse), pubkey: bs58.encode(x.pubkey) });
      }
    }
    return withContext(slot, out);
  };
  return {
    getTokenAccountBalance: (p) => {
      const { token } = tokenAccountOf(pubkey(required(p, 0, 'pubkey')));
      const slot = contextSlot(chain, config(p[1]));
      return withContext(slot, uiAmount(token.amount, mintOf(token.mint).decimals));
    },
    getTokenSupply: (p) => {
      const mint = bs58.encode(pubkey(required(p, 0, 'mint')));
      const m = mintOf(mint);
      const slot = contextSlot(chain, config(p[1]));
      return withContext(slot, uiAmount(m.supply, m.decimals));
    },
    getTokenAccountsByOwner: byKey(OWNER_OFF, false),
    getTokenAccountsByDelegate: byKey(DELEGATE_OFF, true),
    getTokenLargestAccounts: (p) => {
      const mint = bs58.encode(pubkey(required(p, 0, 'mint')));
      const m = mintOf(mint);
      const slot = contextSlot(chain, config(p[1]));
      const holders: Array<{ address: string; amount: bigint }> = [];
      for (const program of [TOKEN_PROGRAM, TOKEN_2022_PROGRAM]) {
        for (const x of chain.bank.programAccounts(Buffer.from(bs58.decode(program)))) {
          const t = readTokenAccount(x.account.data);
          if (t !== null && t.mint === mint) holders.push({ address: bs58.encode(x.pubkey), amount: t.amount });
        }
      }
      holders.sort((a, b) => (a.amount === b.amount ? 0 : a.amount > b.amount ? -1 : 1));
      return withContext(slot, holders.slice(0, MAX_LARGEST).map((h) => ({ address: h.address, ...uiAmount(h.amount, m.decimals) })));
    },
  };
}
