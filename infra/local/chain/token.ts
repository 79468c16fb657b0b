import bs58 from 'bs58';

// SPL Token account and mint layouts (the same base layout in Token-2022), read the way agave's
// account-decoder presents them under jsonParsed (UiTokenAccount, UiMint, UiTokenAmount). Pure.
//
//   account (165): mint 0..32 | owner 32..64 | amount u64 64 | delegate COption 72 (u32 tag, key 76..108)
//                  | state u8 108 | is_native COption 109 (u32 tag, u64 113) | delegated_amount u64 121
//                  | close_authority COption 129 (u32 tag, key 133..165)
//   mint (82):     mint_authority COption 0 (u32 tag, key 4..36) | supply u64 36 | decimals u8 44
//                  | is_initialized u8 45 | freeze_authority COption 46 (u32 tag, key 50..82)

export const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
export const TOKEN_2022_PROGRAM = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';
export const ACCOUNT_LEN = 165;
export const MINT_LEN = 82;
/** Token-2022: byte after the base account says what the account is (1 mint, 2 account). */
const ACCOUNT_TYPE_OFF = 165;
export const OWNER_OFF = 32;
export const DELEGATE_OFF = 72;
const STATES = ['uninitialized', 'initialized', 'frozen'] as const;

export interface TokenAccount {
  mint: string;
  owner: string;
  amount: bigint;
  delegate: string | null;
  state: (typeof STATES)[number];
  isNative: bigint | null;
  delegatedAmount: bigint;
  closeAuthority: string | null;
}

export interface Mint {
  mintAuthority: string | null;
  supply: bigint;
  decimals: number;
  isInitialized: boolean;
  freezeAuthority: string | null;
}

export function isTokenProgram(owner: string): boolean {
  return owner === TOKEN_PROGRAM || owner === TOKEN_2022_PROGRAM;
}

function optKey(d: Buffer, off: number): string | null {
  return d.readUInt32LE(off) === 1 ? bs58.encode(d.subarray(off + 4, off + 36)) : null;
}

export function readTokenAccount(data: Uint8Array): TokenAccount | null {
  const d = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (d.length < ACCOUNT_LEN || (d.length > ACCOUNT_LEN && d[ACCOUNT_TYPE_OFF] !== 2)) return null;
  const state = STATES[d[108]!];
  if (state === undefined || state === 'uninitialized') return null;
  return {
    mint: bs58.encode(d.subarray(0, 32)),
    owner: bs58.encode(d.subarray(32, 64)),
    amount: d.readBigUInt64LE(64),
    delegate: optKey(d, 72),
    state,
    isNative: d.readUInt32LE(109) === 1 ? d.readBigUInt64LE(113) : null,
    delegatedAmount: d.readBigUInt64LE(121),
    closeAuthority: optKey(d, 129),
  };
}

export function readMint(data: Uint8Array): Mint | null {
  const d = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (d.length < MINT_LEN || (d.length > MINT_LEN && !(d.length > ACCOUNT_TYPE_OFF && d[ACCOUNT_TYPE_OFF] === 1))) return null;
  if (d[45] !== 1) return null;
  return { mintAuthority: optKey(d, 0), supply: d.readBigUInt64LE(36), decimals: d[44]!, isInitialized: true, freezeAuthority: optKey(d, 46) };
}

/** UiTokenAmount: amount as a string, uiAmount as a float (null past 2^53 like agave's f64 loss), trimmed string. */
export function uiAmount(amount: bigint, decimals: number): { amount: string; decimals: number; uiAmount: number | null; uiAmountString: string } {
  const s = amount.toString().padStart(decimals + 1, '0');
  const whole = s.slice(0, s.length - decimals);
  const frac = decimals === 0 ? '' : s.slice(s.length - decimals).replace(/0+$/, '');
  const str = frac.length > 0 ? `${whole}.${frac}` : whole;
  return { amount: amount.toString(), decimals, uiAmount: Number(str), uiAmountString: str };
}

/** jsonParsed data of a token account or mint, or null when the bytes are neither (then base64 is used). */
export function parsedTokenData(owner: string, data: Uint8Array, decimalsOf: (mint: string) => number | null): unknown {
  const program = owner === TOKEN_PROGRAM ? 'spl-token' : 'spl-token-2022';
  const a = readTokenAccount(data);
  if (a !== null) {
    const decimals = decimalsOf(a.mint);
    if (decimals === null) return null;
    const info: Record<string, unknown> = { isNative: a.isNative !== null, mint: a.mint, owner: a.owner, state: a.state, tokenAmount: uiAmount(a.amount, decimals) };
    if (a.delegate !== null) {
      info.delegate = a.delegate;
      info.delegatedAmount = uiAmount(a.delegatedAmount, decimals);
    }
    if (a.isNative !== null) info.rentExemptReserve = uiAmount(a.isNative, decimals);
    if (a.closeAuthority !== null) info.closeAuthority = a.closeAuthority;
    return { parsed: { info, type: 'account' }, program, space: data.length };
  }
  const m = readMint(data);
  if (m === null) return null;
  return {
    parsed: { info: { decimals: m.decimals, freezeAuthority: m.freezeAuthority, isInitialized: m.isInitialized, mintAuthority: m.mintAuthority, supply: m.supply.toString() }, type: 'mint' },
    program,
    space: data.length,
  };
}
