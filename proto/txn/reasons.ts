// Why a transaction failed to decode: one table, stable codes (they are metric labels), one line each.

export const TXN_REASONS = {
  truncated: 'a count or field runs past the end of the bytes',
  oversize: 'the transaction runs past 1232 bytes',
  bad_compact_u16: 'a compact-u16 is overlong, non-minimal or above 0xffff',
  unsupported_version: 'message version other than legacy or 0 (0x81 = proposed v1)',
  no_signatures: 'zero signatures (the fee payer must sign)',
  signature_count_mismatch: 'signature count differs from num_required_signatures',
  bad_header: 'header counts inconsistent with the account keys (payer must be a writable signer)',
  too_many_accounts: 'static plus table-loaded accounts exceed 256 (indexes are u8)',
  program_index_out_of_bounds: 'program id index is 0 (the payer) or not a static account key',
  account_index_out_of_bounds: 'instruction account index beyond the accounts of the message',
  empty_lookup: 'an address-table lookup loads no account',
  trailing_bytes: 'bytes left after the transaction',
} as const;

export type TxnReason = keyof typeof TXN_REASONS;

export const TXN_REASON_CODES = Object.keys(TXN_REASONS) as TxnReason[];
