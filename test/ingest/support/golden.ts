import fs from 'node:fs';
import bs58 from 'bs58';
import type { DecodedTxn } from '../../../proto/txn/decode';
import { fixture } from '../../support/paths';

// The golden JSON of fixtures/shreds/*.expected.json (fixtures/README.md), and the same shape computed from a
// decoded transaction, written here independently of the CLI's formatter.

export interface GoldenTx {
  signatures: string[];
  version: 'legacy' | number;
  header: [number, number, number];
  account_keys: string[];
  recent_blockhash: string;
  num_instructions: number;
  program_ids: string[];
  alt_lookups: unknown[];
  wire_len: number;
}

export interface GoldenEntry {
  num_hashes: number;
  hash: string;
  txs: GoldenTx[];
}

export interface GoldenBatch {
  slot: number;
  first_shred: number;
  last_shred: number;
  payload_bytes: number;
  consumed_bytes: number;
  trailing_zero_bytes: number;
  last_in_slot: boolean;
  num_entries: number;
  entries: GoldenEntry[];
}

export interface Golden {
  source: string;
  leader: string;
  num_packets: number;
  fec_sets: Array<{ slot: number; fec_set_index: number; data_present: number; code_present: number }>;
  entry_batches: GoldenBatch[];
}

export const TURBINE = {
  capture: fixture('shreds', 'testnet-385970984-turbine.ar'),
  expected: fixture('shreds', 'testnet-385970984-turbine.expected.json'),
  shredVersion: 27350,
  leader: 'FT9QgTVo375TgDAQusTgpsfXqTosCJLfrBpoVdcbnhtS',
};

export const DEMO = {
  capture: fixture('shreds', 'demo-shreds.pcap'),
  expected: fixture('shreds', 'demo-shreds.expected.json'),
  entries: fixture('shreds', 'demo-shreds.entries.bin'),
  key: fixture('shreds', 'demo-shreds.key'),
  shredVersion: 6051,
};

export function loadGolden(path: string): Golden {
  return JSON.parse(fs.readFileSync(path, 'utf8')) as Golden;
}

export function goldenTxs(g: Golden): GoldenTx[] {
  return g.entry_batches.flatMap((b) => b.entries.flatMap((e) => e.txs));
}

const b58 = (b: Uint8Array): string => bs58.encode(b);

export function toGoldenTx(d: DecodedTxn): GoldenTx {
  const t = d.tx;
  return {
    signatures: t.signatures.map(b58),
    version: d.version,
    header: [t.numRequiredSignatures, t.numReadonlySignedAccounts, t.numReadonlyUnsignedAccounts],
    account_keys: t.accountKeys.map(b58),
    recent_blockhash: b58(t.recentBlockhash),
    num_instructions: t.instructions.length,
    program_ids: t.instructions.map((ix) => b58(t.accountKeys[ix.programIdIndex]!)),
    alt_lookups: t.addressTableLookups.map((l) => ({
      account_key: b58(l.accountKey),
      writable_indexes: [...l.writableIndexes],
      readonly_indexes: [...l.readonlyIndexes],
    })),
    wire_len: d.wireLen,
  };
}
