import fs from 'node:fs';
import { fixture } from './paths';

// The golden vectors of test/fixtures/txn-v1/vectors.json (written by test/fixtures/txn-v1-gen: the published
// solana-transaction / solana-message crates built, signed, serialized and decoded them). Types mirror the
// generator's JSON; hex strings throughout.

export interface VectorConfig {
  priority_fee: string | null;
  compute_unit_limit: number | null;
  loaded_accounts_data_size_limit: number | null;
  heap_size: number | null;
}

export interface VectorDecoded {
  crate_decode: 'ok';
  version: 'legacy' | 0 | 1;
  wire_len: number;
  reserialized_equal: boolean;
  message_len: number;
  header: [number, number, number];
  config_mask: number | null;
  config: VectorConfig | null;
  recent_blockhash: string;
  account_keys: string[];
  instructions: Array<{ program_id_index: number; accounts: number[]; data: string }>;
  address_table_lookups: number;
  signatures: string[];
  sanitize: string;
  verify: boolean[];
}

export interface TxVector {
  name: string;
  note: string;
  hex: string;
  expected: VectorDecoded | { crate_decode: 'error'; error: string };
}

export interface BatchVector {
  name: string;
  note: string;
  batch: {
    hex: string;
    expected: Array<{ num_hashes: number; hash: string; txs: Array<{ wire_len: number; hex: string; version: 'legacy' | number; signatures: string[] }> }>;
  };
}

export interface V1Vectors {
  crates: Record<string, string>;
  transactions: TxVector[];
  entry_batches: BatchVector[];
}

let cached: V1Vectors | null = null;

export function v1Vectors(): V1Vectors {
  cached ??= JSON.parse(fs.readFileSync(fixture('txn-v1', 'vectors.json'), 'utf8')) as V1Vectors;
  return cached;
}

/** A transaction vector's bytes by name (throws on a name the file lacks: a test typo, not a decoder result). */
export function v1Tx(name: string): Buffer {
  const t = v1Vectors().transactions.find((x) => x.name === name);
  if (t === undefined) throw new Error(`no v1 vector named ${name}`);
  return Buffer.from(t.hex, 'hex');
}

/** Valid per the crate and the SIMD: decodes, sanitizes, verifies, at most 4096 bytes. */
export function isGood(t: TxVector): t is TxVector & { expected: VectorDecoded } {
  const e = t.expected;
  return e.crate_decode === 'ok' && e.sanitize === 'ok' && e.verify.every(Boolean) && t.hex.length / 2 <= 4096;
}
