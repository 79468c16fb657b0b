import bs58 from 'bs58';
import type { TxFields } from '../../proto/tx-fields';

// The tip rule (compat.md, Tips): at least `minLamports` paid by ONE top-level System Program `transfer`
// whose recipient is a configured tip account, named by a STATIC account key of the message. So:
//   - a transfer reached only through an address-lookup table does not count (its index is past the static keys);
//   - a transfer made inside another program (an inner instruction) does not count (not top-level);
//   - two small transfers that add up do not count (no single one reaches the minimum);
//   - the recipient must be writable in the message header, or the transfer could never execute.
//
// System `transfer` wire form: program = 11111111111111111111111111111111 (32 zero bytes), accounts
// [from, to], data = u32 LE instruction index 2 · u64 LE lamports (12 bytes).

const SYSTEM_PROGRAM = Buffer.alloc(32);
const TRANSFER_IX = 2;
const TRANSFER_DATA_SZ = 12;
const LAMPORTS_OFF = 4;
const TWO_32 = 2 ** 32;

export interface TipRule {
  /** Raw 32-byte keys as latin1 strings (a Map/Set key without hex/base58 work on the hot path). */
  accounts: ReadonlySet<string>;
  minLamports: number;
  /** For messages. */
  minText: string;
}

export function tipRule(accountsBase58: string[], minLamports: number): TipRule {
  const accounts = new Set<string>();
  for (const a of accountsBase58) {
    let raw: Uint8Array;
    try {
      raw = bs58.decode(a);
    } catch {
      throw new Error(`tip account ${JSON.stringify(a)} is not base58`);
    }
    if (raw.length !== 32) throw new Error(`tip account ${JSON.stringify(a)} is not a 32-byte key`);
    accounts.add(Buffer.from(raw).toString('latin1'));
  }
  if (accounts.size === 0) throw new Error('at least one tip account is required');
  if (!Number.isSafeInteger(minLamports) || minLamports < 0) throw new Error('minimum tip must be a non-negative integer of lamports');
  return { accounts, minLamports, minText: `${minLamports} lamports` };
}

export type TipCheck = { ok: true; lamports: number } | { ok: false; reason: 'missing_tip' | 'tip_too_small'; detail: string };

function isWritableStatic(tx: TxFields, i: number): boolean {
  const n = tx.accountKeys.length;
  if (i < tx.numRequiredSignatures) return i < tx.numRequiredSignatures - tx.numReadonlySignedAccounts;
  return i < n - tx.numReadonlyUnsignedAccounts;
}

export function checkTip(tx: TxFields, rule: TipRule): TipCheck {
  let best = -1;
  const keys = tx.accountKeys;
  for (const ix of tx.instructions) {
    const d = ix.data;
    if (d.length !== TRANSFER_DATA_SZ || ix.accounts.length < 2) continue;
    if (d[0] !== TRANSFER_IX || d[1] !== 0 || d[2] !== 0 || d[3] !== 0) continue;
    if (!keys[ix.programIdIndex]!.equals(SYSTEM_PROGRAM)) continue;
    const to = ix.accounts[1]!;
    if (to >= keys.length) continue; // loaded through a lookup table: not a static key
    if (!rule.accounts.has(keys[to]!.toString('latin1')) || !isWritableStatic(tx, to)) continue;
    const lamports = d.readUInt32LE(LAMPORTS_OFF) + d.readUInt32LE(LAMPORTS_OFF + 4) * TWO_32;
    if (lamports > best) best = lamports;
  }
  if (best < 0) {
    return { ok: false, reason: 'missing_tip', detail: `one top-level System transfer of at least ${rule.minText} to a tip account (a static account key) is required` };
  }
  if (best < rule.minLamports) {
    return { ok: false, reason: 'tip_too_small', detail: `the largest single transfer to a tip account is ${best} lamports, at least ${rule.minText} is required in one transfer` };
  }
  return { ok: true, lamports: best };
}
