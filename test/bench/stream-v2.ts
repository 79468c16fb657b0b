import { EmbeddedBus } from '../../bus/embedded';
import type { BusMessage } from '../../bus/bus';
import { framedEncoder, wireEncoder } from '../../fanout/v1/encoder';
import { StreamFeed } from '../../fanout/stream-feed';
import { streamResources } from '../../fanout/stream-resources';
import { Fanout } from '../../fanout/v1/hub';
import { V2Hub } from '../../fanout/v2/hub';
import { TopicTag } from '../../fanout/v2/cursor';
import { encodeEntryRecord } from '../../bus/topics/stream-entries';
import { makeTx, quietLog, testConfig, testKey, testKey58, txRecord, uniqueTopics } from '../fanout/support';
import type { BenchResult } from './stats';
import { BLOCK_REF_HEADER, BlockRefSource, encodeBlockRef } from '../../bus/topics/block-ref';

// v2's server-side cost per delivered message beside v1's, in the same run, at the hub (no sockets: the transport's
// cost is the same for both and is measured by the fanout-raw bench): 200 streams with one filter each, every
// transaction matching all of them. RAW delivery (from stream.entries records, 4 transactions each) beside DECODED in
// the same loop. And replay throughput (bus → one stream, records/s) beside live delivery.

const STREAMS = 200;
const RECORDS = 5_000;

const sink = { write: (): boolean => true, once: (): undefined => undefined, end: (): void => undefined };

function cpuUs(f: () => void): number {
  const c0 = process.cpuUsage();
  f();
  const c = process.cpuUsage(c0);
  return c.user + c.system;
}

