// The v1 messages: generated code round trips, presence rules, field numbers on the wire, proto/wire.ts
// byte-equal to google-protobuf, old clients, the hand-written service definitions, and the subscribe CLI.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as grpc from '@grpc/grpc-js';
import bs58 from 'bs58';
import fc from 'fast-check';
import * as jspb from 'google-protobuf';
import { Timestamp } from 'google-protobuf/google/protobuf/timestamp_pb';
import { BoolValue } from 'google-protobuf/google/protobuf/wrappers_pb';
import {
  CompiledInstruction,
  MessageAddressTableLookup,
  SubscribeRequest,
  SubscribeRequestFilterTransactions,
  SubscribeResponse,
  SubscribeResponseTransaction,
} from '../../proto/gen/arpc_pb';
import {
  STREAM_SERVICE_NAMES,
  addSubscribeService,
  deserializeSubscribeRequest,
  serializeSubscribeRequest,
  subscribePath,
  type SubscribeHandler,
} from '../../proto/service';
import type { TxFields } from '../../proto/tx-fields';
import {
  WireError,
  checkSubscribeRequest,
  encodeFilterName,
  encodeFilterNames,
  encodePingResponse,
  encodeSlotResponse,
  encodeTransaction,
  encodeTxResponse,
  transactionSize,
} from '../../proto/wire';
import { cliCommand } from '../support/paths';
import { StreamClient } from '../support/stream-client';

const RUNS = Number(process.env.ROUNDTRIP_RUNS ?? 300);
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const u8 = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

// ---- TxFields ↔ generated ---------------------------------------------------------------------------------

function toGenerated(tx: TxFields): SubscribeResponseTransaction {
  const m = new SubscribeResponseTransaction();
  m.setSlot(Number(tx.slot));
  m.setNumRequiredSignatures(tx.numRequiredSignatures);
  m.setNumReadonlySignedAccounts(tx.numReadonlySignedAccounts);
  m.setNumReadonlyUnsignedAccounts(tx.numReadonlyUnsignedAccounts);
  m.setRecentBlockhash(tx.recentBlockhash);
  m.setSignaturesList(tx.signatures);
  m.setAccountKeysList(tx.accountKeys);
  m.setInstructionsList(
    tx.instructions.map((ix) => {
      const g = new CompiledInstruction();
      g.setProgramIdIndex(ix.programIdIndex);
      g.setAccounts(ix.accounts);
      g.setData(ix.data);
      return g;
    }),
  );
  m.setAddressTableLookupsList(
    tx.addressTableLookups.map((l) => {
      const g = new MessageAddressTableLookup();
      g.setAccountKey(l.accountKey);
      g.setWritableIndexes(l.writableIndexes);
      g.setReadonlyIndexes(l.readonlyIndexes);
      return g;
    }),
  );
  if (tx.versioned !== undefined) {
    const b = new BoolValue();
    b.setValue(tx.versioned);
    m.setVersioned(b);
  }
  return m;
}

function fromGenerated(m: SubscribeResponseTransaction): TxFields {
  const buf = (b: Uint8Array): Buffer => Buffer.from(b);
  return {
    slot: BigInt(m.getSlot()),
    numRequiredSignatures: m.getNumRequiredSignatures(),
    numReadonlySignedAccounts: m.getNumReadonlySignedAccounts(),
    numReadonlyUnsignedAccounts: m.getNumReadonlyUnsignedAccounts(),
    recentBlockhash: buf(m.getRecentBlockhash_asU8()),
    signatures: m.getSignaturesList_asU8().map(buf),
    accountKeys: m.getAccountKeysList_asU8().map(buf),
    instructions: m.getInstructionsList().map((ix) => ({
      programIdIndex: ix.getProgramIdIndex(),
      accounts: buf(ix.getAccounts_asU8()),
      data: buf(ix.getData_asU8()),
    })),
    addressTableLookups: m.getAddressTableLookupsList().map((l) => ({
      accountKey: buf(l.getAccountKey_asU8()),
      writableIndexes: buf(l.getWritableIndexes_asU8()),
      readonlyIndexes: buf(l.getReadonlyIndexes_asU8()),
    })),
    versioned: m.hasVersioned() ? m.getVersioned()!.getValue() : undefined,
  };
}

const bytesArb = (maxLength: number): fc.Arbitrary<Buffer> =>
  fc.oneof(fc.constant(Buffer.alloc(0)), fc.uint8Array({ maxLength }).map((a) => Buffer.from(a)));
