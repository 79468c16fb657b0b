import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { AddressLookupTableAccount, AddressLookupTableProgram, Keypair, PublicKey } from '@solana/web3.js';
import { decodeLookupTable, encodeLookupTable, newLookupTable, type LookupTableState } from '../../proto/lookup-table/account';
import { ALT_PROGRAM_ID, decodeAltInstruction, encodeAltInstruction, SLOT_MAX } from '../../proto/lookup-table/program';
import { deactivated, extended, frozen, indexesInRange, usableLength } from '../../proto/lookup-table/rules';
import { InstructionCursor, LOOKUP_INTS, LookupCursor, scanLookups } from '../../proto/tx-message-reader';
import { encodeTransaction } from '../../proto/wire';
import { encodeLoadedAddresses, encodeLoadedBlock } from '../../proto/wire-v2';
import { LoadedAddresses } from '../../proto/gen/stream_v2_pb';
import type { TxFields } from '../../proto/tx-fields';
import { findProgramAddress, isOnCurve } from '../../infra/base/program-address';

// The lookup-table codecs against the published references: web3.js's own ALT account decoder and instruction
// builders (the program's layouts), and its PDA derivation; the rules by the cases the chain distinguishes.

const key = (): Buffer => crypto.randomBytes(32);

function table(over: Partial<LookupTableState> = {}): LookupTableState {
  return { deactivationSlot: SLOT_MAX, lastExtendedSlot: 10n, lastExtendedSlotStartIndex: 2, authority: key(), addresses: Buffer.concat([key(), key(), key()]), ...over };
}

describe('lookup-table account layout', () => {
  it('decodes what web3.js decodes, and encodes back the same bytes', () => {
    for (const t of [table(), table({ authority: null, deactivationSlot: 99n }), table({ addresses: Buffer.alloc(0), lastExtendedSlot: 0n, lastExtendedSlotStartIndex: 0 })]) {
      const data = encodeLookupTable(t);
      const ref = AddressLookupTableAccount.deserialize(data);
      const d = decodeLookupTable(data);
      assert.ok(d.ok);
      assert.equal(d.table.deactivationSlot, ref.deactivationSlot);
      assert.equal(d.table.lastExtendedSlot, BigInt(ref.lastExtendedSlot));
      assert.equal(d.table.lastExtendedSlotStartIndex, ref.lastExtendedSlotStartIndex);
      assert.equal(d.table.authority === null, ref.authority === undefined);
      if (d.table.authority !== null) assert.ok(ref.authority!.toBuffer().equals(d.table.authority));
      assert.deepEqual(ref.addresses.map((a) => a.toBase58()), Array.from({ length: d.table.addresses.length / 32 }, (_, i) => new PublicKey(d.table.addresses.subarray(i * 32, i * 32 + 32)).toBase58()));
      assert.ok(encodeLookupTable(d.table).equals(data));
    }
  });

  it('refuses short data, another state, a ragged address area and a bad option tag', () => {
    const good = encodeLookupTable(table());
    assert.equal(decodeLookupTable(good.subarray(0, 55)).ok, false);
    const uninit = Buffer.from(good);
    uninit.writeUInt32LE(0, 0);
    assert.equal(decodeLookupTable(uninit).ok, false);
    assert.equal(decodeLookupTable(good.subarray(0, good.length - 1)).ok, false);
    const tag = Buffer.from(good);
    tag[21] = 2;
    assert.equal(decodeLookupTable(tag).ok, false);
  });
});