export async function benchStreamV2(): Promise<BenchResult[]> {
  const topics = uniqueTopics('bench-v2');
  const cfg = testConfig({ topics, heartbeatMs: 600_000, v2: { replayRecordsPerSec: 100_000_000 } });
  const key = testKey(1, 99);
  const txs = Array.from({ length: RECORDS }, () => makeTx({ keys: [key, testKey(2, 99)], slot: 9n }));
  const msgs: BusMessage[] = txs.map((t, i) => ({ topic: topics.transactions, partition: 0, offset: String(i), ...txRecord(t), headers: {}, timestamp: Date.now() }) as BusMessage);
  // The same records with the block each belongs to (the `blk` header ingest writes on Alpenglow blocks: v2 adds a
  // BlockRef to every Transaction, v1 de-duplicates by signature and block), one header value per 4 records.
  const msgsB: BusMessage[] = msgs.map((m, i) => ({ ...m, headers: { [BLOCK_REF_HEADER]: encodeBlockRef({ source: BlockRefSource.header, batchFirstShred: 32 * Math.floor(i / 4), parentSlot: 8n, parentBlockId: Buffer.alloc(32, 5) }) } }));
  const bus = new EmbeddedBus({ log: quietLog(), maxMessagesPerPartition: 1_000_000 });
  await bus.createTopics([
    { name: topics.transactions, partitions: 1, compacted: false },
    { name: topics.slots, partitions: 1, compacted: false },
  ]);
  const resources = streamResources(cfg);
  const v1 = new Fanout(cfg, framedEncoder(wireEncoder), quietLog(), Date.now, undefined, resources);
  const v1k = new Fanout(cfg, framedEncoder(wireEncoder), quietLog(), Date.now, undefined, resources);
  const v1kFeed = new StreamFeed(cfg.topics, cfg.dedupeWindow, v1k, undefined, undefined).onBatch;
  const v2b = new V2Hub(cfg, { bus, ...resources, log: quietLog() });
  v2b.init(new Map([[0, '0']]), new Map([[0, '0']]), new Map([[0, '0']]));
  // v1 as the server feeds it: de-duplicated and decoded by the stream feed.
  const v1Feed = new StreamFeed(cfg.topics, cfg.dedupeWindow, v1, undefined, undefined).onBatch;
  const v2 = new V2Hub(cfg, { bus, ...resources, log: quietLog() });
  v2.init(new Map([[0, '0']]), new Map([[0, '0']]), new Map([[0, '0']]));
  // The same streams with gzip negotiated, on a hub of their own: each record compressed once for all of them.
  const gz = new V2Hub(cfg, { bus, ...resources, log: quietLog() });
  gz.init(new Map([[0, '0']]), new Map([[0, '0']]), new Map([[0, '0']]));
  // RAW: the same transactions as stream.entries records, 4 per entry. The wire bodies are synthetic (the hub never
  // decodes them: it slices the static keys at the offset the record names and copies the bytes), 300 bytes each.
  const v2r = new V2Hub(cfg, { bus, ...resources, log: quietLog() });
  v2r.initEntries(new Map([[0, '0']]));
  v2r.init(new Map([[0, '0']]), new Map([[0, '0']]), new Map([[0, '0']]));
  const PER_ENTRY = 4;
  const entryMsgs: BusMessage[] = [];
  for (let i = 0; i < RECORDS; i += PER_ENTRY) {
    const group = txs.slice(i, i + PER_ENTRY);
    const value = encodeEntryRecord({
      slot: 9n, index: { entry: i / PER_ENTRY, firstTx: i }, batchFirstShred: 0, indexInBatch: i / PER_ENTRY, numHashes: 1n, hash: Buffer.alloc(32, 1), observedAtMs: Date.now(),
      signatures: Buffer.concat(group.map((t) => t.signature)),
      txs: group.map((t) => {
        const wire = Buffer.alloc(300, 7);
        t.keys.copy(wire, 68);
        return { wire, keysOffset: 68, keyCount: t.keys.length / 32 };
      }),
    });
    entryMsgs.push({ topic: topics.entries, partition: 0, offset: String(i / PER_ENTRY), key: null, value, headers: {}, timestamp: Date.now() } as BusMessage);
  }
  const spec = { include: [testKey58(1, 99)], exclude: [], required: [] };
  for (let i = 0; i < STREAMS; i++) {
    const s1 = v1.open({ ...sink });
    if ('code' in s1) throw new Error(s1.details);
    s1.handle({ filters: [['a', spec]], pingId: undefined, newSeenSlots: undefined });
    const s2 = v2.open({ ...sink }, undefined, undefined);
    if ('code' in s2) throw new Error(s2.details);
    s2.handle({ add: { id: 'a', spec: { ...spec, options: { encoding: 'default', matchLoaded: false } } } });
    s2.handle({ start: { from: undefined, lagPolicy: 'close', raw: false, slots: false } });
    const s1b = v1k.open({ ...sink });
    if ('code' in s1b) throw new Error(s1b.details);
    s1b.handle({ filters: [['a', spec]], pingId: undefined, newSeenSlots: undefined });
    const s2b = v2b.open({ ...sink }, undefined, undefined);
    if ('code' in s2b) throw new Error(s2b.details);
    s2b.handle({ add: { id: 'a', spec: { ...spec, options: { encoding: 'default', matchLoaded: false } } } });
    s2b.handle({ start: { from: undefined, lagPolicy: 'close', raw: false, slots: false } });
    const s3 = gz.open({ ...sink }, undefined, undefined, 'gzip');
    if ('code' in s3) throw new Error(s3.details);
    s3.handle({ add: { id: 'a', spec: { ...spec, options: { encoding: 'default', matchLoaded: false } } } });
    s3.handle({ start: { from: undefined, lagPolicy: 'close', raw: false, slots: false } });
    const s4 = v2r.open({ ...sink }, undefined, undefined);
    if ('code' in s4) throw new Error(s4.details);
    s4.handle({ add: { id: 'a', spec: { ...spec, options: { encoding: 'raw', matchLoaded: false } } } });
    s4.handle({ start: { from: undefined, lagPolicy: 'close', raw: false, slots: false } });
  }
  // Warm-up on the first fifth, measure on the rest, v1 and v2 interleaved per chunk.
  const warm = RECORDS / 5;
  v1Feed(msgs.slice(0, warm));
  for (const m of msgs.slice(0, warm)) v2.onTransaction(m);
  for (const m of msgs.slice(0, warm)) gz.onTransaction(m);
  for (const m of msgsB.slice(0, warm)) v2b.onTransaction(m);
  v1kFeed(msgsB.slice(0, warm));
  for (const m of entryMsgs.slice(0, warm / PER_ENTRY)) v2r.onEntry(m);
  let us1 = 0;
  let us2 = 0;
  let us3 = 0;
  let us4 = 0;
  let us5 = 0;
  let us6 = 0;
  for (let i = warm; i < RECORDS; i += 500) {
    const chunk = msgs.slice(i, i + 500);
    us1 += cpuUs(() => v1Feed(chunk));
    us2 += cpuUs(() => {
      for (const m of chunk) v2.onTransaction(m);
    });
    us3 += cpuUs(() => {
      for (const m of chunk) gz.onTransaction(m);
    });
    const bchunk = msgsB.slice(i, i + 500);
    us5 += cpuUs(() => {
      for (const m of bchunk) v2b.onTransaction(m);
    });
    us6 += cpuUs(() => v1kFeed(bchunk));
    const echunk = entryMsgs.slice(i / PER_ENTRY, (i + 500) / PER_ENTRY);
    us4 += cpuUs(() => {
      for (const m of echunk) v2r.onEntry(m);
    });
  }
  const delivered = (RECORDS - warm) * STREAMS;
  const results: BenchResult[] = [
    {
      bench: 'stream-v2',
      case: `hub CPU per delivered message, ${STREAMS} streams, every transaction matching all`,
      figures: { v2_us: +(us2 / delivered).toFixed(3), v1_us: +(us1 / delivered).toFixed(3), ratio: +(us2 / us1).toFixed(2) },
      note: 'v1 shares one encoded response between streams with the same filter names; v2 copies the shared part behind a per-stream seq',
    },
    {
      bench: 'stream-v2',
      case: `the same ${STREAMS} streams with gzip negotiated (hub CPU per delivered message)`,
      figures: { gzip_us: +(us3 / delivered).toFixed(3), v2_us: +(us2 / delivered).toFixed(3), compressions_per_record: +(gz.compression.counts.compressed / RECORDS).toFixed(3), bytes_ratio: +(gz.compression.counts.outBytes / gz.compression.counts.inBytes).toFixed(3) },
      note: 'each record\'s shared part is deflated once for all streams; a stream adds a copy of the compressed part and a CRC over its filter ids and seq',
    },
    {
      bench: 'stream-v2',
      case: `hub CPU per delivered RAW transaction (stream.entries, ${PER_ENTRY} per entry), ${STREAMS} streams, all matching`,
      figures: { v2_raw_us: +(us4 / delivered).toFixed(3), v2_decoded_us: +(us2 / delivered).toFixed(3), ratio: +(us4 / us2).toFixed(2) },
      note: 'RAW updates of one entry but its last carry the cursor before the record: two shared parts per transaction at most',
    },
    {
      bench: 'stream-v2',
      case: `block ids: hub CPU per delivered message with each record's block (blk header) beside without, ${STREAMS} streams`,
      figures: { v2_with_block_us: +(us5 / delivered).toFixed(3), v2_us: +(us2 / delivered).toFixed(3), v2_ratio: +(us5 / us2).toFixed(3), v1_with_block_us: +(us6 / delivered).toFixed(3), v1_us: +(us1 / delivered).toFixed(3), v1_ratio: +(us6 / us1).toFixed(3) },
      note: 'v2: one BlockRef encoded into each record\'s shared part (per record, not per stream); v1: the dedupe key grows from the signature to signature ‖ slot ‖ batch first shred',
    },
  ];
  gz.close();
  v1k.close();
  v2b.close();
  // Replay: the same records on the bus, one stream replaying them from offset 0, beside live delivery to one stream.
  await bus.produce(topics.transactions, txs.map((t) => txRecord(t)));
  v1.close();
  v2.close();
  v2r.close();
  const v1b = new Fanout(cfg, framedEncoder(wireEncoder), quietLog(), Date.now, undefined, resources);
  const hub = new V2Hub(cfg, { bus, ...resources, log: quietLog() });
  hub.init(new Map([[0, String(RECORDS)]]), new Map([[0, '0']]), new Map([[0, '0']]));
  await hub.initLogs();
  let written = 0;
  let done: () => void = () => undefined;
  const finished = new Promise<void>((r) => (done = r));
  // A message may come as a head and its shared body (Sink): heads start with the gRPC flag (0 or 1), bodies with a
  // protobuf tag, never 0 or 1.
  const port = { write: (b: Buffer): boolean => (b[0]! <= 1 && ++written === RECORDS + 2 ? (done(), true) : true), once: (): undefined => undefined, end: (): void => undefined };
  const s = hub.open(port, undefined, undefined);
  if ('code' in s) throw new Error(s.details);
  s.handle({ add: { id: 'a', spec: { ...spec, options: { encoding: 'default', matchLoaded: false } } } });
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  s.handle({ start: { from: { cursor: hub.cursorOf(new Map([[TopicTag.transactions, [0]], [TopicTag.slots, [0]]])) }, lagPolicy: 'close', raw: false, slots: false } });
  await finished; // the ack, RECORDS transactions, ReplayComplete
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  results.push({
    bench: 'stream-v2',
    case: 'replay from the embedded bus to one stream (rate cap lifted)',
    figures: { replay_msgs_per_s: Math.round(RECORDS / (ms / 1000)), replay_us_per_msg: +((cpu.user + cpu.system) / RECORDS).toFixed(2), live_us_per_msg_200_streams: +(us2 / delivered).toFixed(3) },
    note: `default cap fanout.v2.replayRecordsPerSec = 100,000 per stream; the replay waits whenever the stream queue holds 512 messages (or half its bound)`,
  });
  hub.close();
  v1b.close();
  await bus.close();
  return results;
}