const u32Arb = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 0xffffffff }));

/** Random TxFields; slot ≤ 2^53 − 1 so google-protobuf's number-typed uint64 holds it exactly. */
const txArb: fc.Arbitrary<TxFields> = fc
  .record({
    slot: fc.oneof(fc.constant(0n), fc.bigInt(0n, 1n << 32n), fc.bigInt(0n, BigInt(Number.MAX_SAFE_INTEGER))),
    numRequiredSignatures: u32Arb,
    numReadonlySignedAccounts: u32Arb,
    numReadonlyUnsignedAccounts: u32Arb,
    recentBlockhash: bytesArb(40),
    signatures: fc.array(bytesArb(70), { maxLength: 4 }),
    accountKeys: fc.array(bytesArb(40), { maxLength: 8 }),
    instructions: fc.array(fc.record({ programIdIndex: u32Arb, accounts: bytesArb(20), data: bytesArb(300) }), { maxLength: 5 }),
    addressTableLookups: fc.array(
      fc.record({ accountKey: bytesArb(40), writableIndexes: bytesArb(10), readonlyIndexes: bytesArb(10) }),
      { maxLength: 3 },
    ),
    versioned: fc.constantFrom(undefined, true, false),
  })
  // fast-check records have a null prototype; deepStrictEqual compares prototypes
  .map((t) => ({
    ...t,
    instructions: t.instructions.map((i) => ({ ...i })),
    addressTableLookups: t.addressTableLookups.map((l) => ({ ...l })),
  }));

function emptyTx(over: Partial<TxFields> = {}): TxFields {
  return {
    slot: 0n,
    numRequiredSignatures: 0,
    numReadonlySignedAccounts: 0,
    numReadonlyUnsignedAccounts: 0,
    recentBlockhash: Buffer.alloc(0),
    signatures: [],
    accountKeys: [],
    instructions: [],
    addressTableLookups: [],
    versioned: undefined,
    ...over,
  };
}

function sampleTx(): TxFields {
  return emptyTx({
    slot: 312_456_789n,
    numRequiredSignatures: 1,
    numReadonlyUnsignedAccounts: 1,
    recentBlockhash: Buffer.alloc(32, 7),
    signatures: [Buffer.alloc(64, 1)],
    accountKeys: [Buffer.alloc(32, 2), Buffer.alloc(32, 3)],
    instructions: [{ programIdIndex: 1, accounts: Buffer.from([0]), data: Buffer.from([2, 0, 0, 0]) }],
    addressTableLookups: [{ accountKey: Buffer.alloc(32, 9), writableIndexes: Buffer.from([1]), readonlyIndexes: Buffer.alloc(0) }],
    versioned: true,
  });
}

function generatedResponse(ms: number, filters: string[], tx?: SubscribeResponseTransaction): SubscribeResponse {
  const r = new SubscribeResponse();
  const ts = new Timestamp();
  ts.setSeconds(Math.floor(ms / 1000));
  ts.setNanos((ms - Math.floor(ms / 1000) * 1000) * 1e6);
  r.setCreatedAt(ts);
  r.setFiltersList(filters);
  if (tx !== undefined) r.setTransaction(tx);
  return r;
}

// ---- generated messages -----------------------------------------------------------------------------------

