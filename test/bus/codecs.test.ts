import fc from 'fast-check';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { decodeRental, encodeRental, parseRental, rentalTombstone, type Rental } from '../../bus/topics/rentals';
import { decodeSlotRecord, encodeSlotRecord, slotKey, SLOT_RECORD_SZ, SLOT_RECORD_VERSION } from '../../bus/topics/stream-slots';
import { decodeTxRecord, encodeTxRecord, PUBKEY_SZ, TX_RECORD_HEADER_SZ, TX_RECORD_VERSION, type TxRecordValue } from '../../bus/topics/stream-transactions';
import { decodeUsageEvent, encodeUsageEvent, newUsageEvent, type UsageEvent } from '../../bus/topics/usage-events';

describe('topic codecs', () => {
  describe('stream.transactions', () => {
    const record: TxRecordValue = { slot: 385_970_984n, observedAtMs: 1_717_000_000_123.5, accountKeys: randomBytes(3 * PUBKEY_SZ), message: randomBytes(200) };

    it('round-trips, with views into the value rather than copies', () => {
      const value = encodeTxRecord(record);
      assert.equal(value.length, TX_RECORD_HEADER_SZ + 3 * PUBKEY_SZ + 200);
      const d = decodeTxRecord(value);
      assert.ok(d.ok, d.ok ? '' : d.reason);
      assert.equal(d.record.slot, record.slot);
      assert.equal(d.record.observedAtMs, record.observedAtMs);
      assert.deepEqual(d.record.accountKeys, record.accountKeys);
      assert.deepEqual(d.record.message, record.message);
      assert.equal(d.record.message.buffer, value.buffer, 'message should be a subarray of the value');
    });

    it('pins the header layout (golden bytes)', () => {
      const value = encodeTxRecord({ slot: 0x0102030405060708n, observedAtMs: 1, accountKeys: Buffer.alloc(PUBKEY_SZ, 0xaa), message: Buffer.from([0xee]) });
      assert.equal(
        value.subarray(0, TX_RECORD_HEADER_SZ).toString('hex'),
        '01' + '00' + '0100' + '000000000000f03f' + '0807060504030201',
      );
      assert.equal(value.length, TX_RECORD_HEADER_SZ + PUBKEY_SZ + 1);
    });

    it('accepts zero keys and an empty message', () => {
      const d = decodeTxRecord(encodeTxRecord({ slot: 1n, observedAtMs: 0, accountKeys: Buffer.alloc(0), message: Buffer.alloc(0) }));
      assert.ok(d.ok);
      assert.equal(d.record.accountKeys.length, 0);
      assert.equal(d.record.message.length, 0);
    });

    it('rejects a short header, keys past the end and an unknown version', () => {
      const value = encodeTxRecord(record);
      assert.deepEqual(decodeTxRecord(value.subarray(0, TX_RECORD_HEADER_SZ - 1)), { ok: false, reason: 'short header' });
      assert.deepEqual(decodeTxRecord(Buffer.alloc(0)), { ok: false, reason: 'short header' });
      // Header says 3 keys; cut inside the third.
      assert.deepEqual(decodeTxRecord(value.subarray(0, TX_RECORD_HEADER_SZ + 2 * PUBKEY_SZ + 5)), { ok: false, reason: 'account keys past end' });
      const many = Buffer.from(value);
      many.writeUInt16LE(0xffff, 2);
      assert.deepEqual(decodeTxRecord(many), { ok: false, reason: 'account keys past end' });
      const v2 = Buffer.from(value);
      v2[0] = TX_RECORD_VERSION + 1;
      assert.deepEqual(decodeTxRecord(v2), { ok: false, reason: `unknown version ${TX_RECORD_VERSION + 1}` });
    });

    it('refuses to encode keys that are not whole pubkeys', () => {
      assert.throws(() => encodeTxRecord({ ...record, accountKeys: Buffer.alloc(33) }), { name: 'RangeError', message: /multiple of 32/ });
      assert.throws(() => encodeTxRecord({ ...record, accountKeys: Buffer.alloc(0x10000 * PUBKEY_SZ) }), { name: 'RangeError', message: /u16 count/ });
    });
  });

  describe('stream.slots', () => {
    it('round-trips and keys sort like the slot number', () => {
      const r = { slot: 2n ** 63n + 5n, firstSeenMs: 1_717_000_000_000.25 };
      const value = encodeSlotRecord(r);
      assert.equal(value.length, SLOT_RECORD_SZ);
      assert.deepEqual(decodeSlotRecord(value), r);
      assert.equal(Buffer.compare(slotKey(255n), slotKey(256n)), -1);
      assert.equal(slotKey(0x0102n).toString('hex'), '0000000000000102');
    });

    it('rejects short values and unknown versions', () => {
      const value = encodeSlotRecord({ slot: 7n, firstSeenMs: 1 });
      assert.equal(decodeSlotRecord(value.subarray(0, SLOT_RECORD_SZ - 1)), null);
      const other = Buffer.from(value);
      other[0] = SLOT_RECORD_VERSION + 1;
      assert.equal(decodeSlotRecord(other), null);
    });
  });

  describe('usage.events', () => {
    const event = (): UsageEvent => newUsageEvent({ rental: 'r-1', surface: 'rpc', method: 'getSlot', units: 1, outcome: 'ok', time: new Date('2024-06-01T00:00:00Z') });

    it('round-trips, keyed by rental, with a unique id per event', () => {
      const e = event();
      const { key, value } = encodeUsageEvent(e);
      assert.equal(key.toString(), 'r-1');
      assert.deepEqual(decodeUsageEvent(value), e);
      assert.notEqual(event().id, e.id);
      assert.equal(e.time, '2024-06-01T00:00:00.000Z');
    });

    it('encodes exactly what JSON.stringify writes of { v: 2, ...event }, for any strings and numbers (fuzzed)', () => {
      const surfaces = ['stream', 'rpc', 'rpc-ws', 'submit', 'evm'] as const;
      const outcomes = ['ok', 'rejected', 'error', 'rate_limited'] as const;
      fc.assert(
        fc.property(
          fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), fc.constantFrom(...surfaces), fc.constantFrom(...outcomes),
          fc.oneof(fc.nat(), fc.double()), fc.option(fc.oneof(fc.nat(), fc.double()), { nil: undefined }), fc.boolean(), fc.oneof(fc.integer({ min: 1 }), fc.double()),
          (rental, method, surface, outcome, units, chain, now, calls) => {
            const e = newUsageEvent({ rental, method, surface, outcome, units, calls, ...(chain === undefined ? {} : { chain }), ...(now ? {} : { time: new Date(1_700_000_000_123) }) });
            assert.equal(encodeUsageEvent(e).value.toString('utf8'), JSON.stringify({ v: 2, ...e }));
          },
        ),
        { numRuns: 2000 },
      );
    });

    it('drops unknown fields on decode', () => {
      const e = event();
      assert.deepEqual(decodeUsageEvent(Buffer.from(JSON.stringify({ ...e, extra: 1 }))), e);
    });

    it('rejects malformed events, naming the field', () => {
      const e = event();
      const bad = (patch: Record<string, unknown>): unknown => decodeUsageEvent(Buffer.from(JSON.stringify({ ...e, ...patch })));
      const cases: Array<[unknown, string]> = [
        [decodeUsageEvent(Buffer.from('{not json')), 'not JSON'],
        [decodeUsageEvent(Buffer.from('[]')), 'id missing'],
        [decodeUsageEvent(Buffer.from('null')), 'not an object'],
        [decodeUsageEvent(Buffer.from('42')), 'not an object'],
        [bad({ id: '' }), 'id missing'],
        [bad({ time: 'yesterday' }), 'time invalid'],
        [bad({ rental: 5 }), 'rental missing'],
        [bad({ surface: 'ftp' }), 'surface invalid'],
        [bad({ method: null }), 'method missing'],
        [bad({ units: -1 }), 'units invalid'],
        [bad({ units: '3' }), 'units invalid'],
        [bad({ outcome: 'maybe' }), 'outcome invalid'],
      ];
      assert.deepEqual(cases.map(([got]) => got), cases.map(([, error]) => ({ error })));
    });
  });

  describe('rentals', () => {
    const rental: Rental = { id: 'r-7', rps: 50, tps: 5, region: 'fra', ips: ['10.0.0.1'], apiKeys: ['1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b'], tokens: ['tok'], dedicatedPaths: ['/d/x'], pps: 1000, evmIps: ['192.0.2.7'], status: 'active' };

    it('round-trips, keyed by rental id', () => {
      const { key, value } = encodeRental(rental);
      assert.equal(key.toString(), 'r-7');
      assert.deepEqual(decodeRental(value), rental);
    });

    it('decodes a tombstone as null, keyed by the id', () => {
      const t = rentalTombstone('r-7');
      assert.equal(t.key.toString(), 'r-7');
      assert.equal(t.value, null);
      assert.equal(decodeRental(t.value), null);
    });

    it('fills defaults for missing optional fields', () => {
      assert.deepEqual(parseRental({ id: 'r-min' }), { id: 'r-min', rps: 0, tps: 0, region: '', ips: [], apiKeys: [], tokens: [], dedicatedPaths: [], pps: 0, evmIps: [], status: 'active' });
    });

    it('reports parse errors instead of throwing', () => {
      const bad = (v: string): unknown => decodeRental(Buffer.from(v));
      const cases: Array<[unknown, RegExp]> = [
        [bad('{oops'), /JSON/],
        [bad('"text"'), /rental must be an object/],
        [bad('null'), /rental must be an object/],
        [bad('{"rps":1}'), /rental\.id/],
        [bad('{"id":""}'), /rental\.id/],
        [bad('{"id":"r","rps":-1}'), /^rps /],
        [bad('{"id":"r","tps":"9"}'), /^tps /],
        [bad('{"id":"r","ips":"10.0.0.1"}'), /^ips /],
        [bad('{"id":"r","apiKeys":[1]}'), /^apiKeys /],
        [bad('{"id":"r","pps":1e999}'), /^pps /],
      ];
      const messages = cases.map(([got]) => (typeof got === 'object' && got !== null && 'error' in got ? String(got.error) : `not an error: ${JSON.stringify(got)}`));
      assert.equal(messages.length, cases.length);
      assert.deepEqual(messages.map((m, i) => cases[i]![1].test(m)), cases.map(() => true), messages.join('\n'));
    });
  });
});
