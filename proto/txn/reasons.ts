// Why a transaction failed to decode: one table, stable codes (they are metric labels), one line each.

export const TXN_REASONS = {
  truncated: 'a count or field runs past the end of the bytes',
  oversize: 'the transaction runs past its size limit (1232 bytes; v1: 4096)',
  bad_compact_u16: 'a compact-u16 is overlong, non-minimal or above 0xffff',
  unsupported_version: 'a transaction version this decoder does not know (first byte 0x80 or 0x82..0xff), or a message version other than 0 after a signature count',
  no_signatures: 'zero signatures (the fee payer must sign)',
  signature_count_mismatch: 'signature count differs from num_required_signatures',
  bad_header: 'header counts inconsistent with the account keys (payer must be a writable signer)',
  too_many_accounts: 'static plus table-loaded accounts exceed 256 (indexes are u8)',
  program_index_out_of_bounds: 'program id index is 0 (the payer) or not a static account key',
  account_index_out_of_bounds: 'instruction account index beyond the accounts of the message',
  empty_lookup: 'an address-table lookup loads no account',
  trailing_bytes: 'bytes left after the transaction',
  too_many_signatures: 'v1: more than 12 required signatures',
  too_many_addresses: 'v1: more than 64 account addresses',
  too_many_instructions: 'v1: more than 64 instructions',
  unknown_config_bit: 'v1: the config mask sets a bit no config value is assigned to (bits 5..31)',
  partial_config_field: 'v1: only one bit of a two-bit config field (the priority fee, bits 0-1) is set',
  bad_heap_size: 'v1: requested heap size not a multiple of 1024 within 32 KiB..256 KiB',
  duplicate_account_keys: 'v1: the same address appears twice among the account keys',
} as const;

export type TxnReason = keyof typeof TXN_REASONS;

export const TXN_REASON_CODES = Object.keys(TXN_REASONS) as TxnReason[];