describe('proto: generated messages', () => {
  it('round-trips every message type with every field set', () => {
    const ix = new CompiledInstruction();
    ix.setProgramIdIndex(3);
    ix.setAccounts(Buffer.from([0, 1, 2]));
    ix.setData(Buffer.from('data'));
    // toObject renders bytes as base64
    assert.deepEqual(CompiledInstruction.deserializeBinary(ix.serializeBinary()).toObject(), {
      programIdIndex: 3,
      accounts: Buffer.from([0, 1, 2]).toString('base64'),
      data: Buffer.from('data').toString('base64'),
    });

    const lut = new MessageAddressTableLookup();
    lut.setAccountKey(Buffer.alloc(32, 5));
    lut.setWritableIndexes(Buffer.from([1, 2]));
    lut.setReadonlyIndexes(Buffer.from([3]));
    const lutBack = MessageAddressTableLookup.deserializeBinary(lut.serializeBinary());
    assert.equal(hex(lutBack.getAccountKey_asU8()), hex(Buffer.alloc(32, 5)));
    assert.equal(hex(lutBack.getWritableIndexes_asU8()), '0102');
    assert.equal(hex(lutBack.getReadonlyIndexes_asU8()), '03');

    const f = new SubscribeRequestFilterTransactions();
    f.setAccountIncludeList(['a', 'b']);
    f.setAccountExcludeList(['c']);
    f.setAccountRequiredList(['d']);
    assert.deepEqual(SubscribeRequestFilterTransactions.deserializeBinary(f.serializeBinary()).toObject(), {
      accountIncludeList: ['a', 'b'],
      accountExcludeList: ['c'],
      accountRequiredList: ['d'],
    });

    const req = new SubscribeRequest();
    req.getTransactionsMap().set('one', f);
    req.getTransactionsMap().set('two', new SubscribeRequestFilterTransactions());
    req.setPingId(-7);
    req.setNewSeenSlots(true);
    const reqBack = SubscribeRequest.deserializeBinary(req.serializeBinary());
    assert.deepEqual(reqBack.toObject(), {
      transactionsMap: [
        ['one', { accountIncludeList: ['a', 'b'], accountExcludeList: ['c'], accountRequiredList: ['d'] }],
        ['two', { accountIncludeList: [], accountExcludeList: [], accountRequiredList: [] }],
      ],
      pingId: -7,
      newSeenSlots: true,
    });

    const tx = sampleTx();
    const txBack = SubscribeResponseTransaction.deserializeBinary(toGenerated(tx).serializeBinary());
    assert.deepEqual(fromGenerated(txBack), tx);

    const resp = generatedResponse(1_700_000_000_123, ['f1', 'f2'], toGenerated(tx));
    resp.setPingId(9);
    resp.setNewSlot(77);
    const respBack = SubscribeResponse.deserializeBinary(resp.serializeBinary());
    assert.equal(respBack.getCreatedAt()!.getSeconds(), 1_700_000_000);
    assert.equal(respBack.getCreatedAt()!.getNanos(), 123_000_000);
    assert.deepEqual(respBack.getFiltersList(), ['f1', 'f2']);
    assert.deepEqual(fromGenerated(respBack.getTransaction()!), tx);
    assert.equal(respBack.getPingId(), 9);
    assert.equal(respBack.getNewSlot(), 77);
  });

  it('keeps versioned absent, true and false apart; false is 52 00 on the wire', () => {
    const enc = (v: boolean | undefined): Uint8Array => toGenerated(emptyTx({ versioned: v })).serializeBinary();
    assert.equal(hex(enc(undefined)), '');
    assert.equal(hex(enc(false)), '5200');
    assert.equal(hex(enc(true)), '52020801');
    const back = (v: boolean | undefined): boolean | undefined => fromGenerated(SubscribeResponseTransaction.deserializeBinary(enc(v))).versioned;
    assert.equal(back(undefined), undefined);
    assert.equal(back(false), false);
    assert.equal(back(true), true);
  });

  it('keeps transaction, ping_id and new_slot as separate optionals (0 present ≠ absent)', () => {
    const absent = SubscribeResponse.deserializeBinary(new SubscribeResponse().serializeBinary());
    assert.equal(absent.hasTransaction(), false);
    assert.equal(absent.hasPingId(), false);
    assert.equal(absent.hasNewSlot(), false);
    assert.equal(absent.hasCreatedAt(), false);

    const zeros = new SubscribeResponse();
    zeros.setPingId(0);
    zeros.setNewSlot(0);
    zeros.setTransaction(new SubscribeResponseTransaction());
    assert.equal(hex(zeros.serializeBinary()), '1a0020002800');
    const back = SubscribeResponse.deserializeBinary(zeros.serializeBinary());
    assert.equal(back.hasTransaction(), true);
    assert.equal(back.hasPingId(), true);
    assert.equal(back.getPingId(), 0);
    assert.equal(back.hasNewSlot(), true);
    assert.equal(back.getNewSlot(), 0);

    const only = new SubscribeResponse();
    only.setNewSlot(5);
    const onlyBack = SubscribeResponse.deserializeBinary(only.serializeBinary());
    assert.deepEqual([onlyBack.hasTransaction(), onlyBack.hasPingId(), onlyBack.hasNewSlot()], [false, false, true]);
  });

  it('keeps SubscribeRequest ping_id and new_seen_slots absent apart from 0/false', () => {
    const absent = SubscribeRequest.deserializeBinary(serializeSubscribeRequest({}));
    assert.equal(absent.hasPingId(), false);
    assert.equal(absent.hasNewSeenSlots(), false);
    assert.equal(absent.getTransactionsMap().getLength(), 0);

    const bytes = serializeSubscribeRequest({ pingId: 0, newSeenSlots: false });
    assert.equal(hex(bytes), '10001800');
    const set = SubscribeRequest.deserializeBinary(bytes);
    assert.equal(set.hasPingId(), true);
    assert.equal(set.getPingId(), 0);
    assert.equal(set.hasNewSeenSlots(), true);
    assert.equal(set.getNewSeenSlots(), false);
  });

  it('puts account_include/exclude/required on field numbers 2, 3, 4', () => {
    const f = new SubscribeRequestFilterTransactions();
    f.setAccountIncludeList(['i']);
    f.setAccountExcludeList(['e']);
    f.setAccountRequiredList(['r']);
    // tag = field << 3 | 2: 0x12, 0x1a, 0x22
    assert.equal(hex(f.serializeBinary()), '1201' + '69' + '1a01' + '65' + '2201' + '72');
    // and inside the request: field 1 map entry { 0a key, 12 value }
    const req = serializeSubscribeRequest({ transactions: { k: { accountRequired: ['r'] } } });
    assert.equal(hex(req), '0a08' + '0a016b' + '1203' + '220172');
  });
});