describe('lookup-table program instructions', () => {
  it('decodes the instructions web3.js builds for the program', () => {
    const authority = Keypair.generate().publicKey;
    const [create, tablePk] = AddressLookupTableProgram.createLookupTable({ authority, payer: authority, recentSlot: 12345 });
    assert.ok(create.programId.toBuffer().equals(ALT_PROGRAM_ID));
    const c = decodeAltInstruction(create.data);
    assert.ok(c !== null && c.kind === 'create');
    assert.equal(c.recentSlot, 12345n);
    // Our PDA derivation finds the same table address and bump.
    const slot = Buffer.alloc(8);
    slot.writeBigUInt64LE(12345n);
    const pda = findProgramAddress([authority.toBuffer(), slot], ALT_PROGRAM_ID);
    assert.ok(pda.address.equals(tablePk.toBuffer()));
    assert.equal(pda.bump, c.bumpSeed);
    assert.ok(encodeAltInstruction(c).equals(create.data));

    const addrs = [key(), key()];
    const ext = AddressLookupTableProgram.extendLookupTable({ lookupTable: tablePk, authority, payer: authority, addresses: addrs.map((a) => new PublicKey(a)) });
    const e = decodeAltInstruction(ext.data);
    assert.ok(e !== null && e.kind === 'extend');
    assert.ok(e.addresses.equals(Buffer.concat(addrs)));
    assert.ok(encodeAltInstruction(e).equals(ext.data));

    assert.deepEqual(decodeAltInstruction(AddressLookupTableProgram.freezeLookupTable({ lookupTable: tablePk, authority }).data), { kind: 'freeze' });
    assert.deepEqual(decodeAltInstruction(AddressLookupTableProgram.deactivateLookupTable({ lookupTable: tablePk, authority }).data), { kind: 'deactivate' });
    assert.deepEqual(decodeAltInstruction(AddressLookupTableProgram.closeLookupTable({ lookupTable: tablePk, authority, recipient: authority }).data), { kind: 'close' });
  });

  it('refuses what the program refuses to parse: unknown variant, short data, empty or oversized extension', () => {
    assert.equal(decodeAltInstruction(Buffer.from([9, 0, 0, 0])), null);
    assert.equal(decodeAltInstruction(Buffer.from([0, 0, 0])), null);
    assert.equal(decodeAltInstruction(Buffer.from([0, 0, 0, 0, 1, 2])), null);
    const empty = Buffer.alloc(12);
    empty.writeUInt32LE(2, 0);
    assert.equal(decodeAltInstruction(empty), null);
    const over = Buffer.alloc(12 + 32);
    over.writeUInt32LE(2, 0);
    over.writeBigUInt64LE(2n, 4); // says two, carries one
    assert.equal(decodeAltInstruction(over), null);
  });

  it('derives program addresses as web3.js does, off the curve', () => {
    for (let i = 0; i < 50; i++) {
      const seeds = [key(), Buffer.from([i])];
      const [ref, bump] = PublicKey.findProgramAddressSync(seeds, new PublicKey(ALT_PROGRAM_ID));
      const got = findProgramAddress(seeds, ALT_PROGRAM_ID);
      assert.ok(got.address.equals(ref.toBuffer()));
      assert.equal(got.bump, bump);
      assert.equal(isOnCurve(got.address), false);
      assert.equal(isOnCurve(Keypair.generate().publicKey.toBuffer()), true);
    }
  });
});

describe('lookup-table resolution rules (the chain\'s)', () => {
  it('addresses appended in a slot are not usable in that slot, only from the next', () => {
    const t = table({ lastExtendedSlot: 10n, lastExtendedSlotStartIndex: 2 });
    assert.deepEqual(usableLength(t, 9n), { ok: true, length: 2 });
    assert.deepEqual(usableLength(t, 10n), { ok: true, length: 2 });
    assert.deepEqual(usableLength(t, 11n), { ok: true, length: 3 });
  });

  it('a deactivated table stays usable through its cool-down (512 slots), then not', () => {
    const t = table({ deactivationSlot: 100n, lastExtendedSlot: 5n });
    assert.equal(usableLength(t, 100n).ok, true);
    assert.equal(usableLength(t, 612n).ok, true);
    assert.deepEqual(usableLength(t, 613n), { ok: false, reason: 'deactivated' });
  });

  it('one index at or past the usable length fails the whole lookup', () => {
    assert.equal(indexesInRange(Uint8Array.of(0, 1, 2), 3), true);
    assert.equal(indexesInRange(Uint8Array.of(0, 3), 3), false);
    assert.equal(indexesInRange(Uint8Array.of(), 0), true);
  });

  it('extensions: the first in a slot records the old length; the program refuses deactivated, frozen and over-full tables', () => {
    const t0 = newLookupTable(key());
    const a = extended(t0, Buffer.concat([key(), key()]), 7n)!;
    assert.equal(a.lastExtendedSlot, 7n);
    assert.equal(a.lastExtendedSlotStartIndex, 0);
    const b = extended(a, key(), 7n)!; // same slot: start index kept
    assert.equal(b.lastExtendedSlotStartIndex, 0);
    assert.equal(b.addresses.length, 96);
    const c = extended(b, key(), 8n)!;
    assert.equal(c.lastExtendedSlotStartIndex, 3);
    assert.equal(extended(deactivated(c, 9n)!, key(), 10n), null);
    assert.equal(extended(frozen(c)!, key(), 10n), null);
    assert.equal(extended(table({ addresses: Buffer.alloc(256 * 32) }), key(), 11n), null);
    assert.equal(frozen(t0), null, 'an empty table cannot be frozen');
  });
});

