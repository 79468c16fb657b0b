import assert from 'node:assert/strict';
import bs58 from 'bs58';
import type { BusMessage } from '../../bus/bus';
import type { RecordedRecord } from '../../bus/recording';
import { fileChunks, readRecording } from '../../bus/recording-io';
import { TOPIC } from '../../bus/topics';
import { decodeTxRecord, encodeTxRecord } from '../../bus/topics/stream-transactions';
import {
  decodeLookupsHeader, encodeLookupsHeader, LOOKUPS_HEADER, lookupsHeaderOf, scanLookupsHeader, HEADER_LOOKUP_INTS,
} from '../../bus/topics/stream-transactions-lookups';
import { isStreamError } from '../../fanout/errors';
import { openLookupTables, type LookupTables } from '../../fanout/lookup-tables/lookup-tables';
import { recordLookups } from '../../fanout/lookup-tables/read-lookups';
import { wireEncoder } from '../../fanout/v1/encoder';
import { Fanout } from '../../fanout/v1/hub';
import { encodeLookupTable } from '../../proto/lookup-table/account';
import { SLOT_MAX } from '../../proto/lookup-table/program';
import type { LookupFields, TxFields } from '../../proto/tx-fields';
import { encodeTransaction } from '../../proto/wire';
import { fixture } from '../support/paths';
import { waitFor } from '../support/wait';
import { FakePort } from './fake-port';
import { feedOf, quietLog, testConfig, testKey, uniqueSignature } from './support';

// The `lookups` header of stream.transactions (bus/topics/stream-transactions-lookups.ts): its codec, and the
// fanout reading a record's lookups from it instead of the message — shown by records whose message and header
// disagree (the header decides) — while a record without it (an older ingest's, or the recorded fixture) still
// has its lookups read from the message.

const topics = { transactions: TOPIC.streamTransactions, slots: TOPIC.streamSlots };