// ---- proto/wire.ts ----------------------------------------------------------------------------------------

describe('proto: wire.ts encoders', () => {
  it('encodeTransaction is byte-equal to serializeBinary and decodes to the same fields', () => {
    let nonEmpty = 0;
    fc.assert(
      fc.property(txArb, (tx) => {
        const ours = encodeTransaction(tx);
        const theirs = toGenerated(tx).serializeBinary();
        assert.equal(ours.length, transactionSize(tx));
        assert.equal(hex(ours), hex(theirs));
        assert.deepEqual(fromGenerated(SubscribeResponseTransaction.deserializeBinary(ours)), tx);
        if (ours.length > 0) nonEmpty++;
      }),
      { numRuns: RUNS },
    );
    assert.ok(nonEmpty > RUNS / 2, `only ${nonEmpty} non-empty encodings`);
  });

  it('omits proto3 defaults and keeps empty repeated elements', () => {
    assert.equal(encodeTransaction(emptyTx()).length, 0);
    const t = emptyTx({ signatures: [Buffer.alloc(0)], instructions: [{ programIdIndex: 0, accounts: Buffer.alloc(0), data: Buffer.alloc(0) }] });
    assert.equal(hex(encodeTransaction(t)), '3200' + '4200');
    assert.equal(hex(encodeTransaction(t)), hex(toGenerated(t).serializeBinary()));
    assert.equal(hex(encodeTransaction(emptyTx({ versioned: false }))), '5200');
  });

  it('encodes slots beyond 2^53 exactly (as google-protobuf writeUint64String does)', () => {
    const slots = [BigInt(Number.MAX_SAFE_INTEGER) + 1n, (1n << 63n) + 12345n, (1n << 64n) - 1n];
    for (const slot of slots) {
      const w = new jspb.BinaryWriter();
      w.writeUint64String(1, slot.toString());
      const rest = sampleTx();
      assert.equal(hex(encodeTransaction({ ...rest, slot })), hex(w.getResultBuffer()) + hex(encodeTransaction({ ...rest, slot: 0n })));
      const s = new jspb.BinaryWriter();
      s.writeUint64String(5, slot.toString());
      // created_at at the epoch is an empty Timestamp, still present: 0a 00
      assert.equal(hex(encodeSlotResponse(slot, 0)), '0a00' + hex(s.getResultBuffer()));
    }
    assert.equal(hex(encodeTransaction(emptyTx({ slot: (1n << 64n) - 1n }))), '08ffffffffffffffffff01');
    assert.throws(() => encodeTransaction(emptyTx({ slot: 1n << 64n })), RangeError);
    assert.throws(() => encodeTransaction(emptyTx({ slot: -1n })), RangeError);
  });

  it('encodeTxResponse = generated SubscribeResponse{created_at, filters, transaction}', () => {
    const nameArb = fc.oneof(fc.string({ maxLength: 20 }), fc.string({ unit: 'binary', maxLength: 140 }));
    const msArb = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 999 }), fc.integer({ min: 0, max: 2 ** 42 }), fc.constant(1_700_000_000_000));
    let withFilters = 0;
    fc.assert(
      fc.property(msArb, fc.array(nameArb, { maxLength: 4 }), txArb, fc.boolean(), (ms, names, tx, asList) => {
        const txMsg = encodeTransaction(tx);
        const fields = asList ? names.map(encodeFilterName) : encodeFilterNames(names);
        const ours = encodeTxResponse(ms, fields, txMsg);
        const theirs = generatedResponse(ms, names, toGenerated(tx)).serializeBinary();
        assert.equal(hex(ours), hex(theirs));
        const back = SubscribeResponse.deserializeBinary(ours);
        assert.deepEqual(back.getFiltersList(), names);
        assert.deepEqual(fromGenerated(back.getTransaction()!), tx);
        assert.equal(back.hasPingId() || back.hasNewSlot(), false);
        if (names.length > 0) withFilters++;
      }),
      { numRuns: RUNS },
    );
    assert.ok(withFilters > 0);
  });

  it('writes created_at with nanos from fractional ms and seconds before 1970', () => {
    const back = (ms: number): [number, number] => {
      const ts = SubscribeResponse.deserializeBinary(encodeSlotResponse(1n, ms)).getCreatedAt()!;
      return [ts.getSeconds(), ts.getNanos()];
    };
    assert.deepEqual(back(1_700_000_000_123.25), [1_700_000_000, 123_250_000]); // .25 is exact in a double
    assert.deepEqual(back(-1500), [-2, 500_000_000]);
    const neg = new SubscribeResponse();
    const ts = new Timestamp();
    ts.setSeconds(-2);
    ts.setNanos(500_000_000);
    neg.setCreatedAt(ts);
    neg.setNewSlot(1);
    assert.equal(hex(encodeSlotResponse(1n, -1500)), hex(neg.serializeBinary()));
  });

  it('ping responses carry ping_id only, present even when 0 (the heartbeat)', () => {
    assert.equal(hex(encodePingResponse(0)), '2000');
    for (const id of [0, 1, 127, 128, 0x7fffffff, -1, -0x80000000]) {
      const g = new SubscribeResponse();
      g.setPingId(id);
      assert.equal(hex(encodePingResponse(id)), hex(g.serializeBinary()), `ping ${id}`);
      const back = SubscribeResponse.deserializeBinary(encodePingResponse(id));
      assert.equal(back.hasPingId(), true);
      assert.equal(back.getPingId(), id);
      assert.equal(back.hasCreatedAt() || back.hasTransaction() || back.hasNewSlot(), false);
      assert.equal(back.getFiltersList().length, 0);
    }
    assert.throws(() => encodePingResponse(2 ** 31), RangeError);
    assert.throws(() => encodePingResponse(1.5), RangeError);
  });

  it('slot responses carry created_at and new_slot (present even when 0)', () => {
    for (const slot of [0n, 1n, 300_000_000n, BigInt(Number.MAX_SAFE_INTEGER)]) {
      const g = generatedResponse(1_700_000_000_001, []);
      g.setNewSlot(Number(slot));
      assert.equal(hex(encodeSlotResponse(slot, 1_700_000_000_001)), hex(g.serializeBinary()));
      const back = SubscribeResponse.deserializeBinary(encodeSlotResponse(slot, 1_700_000_000_001));
      assert.equal(back.hasNewSlot(), true);
      assert.equal(back.getNewSlot(), Number(slot));
      assert.equal(back.hasTransaction() || back.hasPingId(), false);
    }
  });

  it('an old client that knows only fields 1–3 still decodes responses carrying fields 4 and 5', () => {
    // The old client's decoder: google-protobuf's reader, fields 1–3 known, everything else skipped.
    const oldDecode = (bytes: Uint8Array): { seconds?: number; filters: string[]; tx?: Uint8Array } => {
      const out: { seconds?: number; filters: string[]; tx?: Uint8Array } = { filters: [] };
      const r = new jspb.BinaryReader(bytes);
      while (r.nextField()) {
        switch (r.getFieldNumber()) {
          case 1: {
            const ts = new Timestamp();
            r.readMessage(ts, Timestamp.deserializeBinaryFromReader);
            out.seconds = ts.getSeconds();
            break;
          }
          case 2:
            out.filters.push(r.readString());
            break;
          case 3:
            out.tx = r.readBytes();
            break;
          default:
            r.skipField();
        }
      }
      return out;
    };
    const txMsg = encodeTransaction(sampleTx());
    const all = Buffer.concat([encodeTxResponse(1_700_000_000_000, [encodeFilterName('a')], txMsg), encodePingResponse(-3), Buffer.from('28ffffffff0f', 'hex')]);
    const old = oldDecode(all);
    assert.equal(old.seconds, 1_700_000_000);
    assert.deepEqual(old.filters, ['a']);
    assert.equal(hex(old.tx!), hex(txMsg));
    assert.deepEqual(fromGenerated(SubscribeResponseTransaction.deserializeBinary(old.tx!)), sampleTx());
    // heartbeat and slot messages: nothing known, nothing broken
    assert.deepEqual(oldDecode(encodePingResponse(0)), { filters: [] });
    assert.deepEqual(oldDecode(encodeSlotResponse(5n, 1_700_000_000_000)), { seconds: 1_700_000_000, filters: [] });
    // and the current generated class sees all five
    const cur = SubscribeResponse.deserializeBinary(all);
    assert.deepEqual([cur.hasTransaction(), cur.getPingId(), cur.getNewSlot()], [true, -3, 0xffffffff]);
  });
});

