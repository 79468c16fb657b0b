import { sign, type Keypair } from '../../base/keypair';
import { encodeCompactU16 } from '../../../proto/txn/compact-u16';
import { findProgramAddress } from '../../base/program-address';
import { ALT_PROGRAM_ID, encodeAltInstruction } from '../../../proto/lookup-table/program';
import { SYSTEM_PROGRAM, type Tip } from './transfers';

// Real address-lookup-table traffic for the local chain: a table made and filled by the ALT program (loaded in
// litesvm as the Core BPF program), and v0 transfers whose recipient is named only through it. Every vector
// length here is below 128, so each compact-u16 is one byte.
//
// Create + extend, one legacy transaction, payer = authority:
//   header (1, 0, 2) | keys: payer | table | [tip account] | system program | ALT program | blockhash
//   | ix Create  { program ALT, accounts [table, payer (authority), payer, system], u32 0 ‖ recent_slot ‖ bump }
//   | ix Extend  { program ALT, accounts [table, payer (authority), payer, system], u32 2 ‖ u64 n ‖ n × key }
//   | [ix tip transfer { program system, accounts [payer, tip] }]
//
// v0 transfer through the table:
//   0x80 | header (1, 0, 1) | keys: payer | [tip account] | system program | blockhash
//   | ix Transfer { program system, accounts [payer, S (the first loaded writable)], u32 2 ‖ u64 lamports }
//   | [ix tip transfer]
//   | lookups: 1 × { table | writable [index] | readonly [] }        (S = number of static keys)

const TRANSFER = 2;

/** The table's address: the PDA of [authority, recent_slot u64 LE] under the ALT program (processor.rs). */
export function lookupTableAddress(authority: Buffer, recentSlot: bigint): { address: Buffer; bump: number } {
  const slot = Buffer.alloc(8);
  slot.writeBigUInt64LE(recentSlot);
  return findProgramAddress([authority, slot], ALT_PROGRAM_ID);
}

function transferData(lamports: bigint): Buffer {
  const d = Buffer.alloc(12);
  d.writeUInt32LE(TRANSFER, 0);
  d.writeBigUInt64LE(lamports, 4);
  return d;
}

// Counts and lengths are compact-u16: an extension of 4+ addresses carries ≥ 128 bytes of data (two length bytes).
function ix(program: number, accounts: number[], data: Buffer): Buffer {
  return Buffer.concat([Buffer.from([program]), encodeCompactU16(accounts.length), Buffer.from(accounts), encodeCompactU16(data.length), data]);
}

function signed(payer: Keypair, message: Buffer): Buffer {
  return Buffer.concat([Buffer.from([1]), sign(payer, message), message]);
}

/** Creates the table (authority and payer: `payer`) and extends it with `addresses`, in one transaction. */
export function createAndExtendTx(payer: Keypair, recentSlot: bigint, addresses: Buffer[], blockhash: Buffer, tip?: Tip): { tx: Buffer; table: Buffer } {
  if (addresses.length === 0 || addresses.length > 20) throw new RangeError('1..20 addresses per demo table extension');
  const { address: table, bump } = lookupTableAddress(payer.publicKey, recentSlot);
  const keys = tip === undefined ? [payer.publicKey, table, SYSTEM_PROGRAM, ALT_PROGRAM_ID] : [payer.publicKey, table, tip.account, SYSTEM_PROGRAM, ALT_PROGRAM_ID];
  const system = keys.length - 2;
  const alt = keys.length - 1;
  const ixs = [
    ix(alt, [1, 0, 0, system], encodeAltInstruction({ kind: 'create', recentSlot, bumpSeed: bump })),
    ix(alt, [1, 0, 0, system], encodeAltInstruction({ kind: 'extend', addresses: Buffer.concat(addresses) })),
  ];
  if (tip !== undefined) ixs.push(ix(system, [0, 2], transferData(tip.lamports)));
  const message = Buffer.concat([Buffer.from([1, 0, 2, keys.length]), ...keys, blockhash, Buffer.from([ixs.length]), ...ixs]);
  return { tx: signed(payer, message), table };
}

/** A v0 System transfer from `payer` to the address at `index` of `table`, named only through the table. */
export function tableTransferTx(payer: Keypair, table: Buffer, index: number, lamports: bigint, blockhash: Buffer, tip?: Tip): Buffer {
  const keys = tip === undefined ? [payer.publicKey, SYSTEM_PROGRAM] : [payer.publicKey, tip.account, SYSTEM_PROGRAM];
  const system = keys.length - 1;
  const loaded = keys.length; // the first loaded writable address comes right after the static keys
  const ixs = [ix(system, [0, loaded], transferData(lamports))];
  if (tip !== undefined) ixs.push(ix(system, [0, 1], transferData(tip.lamports)));
  const message = Buffer.concat([
    Buffer.from([0x80, 1, 0, 1, keys.length]),
    ...keys,
    blockhash,
    Buffer.from([ixs.length]),
    ...ixs,
    Buffer.from([1]),
    table,
    Buffer.from([1, index, 0]),
  ]);
  return signed(payer, message);
}