describe('stream.transactions lookups header', () => {
  const l1: LookupFields = { accountKey: Buffer.alloc(32, 0xa1), writableIndexes: Buffer.from([3, 1]), readonlyIndexes: Buffer.from([7]) };
  const l2: LookupFields = { accountKey: Buffer.alloc(32, 0xb2), writableIndexes: Buffer.alloc(0), readonlyIndexes: Buffer.from([0, 255]) };

  describe('codec', () => {
    it('pins the layout (golden bytes) and round-trips as views into the header', () => {
      const h = encodeLookupsHeader([l1, l2]);
      assert.equal(
        h.toString('hex'),
        '01' + '0200' + 'a1'.repeat(32) + '0200' + '0100' + '0301' + '07' + 'b2'.repeat(32) + '0000' + '0200' + '00ff',
      );
      const d = decodeLookupsHeader(h);
      assert.ok(d !== null);
      assert.deepEqual(d.map((l) => [l.table, [...l.writableIndexes], [...l.readonlyIndexes]]), [
        [l1.accountKey, [3, 1], [7]],
        [l2.accountKey, [], [0, 255]],
      ]);
      assert.equal(d[0]!.table.buffer, h.buffer, 'a view, not a copy');
      assert.equal(encodeLookupsHeader([]).toString('hex'), '010000', 'a legacy transaction: "no lookups"');
    });

    it('refuses bytes that do not hold what they announce, and asks for room when the output is short', () => {
      const h = encodeLookupsHeader([l1, l2]);
      const out = new Int32Array(HEADER_LOOKUP_INTS * 2);
      assert.equal(scanLookupsHeader(h, out), 2);
      for (let n = 0; n < h.length; n++) assert.equal(scanLookupsHeader(h.subarray(0, n), out), -1, `cut at ${n}`);
      assert.equal(scanLookupsHeader(Buffer.concat([h, Buffer.from([0])]), out), -1, 'a byte after the last lookup');
      assert.equal(scanLookupsHeader(h, new Int32Array(HEADER_LOOKUP_INTS)), -2);
      assert.equal(decodeLookupsHeader(h.subarray(0, h.length - 1)), null);
      const many = encodeLookupsHeader(Array.from({ length: 9 }, () => l1));
      assert.equal(decodeLookupsHeader(many)?.length, 9, 'decode grows its scratch');
      assert.throws(() => encodeLookupsHeader([{ ...l1, accountKey: Buffer.alloc(31) }]), RangeError);
    });

    it('is taken from a record only when present with a version this reader knows; the value is unchanged by it', () => {
      const h = encodeLookupsHeader([l1]);
      assert.equal(lookupsHeaderOf({ [LOOKUPS_HEADER]: h }), h);
      assert.equal(lookupsHeaderOf({}), null);
      assert.equal(lookupsHeaderOf(undefined), null);
      assert.equal(lookupsHeaderOf({ [LOOKUPS_HEADER]: Buffer.from([2, 0, 0]) }), null, 'a later version: read the message');
      const value = encodeTxRecord({ slot: 5n, observedAtMs: 1, accountKeys: Buffer.alloc(32, 1), message: Buffer.from([0x0a, 0x00]) });
      const withIt = decodeTxRecord(value, { [LOOKUPS_HEADER]: h });
      const without = decodeTxRecord(value);
      assert.ok(withIt.ok && without.ok);
      assert.equal(withIt.record.lookups, h);
      assert.equal(without.record.lookups, null);
      assert.deepEqual({ ...withIt.record, lookups: null }, without.record);
    });
  });

  describe('the v1 hub with matchV1 (the fanout reads lookups from the header)', function () {
    this.timeout(30_000);
    // One table of 4 addresses, held by a node answered from memory; a filter on its address 2 only.
    const table = testKey(900, 1);
    const addresses = [testKey(901, 1), testKey(902, 1), testKey(903, 1), testKey(904, 1)];
    const account = encodeLookupTable({ deactivationSlot: SLOT_MAX, lastExtendedSlot: 1n, lastExtendedSlotStartIndex: 0, authority: null, addresses: Buffer.concat(addresses) });
    let fetches = 0;
    const call = async <T>(method: string, params: unknown[] = []): Promise<T> => {
      assert.equal(method, 'getMultipleAccounts');
      fetches++;
      const keys = params[0] as string[];
      return { context: { slot: 1000 }, value: keys.map((k) => (k === bs58.encode(table) ? { owner: 'AddressLookupTab1e1111111111111111111111111', data: [account.toString('base64'), 'base64'] } : null)) } as T;
    };
    const opened: Array<{ lt: LookupTables; hub: Fanout }> = [];
    after(() => {
      for (const o of opened) {
        o.hub.close();
        o.lt.close();
      }
    });

    function hubWithFilter(): { hub: Fanout; lt: LookupTables; port: FakePort } {
      const cfg = testConfig({ topics, heartbeatMs: 60_000, lookupTables: { rpcUrl: 'http://node.invalid', matchV1: true, waitMs: 10_000, confirmMs: 600_000 } });
      const lt = openLookupTables(cfg.lookupTables, call)!;
      const hub = new Fanout(cfg, wireEncoder, quietLog(), Date.now, lt);
      opened.push({ lt, hub });
      const port = new FakePort();
      const s = hub.open(port);
      assert.ok(!isStreamError(s));
      s.handle({ filters: [['t2', { include: [bs58.encode(addresses[2]!)], exclude: [], required: [] }]], pingId: undefined, newSeenSlots: undefined });
      return { hub, lt, port };
    }

    /** A v0 record: its message names `inMessage` as lookups; headers as given (none = an older ingest's). */
    function record(inMessage: LookupFields[], headers: Record<string, Buffer>): BusMessage {
      const fields: TxFields = {
        slot: 2000n,
        numRequiredSignatures: 1,
        numReadonlySignedAccounts: 0,
        numReadonlyUnsignedAccounts: 1,
        recentBlockhash: Buffer.alloc(32, 7),
        signatures: [uniqueSignature()],
        accountKeys: [testKey(1, 2), testKey(2, 2)],
        instructions: [{ programIdIndex: 1, accounts: Buffer.from([0, 2]), data: Buffer.alloc(4) }],
        addressTableLookups: inMessage,
        versioned: true,
      };
      const value = encodeTxRecord({ slot: 2000n, observedAtMs: Date.now(), accountKeys: Buffer.concat(fields.accountKeys), message: encodeTransaction(fields) });
      return { topic: topics.transactions, partition: 0, offset: '0', key: fields.signatures[0]!, value, headers, timestamp: Date.now() };
    }
    const at = (w: number[]): LookupFields[] => [{ accountKey: table, writableIndexes: Buffer.from(w), readonlyIndexes: Buffer.alloc(0) }];
    const header = (w: number[]): Record<string, Buffer> => ({ [LOOKUPS_HEADER]: encodeLookupsHeader(at(w)) });

    it('matches on what the header loads, not on what the message names, on the waiting path and the held-table path alike', async () => {
      const { hub, lt, port } = hubWithFilter();
      const feed = feedOf(hub, lt);
      // The table is not held yet: resolved through the resolver (a fetch), from the header's lookups.
      feed([record(at([0]), header([2]))]);
      await waitFor(() => port.written.length === 1, 10_000, 'the first record delivered once its table arrived');
      // Held now: matched synchronously against the table's hit list, from the header's offsets.
      feed([record(at([0]), header([2]))]);
      assert.equal(port.written.length, 2, 'the header loads address 2: delivered');
      feed([record(at([2]), header([0]))]);
      assert.equal(port.written.length, 2, 'the message names address 2, the header does not: not delivered');
      feed([record([], header([1, 2]))]);
      assert.equal(port.written.length, 3, 'a message without lookups, a header with them: delivered');
      feed([record(at([2]), { [LOOKUPS_HEADER]: encodeLookupsHeader([]) })]);
      assert.equal(port.written.length, 3, 'the header says "no lookups": the message is not read');
    });

    it('an older record (no header, or a header version it does not know) has its lookups read from the message', async () => {
      const { hub, lt, port } = hubWithFilter();
      const feed = feedOf(hub, lt);
      feed([record(at([2]), {})]);
      await waitFor(() => port.written.length === 1, 10_000, 'delivered once its table arrived');
      feed([record(at([2]), {})]);
      assert.equal(port.written.length, 2);
      feed([record(at([0]), {})]);
      assert.equal(port.written.length, 2);
      feed([record(at([2]), { [LOOKUPS_HEADER]: Buffer.from([9, 1, 0]) })]);
      assert.equal(port.written.length, 3, 'an unknown header version is ignored');
      assert.ok(fetches > 0);
    });

    it('reads the recorded fixture (records of an ingest before the header) as before', async () => {
      const records: RecordedRecord[] = [];
      for await (const r of readRecording(fileChunks(fixture('topics', 'demo-stream.mrec')))) if (r.topic === TOPIC.streamTransactions) records.push(r);
      assert.ok(records.length > 0);
      for (const r of records) {
        assert.equal(r.headers[LOOKUPS_HEADER], undefined, 'recorded before the header existed');
        const d = decodeTxRecord(r.value!, r.headers);
        assert.ok(d.ok);
        assert.equal(d.record.lookups, null);
        assert.deepEqual(recordLookups(d.record), recordLookups({ message: d.record.message, lookups: null }));
      }
      // Delivered on its static keys through a matchV1 hub, bytes as recorded.
      const first = decodeTxRecord(records[0]!.value!);
      assert.ok(first.ok);
      const cfg = testConfig({ topics, heartbeatMs: 60_000, lookupTables: { rpcUrl: 'http://node.invalid', matchV1: true, waitMs: 10_000 } });
      const lt = openLookupTables(cfg.lookupTables, call)!;
      const hub = new Fanout(cfg, wireEncoder, quietLog(), Date.now, lt);
      opened.push({ lt, hub });
      const port = new FakePort();
      const s = hub.open(port);
      assert.ok(!isStreamError(s));
      s.handle({ filters: [['k', { include: [bs58.encode(first.record.accountKeys.subarray(0, 32))], exclude: [], required: [] }]], pingId: undefined, newSeenSlots: undefined });
      const r = records[0]!;
      feedOf(hub, lt)([{ topic: topics.transactions, partition: 0, offset: '0', key: r.key, value: r.value, headers: r.headers, timestamp: Date.now() }]);
      await waitFor(() => port.written.length === 1, 10_000, 'the fixture record delivered');
      assert.ok(port.written[0]!.includes(first.record.message), 'the recorded message bytes unchanged');
    });
  });
});