// ---- request vetting --------------------------------------------------------------------------------------

describe('proto: SubscribeRequest deserializer', () => {
  const filterArb = fc.record({
    accountInclude: fc.array(fc.string({ maxLength: 44 }), { maxLength: 3 }),
    accountExclude: fc.array(fc.string({ unit: 'binary', maxLength: 10 }), { maxLength: 3 }),
    accountRequired: fc.array(fc.string({ maxLength: 44 }), { maxLength: 3 }),
  });
  const reqArb = fc.record(
    {
      transactions: fc.dictionary(fc.string({ maxLength: 16 }), filterArb, { maxKeys: 4 }),
      pingId: fc.integer({ min: -0x80000000, max: 0x7fffffff }),
      newSeenSlots: fc.boolean(),
    },
    { requiredKeys: [] },
  );

  it('accepts what the generated code writes and decodes it unchanged', () => {
    fc.assert(
      fc.property(reqArb, (req) => {
        const bytes = serializeSubscribeRequest(req);
        const back = deserializeSubscribeRequest(bytes);
        assert.ok(back instanceof SubscribeRequest);
        assert.equal(hex(back.serializeBinary()), hex(bytes));
        assert.equal(back.hasPingId(), req.pingId !== undefined);
        assert.equal(back.hasNewSeenSlots(), req.newSeenSlots !== undefined);
      }),
      { numRuns: RUNS },
    );
  });

  it('skips unknown fields of every wire type', () => {
    // field 9 varint, field 10 fixed64, field 11 bytes, field 12 fixed32, then ping_id 5
    const bytes = Buffer.from('4801' + '510102030405060708' + '5a0161' + '6501020304' + '1005', 'hex');
    assert.equal(deserializeSubscribeRequest(bytes).getPingId(), 5);
  });

  it('rejects malformed bytes with a WireError', () => {
    const bad: Record<string, string> = {
      'truncated length': '0a05' + '0a0141',
      'truncated varint': '10ff',
      'invalid UTF-8 key': '0a04' + '0a02c328',
      'invalid UTF-8 account': '0a07' + '0a0141' + '1202' + '12ff' /* inner length runs out */,
      'invalid UTF-8 account (complete)': '0a09' + '0a0141' + '1204' + '1202fffe',
      'wrong wire type for ping_id': '120105',
      'wrong wire type for a filter list': '0a07' + '0a0141' + '1202' + '1000',
      'field number 0': '0001',
      'group wire type': '0b',
      'varint over 10 bytes': '10ffffffffffffffffffff01',
    };
    for (const [what, h] of Object.entries(bad)) {
      assert.throws(() => checkSubscribeRequest(Buffer.from(h, 'hex')), WireError, what);
      assert.throws(() => deserializeSubscribeRequest(Buffer.from(h, 'hex')), WireError, what);
    }
  });

  it('never crashes on random or mutated bytes: a SubscribeRequest or an Error', () => {
    const valid = serializeSubscribeRequest({ transactions: { a: { accountInclude: ['11111111111111111111111111111111'] }, b: {} }, pingId: 300 });
    const mutated = fc
      .tuple(fc.nat(valid.length - 1), fc.integer({ min: 0, max: 255 }), fc.nat(valid.length))
      .map(([at, byte, cut]) => {
        const b = Buffer.from(valid);
        b[at] = byte;
        return b.subarray(0, Math.max(cut, at + 1));
      });
    let accepted = 0;
    let rejected = 0;
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }).map(u8), mutated), (bytes) => {
        let out: unknown;
        try {
          out = deserializeSubscribeRequest(bytes);
        } catch (e) {
          assert.ok(e instanceof Error, `threw a non-Error: ${String(e)}`);
          rejected++;
          return;
        }
        assert.ok(out instanceof SubscribeRequest);
        accepted++;
      }),
      { numRuns: RUNS * 10 },
    );
    assert.ok(accepted > 0 && rejected > 0, `accepted ${accepted}, rejected ${rejected}`);
  });
});