describe('reading lookups and instructions from the v1 message bytes', () => {
  it('finds every lookup and instruction the encoder wrote, in order', () => {
    const lookups = [
      { accountKey: key(), writableIndexes: Buffer.from([0, 3]), readonlyIndexes: Buffer.from([1]) },
      { accountKey: key(), writableIndexes: Buffer.alloc(0), readonlyIndexes: Buffer.from([7, 8, 9]) },
      { accountKey: key(), writableIndexes: Buffer.from([255]), readonlyIndexes: Buffer.alloc(0) },
    ];
    const tx: TxFields = {
      slot: 2n ** 60n, // a varint past 2^53 is skipped correctly
      numRequiredSignatures: 1,
      numReadonlySignedAccounts: 0,
      numReadonlyUnsignedAccounts: 1,
      recentBlockhash: key(),
      signatures: [crypto.randomBytes(64)],
      accountKeys: [key(), key()],
      instructions: [
        { programIdIndex: 1, accounts: Buffer.from([0]), data: Buffer.from([1, 2, 3]) },
        { programIdIndex: 0, accounts: Buffer.alloc(0), data: Buffer.alloc(0) },
      ],
      addressTableLookups: lookups,
      versioned: true,
    };
    const msg = encodeTransaction(tx);
    const c = new LookupCursor().reset(msg);
    for (const l of lookups) {
      assert.ok(c.next());
      assert.ok(Buffer.from(c.b.subarray(c.tableOff, c.tableOff + 32)).equals(l.accountKey));
      assert.ok(Buffer.from(c.b.subarray(c.writableOff, c.writableOff + c.writableLen)).equals(l.writableIndexes));
      assert.ok(Buffer.from(c.b.subarray(c.readonlyOff, c.readonlyOff + c.readonlyLen)).equals(l.readonlyIndexes));
    }
    assert.equal(c.next(), false);
    assert.equal(c.bad, false);
    const ic = new InstructionCursor().reset(msg);
    assert.ok(ic.next());
    assert.equal(ic.programIdIndex, 1);
    assert.deepEqual([...ic.b.subarray(ic.dataOff, ic.dataOff + ic.dataLen)], [1, 2, 3]);
    assert.ok(ic.next());
    assert.equal(ic.programIdIndex, 0);
    assert.equal(ic.dataLen, 0);
    assert.equal(ic.next(), false);
    // A legacy message has none; a truncated one is flagged, never read past its end.
    assert.equal(new LookupCursor().reset(encodeTransaction({ ...tx, addressTableLookups: [], versioned: false })).next(), false);
    const cut = new LookupCursor().reset(msg.subarray(0, msg.length - 5));
    while (cut.next());
    assert.equal(cut.bad, true);

    // The hot path's one-pass scan finds the same offsets, asks for room when its output is short, and refuses
    // what does not parse.
    const out = new Int32Array(LOOKUP_INTS * 3);
    assert.equal(scanLookups(msg, out), 3);
    const again = new LookupCursor().reset(msg);
    for (let i = 0; i < 3; i++) {
      assert.ok(again.next());
      assert.deepEqual([...out.subarray(i * LOOKUP_INTS, (i + 1) * LOOKUP_INTS)], [again.tableOff, again.writableOff, again.writableLen, again.readonlyOff, again.readonlyLen]);
    }
    assert.equal(scanLookups(msg, new Int32Array(LOOKUP_INTS * 2)), -2);
    assert.equal(scanLookups(msg.subarray(0, msg.length - 5), out), -1);
    assert.equal(scanLookups(encodeTransaction({ ...tx, addressTableLookups: [], versioned: false }), out), 0);
  });
});

describe('Transaction.loaded from one block of keys', () => {
  it('encodeLoadedBlock writes the bytes encodeLoadedAddresses writes for the same lists', () => {
    for (const [w, r, u] of [[3, 2, 0], [0, 4, 1], [5, 0, 2], [0, 0, 1], [0, 0, 0]] as const) {
      const keys = Array.from({ length: w + r }, key);
      const unresolved = Array.from({ length: u }, key);
      const lists = encodeLoadedAddresses({ writable: keys.slice(0, w), readonly: keys.slice(w), unresolvedTables: unresolved });
      const block = Buffer.concat(keys);
      assert.deepEqual(encodeLoadedBlock(block, w, unresolved), lists, `${w} writable, ${r} readonly, ${u} unresolved`);
      assert.deepEqual(encodeLoadedAddresses({ writable: [], readonly: [], unresolvedTables: unresolved, block, writableCount: w }), lists);
      // And what a v2 client decodes from it.
      const d = LoadedAddresses.deserializeBinary(lists);
      assert.deepEqual(d.getWritableList_asU8().map((k) => Buffer.from(k)), keys.slice(0, w));
      assert.deepEqual(d.getReadonlyList_asU8().map((k) => Buffer.from(k)), keys.slice(w));
      assert.deepEqual(d.getUnresolvedTablesList_asU8().map((k) => Buffer.from(k)), unresolved);
    }
  });
});
