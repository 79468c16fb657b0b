import assert from 'node:assert/strict';
import fc from 'fast-check';
import { EmbeddedBus } from '../../bus/embedded';
import { MAX_FRAME_BODY_SZ, RecordingDecoder, RecordingError, encodeEnd, encodeHeader, encodeRecord, frameBodySize, type RecordedRecord, type RecordingMeta } from '../../bus/recording';
import { loadRecords, type RecordSink } from '../../bus/topic-load';
import { parseRangePoint, readRange } from '../../bus/topic-range';
import type { ProduceRecord } from '../../bus/bus';

// The recording format (bus/recording.ts) on its own: every field round-trips whatever the chunking, every damaged
// byte is caught by a checksum or a length check (a RecordingError, never another exception or a silent pass),
// hostile lengths are refused before anything is allocated; recorded pace waits by the recorded gaps; range
// bounds parse as documented.

const META: RecordingMeta = { topics: [{ name: 'a', partitions: 3 }, { name: 'b', partitions: 1 }], source: { bus: 'embedded', recordedAt: '2026-11-25T14:00:00.000Z' } };

const recordArb = fc.record({
  topic: fc.constantFrom('a', 'b'),
  partition: fc.nat(2),
  offset: fc.bigInt({ min: 0n, max: (1n << 63n) - 1n }).map(String),
  timestamp: fc.integer({ min: 0, max: 4_102_444_800_000 }),
  key: fc.option(fc.uint8Array({ maxLength: 80 }).map((u) => Buffer.from(u))),
  value: fc.option(fc.uint8Array({ maxLength: 600 }).map((u) => Buffer.from(u))),
  headers: fc.dictionary(fc.string({ maxLength: 12 }), fc.uint8Array({ maxLength: 20 }).map((u) => Buffer.from(u)), { maxKeys: 4 }),
}).map((r): RecordedRecord => ({ ...r, partition: r.topic === 'b' ? 0 : r.partition }));

function file(records: RecordedRecord[], meta = META): Buffer {
  const frames = records.map((r) => encodeRecord(meta.topics.findIndex((t) => t.name === r.topic), r));
  return Buffer.concat([encodeHeader(meta), ...frames, encodeEnd({ records: frames.length, bodyBytes: frames.reduce((n, f) => n + frameBodySize(f), 0) })]);
}

/** Decodes `bytes` pushed in the given chunk sizes; throws what the decoder throws. */
function decode(bytes: Buffer, chunk = bytes.length): { meta: RecordingMeta | null; records: RecordedRecord[] } {
  const d = new RecordingDecoder();
  const records: RecordedRecord[] = [];
  for (let i = 0; i < bytes.length; i += chunk) {
    d.push(bytes.subarray(i, i + chunk));
    for (let it = d.take(); it !== null; it = d.take()) if (it.kind === 'record') records.push(it.record);
  }
  d.finish();
  return { meta: d.header, records };
}

const plain = (r: RecordedRecord): unknown => ({ ...r, key: r.key?.toString('hex') ?? null, value: r.value?.toString('hex') ?? null, headers: Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, v.toString('hex')])) });

describe('topic recording format', () => {
  it('round-trips every field of any records, however the bytes are chunked', () => {
    fc.assert(
      fc.property(fc.array(recordArb, { maxLength: 20 }), fc.integer({ min: 1, max: 97 }), (records, chunk) => {
        const got = decode(file(records), chunk);
        assert.deepEqual(got.meta, META);
        assert.equal(got.records.length, records.length);
        assert.deepEqual(got.records.map(plain), records.map(plain));
      }),
      { numRuns: 200 },
    );
  });

  it('keeps null apart from empty: a null key, a tombstone, empty bytes', () => {
    const r: RecordedRecord[] = [
      { topic: 'a', partition: 0, offset: '0', timestamp: 1, key: null, value: null, headers: {} },
      { topic: 'a', partition: 1, offset: '1', timestamp: 2, key: Buffer.alloc(0), value: Buffer.alloc(0), headers: { '': Buffer.alloc(0) } },
    ];
    const got = decode(file(r)).records;
    assert.equal(got.length, 2);
    assert.equal(got[0]!.key, null);
    assert.equal(got[0]!.value, null);
    assert.deepEqual([got[1]!.key, got[1]!.value, got[1]!.headers['']], [Buffer.alloc(0), Buffer.alloc(0), Buffer.alloc(0)]);
  });

  it('catches a flipped bit at every byte of a file with a RecordingError', () => {
    const bytes = file([
      { topic: 'a', partition: 2, offset: '17', timestamp: 1764079200000, key: Buffer.from('k'), value: Buffer.from([1, 2, 3]), headers: { h: Buffer.from('v') } },
      { topic: 'b', partition: 0, offset: '3', timestamp: 1764079200001, key: null, value: null, headers: {} },
    ]);
    let caught = 0;
    for (let i = 0; i < bytes.length; i++) {
      for (const bit of [0x01, 0x80]) {
        const bad = Buffer.from(bytes);
        bad[i] = bad[i]! ^ bit;
        assert.throws(() => decode(bad, 7), RecordingError, `byte ${i} bit ${bit}`);
        caught++;
      }
    }
    assert.equal(caught, bytes.length * 2);
  });

  it('refuses a file cut anywhere, and bytes after the end', () => {
    const bytes = file([{ topic: 'a', partition: 0, offset: '0', timestamp: 5, key: Buffer.from('k'), value: Buffer.from('v'), headers: {} }]);
    for (let n = 0; n < bytes.length; n++) assert.throws(() => decode(bytes.subarray(0, n)), RecordingError, `cut at ${n}`);
    assert.throws(() => decode(bytes.subarray(0, bytes.length - 25)), /truncated after 1 records: no end frame/);
    assert.throws(() => decode(Buffer.alloc(0)), /empty file/);
    assert.throws(() => decode(Buffer.concat([bytes, Buffer.from([0])])), /bytes after the end frame/);
  });

  it('refuses hostile lengths before allocating, and unknown versions', () => {
    const header = encodeHeader(META);
    const frame = Buffer.alloc(9);
    frame[0] = 1;
    frame.writeUInt32LE(MAX_FRAME_BODY_SZ + 1, 1);
    const d = new RecordingDecoder();
    d.push(Buffer.concat([header, frame]));
    assert.equal(d.take()?.kind, 'header');
    assert.throws(() => d.take(), /claims \d+ bytes, over the limit/);
    const v2 = Buffer.from(header);
    v2.writeUInt16LE(2, 8);
    assert.throws(() => decode(v2), /format version 2; this build reads version 1/);
    const meta = Buffer.from(header);
    meta.writeUInt32LE(0xffffffff, 12);
    assert.throws(() => decode(meta), /header meta claims/);
  });
});