// ---- service definitions over a real grpc-js server -------------------------------------------------------

interface TestServer {
  address: string;
  server: grpc.Server;
  seen: { path: string; token: string | undefined; requests: SubscribeRequest[] }[];
}

/** A tiny Subscribe server: sends headers at once, answers pings, a transaction per filter map, slots on request. */
async function startServer(opts: { rejectWith?: grpc.StatusObject } = {}): Promise<TestServer> {
  const server = new grpc.Server();
  const seen: TestServer['seen'] = [];
  const txMsg = encodeTransaction(sampleTx());
  const handler: SubscribeHandler = (call) => {
    const entry = { path: call.getPath(), token: call.metadata.get('x-token')[0]?.toString(), requests: [] as SubscribeRequest[] };
    seen.push(entry);
    call.sendMetadata(new grpc.Metadata());
    if (opts.rejectWith !== undefined) {
      call.emit('error', opts.rejectWith);
      return;
    }
    call.on('data', (req: SubscribeRequest) => {
      entry.requests.push(req);
      const names = req.getTransactionsMap().getEntryList().map(([k]) => k as string);
      if (names.length > 0) call.write(encodeTxResponse(Date.now(), names.map(encodeFilterName), txMsg));
      if (req.getNewSeenSlots()) call.write(encodeSlotResponse(312_456_790n, Date.now()));
      if (req.hasPingId()) call.write(encodePingResponse(req.getPingId()));
    });
    call.on('end', () => call.end());
    call.on('error', () => {});
  };
  addSubscribeService(server, handler);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  return { address: `127.0.0.1:${port}`, server, seen };
}