describe('replay pace', () => {
  const rec = (ts: number, topic = 'a'): RecordedRecord => ({ topic, partition: 0, offset: '0', timestamp: ts, key: null, value: Buffer.from(String(ts)), headers: {} });
  async function* of(rs: RecordedRecord[]): AsyncGenerator<RecordedRecord> {
    yield* rs;
  }

  it('recorded: waits out each recorded gap before the records due then; fast: never waits', async () => {
    for (const pace of ['recorded', 'fast'] as const) {
      let clock = 1_000;
      const sleeps: number[] = [];
      const sent: Array<{ at: number; topic: string; values: string[] }> = [];
      const sink: RecordSink = { produce: async (topic: string, rs: ProduceRecord[]) => void sent.push({ at: clock, topic, values: rs.map((r) => r.value!.toString()) }) };
      const r = await loadRecords(of([rec(100), rec(101), rec(600), rec(600, 'b'), rec(2100)]), sink, {
        pace,
        now: () => clock,
        sleep: async (ms) => {
          sleeps.push(ms);
          clock += ms;
        },
      });
      assert.equal(r.records, 5);
      if (pace === 'fast') {
        assert.deepEqual(sleeps, []);
        assert.deepEqual(sent.map((s) => s.values), [['100', '101', '600'], ['600'], ['2100']]);
      } else {
        assert.deepEqual(sleeps, [500, 1500]);
        assert.deepEqual(sent, [
          { at: 1_000, topic: 'a', values: ['100', '101'] },
          { at: 1_500, topic: 'a', values: ['600'] },
          { at: 1_500, topic: 'b', values: ['600'] },
          { at: 3_000, topic: 'a', values: ['2100'] },
        ]);
      }
    }
  });
});

describe('record ranges', () => {
  it('parses offsets, relative times and ISO-8601 with a zone; refuses a zoneless date-time', () => {
    const now = Date.parse('2026-11-25T14:00:00Z');
    assert.deepEqual(parseRangePoint('42', now), { kind: 'offset', offset: 42n });
    assert.deepEqual(parseRangePoint('now', now), { kind: 'time', ms: now });
    assert.deepEqual(parseRangePoint('now-30s', now), { kind: 'time', ms: now - 30_000 });
    assert.deepEqual(parseRangePoint('now+2m', now), { kind: 'time', ms: now + 120_000 });
    assert.deepEqual(parseRangePoint('2026-11-25T13:00:00.5+01:00', now), { kind: 'time', ms: now - 2 * 3_600_000 + 500 });
    assert.equal(parseRangePoint('2026-11-25T14:00:00', now), null);
    assert.equal(parseRangePoint('yesterday', now), null);
    assert.equal(parseRangePoint('-5', now), null);
  });

  it('ends by itself on a partition whose every record retention dropped (start = end)', async () => {
    const bus = new EmbeddedBus({ maxMessagesPerPartition: 2 });
    try {
      await bus.createTopics([{ name: 't', partitions: 2, compacted: false }]);
      // Partition 0 keeps its last 2 of 5 records; partition 1 never had any.
      await bus.produce('t', Array.from({ length: 5 }, (_, i) => ({ key: null, value: Buffer.from(`v${i}`), partition: 0 })));
      const got: string[] = [];
      const r = await readRange(bus, { topics: ['t'], onRecords: (ms) => void got.push(...ms.map((m) => `${m.partition}:${m.offset}`)) });
      assert.deepEqual(got, ['0:3', '0:4']);
      assert.deepEqual([r.records, r.aborted, [...r.partitions]], [2, false, [['t', 2]]]);
    } finally {
      await bus.close();
    }
  });
});