describe('proto: service definitions', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startServer();
  });
  after(() => srv.server.forceShutdown());

  it('registers Subscribe under all three names', () => {
    assert.deepEqual(
      STREAM_SERVICE_NAMES.map(subscribePath),
      ['/arpc.StreamService/Subscribe', '/arpc.ARPCService/Subscribe', '/StreamService/Subscribe'],
    );
  });

  for (const service of ['StreamService', 'ARPCService', 'unpackaged'] as const) {
    it(`answers a ${service} client: headers first, then tx, slot and ping`, async () => {
      const before = srv.seen.length;
      const c = StreamClient.open(srv.address, { service });
      await c.headers; // before any write: the server sent its headers at once
      c.send({ transactions: { mine: { accountInclude: ['x'] }, other: {} }, newSeenSlots: true, pingId: 0 });
      const tx = await c.waitFor((r) => r.transaction !== undefined);
      assert.deepEqual(tx.filters, ['mine', 'other']);
      assert.equal(tx.transaction!.signature, bs58.encode(Buffer.alloc(64, 1)));
      assert.equal(tx.transaction!.versioned, true);
      assert.ok(tx.createdAtMs !== undefined && Math.abs(tx.createdAtMs - Date.now()) < 60_000);
      assert.equal((await c.waitFor((r) => r.newSlot !== undefined)).newSlot, 312_456_790);
      const ping = await c.waitFor((r) => r.pingId !== undefined);
      assert.equal(ping.pingId, 0);
      assert.equal(ping.createdAtMs, undefined);
      c.end();
      const status = await c.waitForEnd();
      assert.equal(status.codeName, 'OK');
      assert.equal(srv.seen.length, before + 1);
      const expectPath = { StreamService: '/arpc.StreamService/Subscribe', ARPCService: '/arpc.ARPCService/Subscribe', unpackaged: '/StreamService/Subscribe' }[service];
      assert.equal(srv.seen[before]!.path, expectPath);
      assert.equal(srv.seen[before]!.requests.length, 1);
    });
  }

  it('ends a stream that sends malformed bytes with INTERNAL, and keeps serving others', async () => {
    const client = new grpc.Client(srv.address, grpc.credentials.createInsecure());
    const call = client.makeBidiStreamRequest(
      '/arpc.ARPCService/Subscribe',
      (b: Buffer) => b,
      (b: Buffer) => b,
    );
    const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    call.on('error', () => {});
    call.on('data', () => {});
    call.write(Buffer.from('0a04' + '0a02c328', 'hex'));
    const s = await status;
    client.close();
    assert.equal(s.code, grpc.status.INTERNAL);
    assert.match(s.details, /deserializ/i);
    const c = StreamClient.open(srv.address, { service: 'StreamService' });
    c.send({ pingId: 42 });
    assert.equal((await c.waitFor((r) => r.pingId === 42)).pingId, 42);
    await c.close();
  });
});

// ---- the subscribe CLI ------------------------------------------------------------------------------------

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runCli(args: string[], onStdout?: (text: string, child: ReturnType<typeof spawn>) => void): Promise<CliRun> {
  const { cmd, args: pre } = cliCommand();
  const child = spawn(cmd, [...pre, 'subscribe', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    onStdout?.(stdout, child);
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('subscribe CLI', () => {
  const token = 'sekret-token-do-not-print';

  it('prints transactions and slots as JSON lines and exits 0 on SIGINT', async () => {
    const srv = await startServer();
    try {
      const key = bs58.encode(Buffer.alloc(32, 2));
      let signalled = false;
      const run = await runCli(
        ['--url', srv.address, '--include', key, '--slots', '--json', '--service', 'ARPCService', '--token', token, '--filter-name', 'mine'],
        (out, child) => {
          if (!signalled && out.split('\n').length > 2) {
            signalled = true;
            child.kill('SIGINT');
          }
        },
      );
      assert.equal(run.code, 0, run.stderr);
      const lines = run.stdout.trim().split('\n');
      assert.equal(lines.length, 2, run.stdout);
      const tx = JSON.parse(lines[0]!) as { slot: number; signature: string; filters: string[]; accountKeys: string[] };
      assert.deepEqual(tx, {
        slot: 312_456_789,
        signature: bs58.encode(Buffer.alloc(64, 1)),
        filters: ['mine'],
        accountKeys: [key, bs58.encode(Buffer.alloc(32, 3))],
      });
      assert.deepEqual(JSON.parse(lines[1]!), { newSlot: 312_456_790 });
      assert.equal(srv.seen.length, 1);
      assert.equal(srv.seen[0]!.path, '/arpc.ARPCService/Subscribe');
      assert.equal(srv.seen[0]!.token, token);
      const req = srv.seen[0]!.requests[0]!;
      assert.deepEqual(req.toObject().transactionsMap, [['mine', { accountIncludeList: [key], accountExcludeList: [], accountRequiredList: [] }]]);
      assert.equal(req.getNewSeenSlots(), true);
      assert.equal(req.hasPingId(), false);
      assert.ok(!run.stdout.includes(token) && !run.stderr.includes(token));
    } finally {
      srv.server.forceShutdown();
    }
  });

  it('prints text lines, subscribes to everything by default, and reports an error status with exit 1', async () => {
    const srv = await startServer();
    const rej = await startServer({ rejectWith: { code: grpc.status.UNAUTHENTICATED, details: 'invalid x-token', metadata: new grpc.Metadata() } });
    try {
      let signalled = false;
      const ok = await runCli(['--url', srv.address], (out, child) => {
        if (!signalled && out.includes('\n')) {
          signalled = true;
          child.kill('SIGINT');
        }
      });
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(ok.stdout.trim().split('\n')[0], `tx 312456789 ${bs58.encode(Buffer.alloc(64, 1))} filters=cli`);
      const all = srv.seen[0]!.requests[0]!;
      assert.deepEqual(all.toObject().transactionsMap, [['cli', { accountIncludeList: [], accountExcludeList: [], accountRequiredList: [] }]]);
      assert.equal(all.hasNewSeenSlots(), false);

      const bad = await runCli(['--url', rej.address, '--token', token]);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /UNAUTHENTICATED \(16\): invalid x-token/);
      assert.ok(!bad.stdout.includes(token) && !bad.stderr.includes(token));
    } finally {
      srv.server.forceShutdown();
      rej.server.forceShutdown();
    }
  });

  it('refuses unknown options and bad --service with exit 2', async () => {
    const run = await runCli(['--service', 'Nope']);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--service must be one of/);
  });
});
