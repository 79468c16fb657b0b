import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { EmbeddedBus } from '../../bus/embedded';
import { encodeBlockMarker } from '../../ingest/entry/block-component';
import { encodeEntryBatch } from '../../ingest/entry/entries';
import { Pipeline, nowMs, type PipelineStats } from '../../ingest/pipeline';
import { DEFAULT_TOPICS, publishSink } from '../../ingest/publish-sink';
import { Publisher } from '../../ingest/publisher';
import { publicKeyFromSeed, verifyEd25519 } from '../../ingest/shred/ed25519';
import { fixedLeader } from '../../ingest/shred/leader-keys';
import { buildLevels, leafHash } from '../../ingest/shred/merkle';
import { isShredView, parseShred } from '../../ingest/shred/parse';
import { shredBatch } from '../../ingest/shred/shredder';
import { decodeTransaction } from '../../proto/txn/decode';
import { createLogger } from '../../infra/base/log';
import { fixture } from '../support/paths';
import { isGood, v1Vectors } from '../support/v1-vectors';
import { formatResults, ProcessSampler, summarize, type BenchResult } from './stats';

// Ingest on one core: the whole Pipeline (parse, dedupe, Merkle proof, leader signature, Reed–Solomon,
// reassembly, entry + transaction decode, protobuf encode, record build) over a generated stream of real
// transactions (the txns fixtures) shredded and signed by the project's shredder, leader check ON.
//   throughput — pushes the whole stream in one synchronous loop: shreds/s of CPU, no waiting on anything;
//                once loss-free and once with 10% of the shreds missing (every set then needs recovery);
//   latency    — paced: one batch's shreds per event-loop turn, publishing to the embedded bus; latency =
//                completing shred pushed → that batch's produce resolved.
//   v1 mix     — the same throughput case over a stream where 30% of the transactions are v1 (the crate-made
//                vectors up to 1,232 bytes; they are smaller than the fixtures on average, so the mixed stream
//                has fewer shreds: compare shreds/s as well as txs/s), beside the legacy/v0-only stream,
//                interleaved in the same run;
//   decode     — transaction decode alone, ns per wire byte: v1 vectors beside the v0 (and legacy) fixtures;
//   alpenglow  — the same batches framed as Alpenglow blocks (Header, batches, Footer, final tick, each in sets of
//                its own; the block rules and block id run at each slot's end) beside the tower-era stream,
//                interleaved in the same run.
//   crypto floor — the same loss-free stream's verification alone, as Node does it at the least: every shred's
//                leaf hashed (sha256 of its signed bytes), each FEC set's tree nodes hashed once (63 for 64
//                leaves), one ed25519 verify of the leader's signature over each set's root; none of the
//                pipeline's bookkeeping, recovery, reassembly, decode or records. Run in rounds interleaved with
//                the loss-free case (entries on), each round giving ingest per shred ÷ floor (aim ≤ 1.45×);
//   build before — with INGEST_BASELINE=<root of another checkout, built>, that build's Pipeline and publish sink
//                run the same packets in the same rounds (this, base, floor, …), so both ratios come from one run.
// BENCH_SLOTS scales the stream (default 60 slots × 4 batches ≈ 32k shreds, 500 sets, 18k transactions);
// INGEST_ROUNDS the interleaved rounds (default 5); INGEST_FLOOR_ONLY=1 runs the floor rounds alone.
const BASELINE = process.env.INGEST_BASELINE;
const ROUNDS = Number(process.env.INGEST_ROUNDS ?? 5);

const SLOTS = Number(process.env.BENCH_SLOTS ?? 60);
const BATCHES_PER_SLOT = 4;
const FIRST_SLOT = 300_000_000;
const SHRED_VERSION = 50093;
const LOSS = 0.1;

interface Stream {
  packets: Buffer[];
  /** Index into packets where each batch starts (for pacing by batch). */
  batchStarts: number[];
  transactions: number;
  sets: number;
}

/** mulberry32: the same stream and the same losses every run. */
function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function fixtureTxs(): Buffer[] {
  const dir = fixture('txns');
  return fs
    .readdirSync(dir)
    .map((n) => fs.readFileSync(`${dir}/${n}`))
    .filter((b) => decodeTransaction(b, 0n).ok);
}

/** Valid v1 vectors of at most 1,232 bytes (the legacy/v0 size range). */
function v1Txs(): Buffer[] {
  return v1Vectors()
    .transactions.filter((t) => isGood(t) && t.expected.version === 1 && t.hex.length / 2 <= 1232)
    .map((t) => Buffer.from(t.hex, 'hex'));
}

/**
 * `shape` 'real': each block as its era makes it — tower-era with its 64 ticks (12,500 hashes) among the entries,
 * Alpenglow with entries of one hash and no tick but the final one — over `batchesPerSlot` batches a slot.
 */
function makeStream(seed: Buffer, v1Share = 0, alpenglow = false, batchesPerSlot = BATCHES_PER_SLOT, shape: 'bench' | 'real' = 'bench'): Stream {
  const slots = Math.max(1, Math.round((SLOTS * BATCHES_PER_SLOT) / batchesPerSlot));
  const txs = fixtureTxs();
  const v1 = v1Txs();
  const pick = (rand: () => number): Buffer => (rand() < v1Share ? v1[Math.floor(rand() * v1.length)]! : txs[Math.floor(rand() * txs.length)]!);
  const rand = rng(7);
  const out: Stream = { packets: [], batchStarts: [], transactions: 0, sets: 0 };
  let chainedRoot: Buffer = Buffer.alloc(32);
  for (let s = 0; s < slots; s++) {
    let fec = 0;
    let ticks = 0;
    const component = (bytes: Buffer, lastInSlot: boolean): void => {
      const r = shredBatch(bytes, { slot: FIRST_SLOT + s, parentOffset: 1, shredVersion: SHRED_VERSION, fecSetIndexStart: fec, chainedRoot, leaderSeed32: seed, lastInSlot });
      out.batchStarts.push(out.packets.length);
      out.packets.push(...r.shreds);
      out.sets += r.merkleRoots.length;
      chainedRoot = r.merkleRoots[r.merkleRoots.length - 1]!;
      fec = r.nextFecSetIndex;
    };
    if (alpenglow) component(encodeBlockMarker({ kind: 'header', byteLen: 0, parentSlot: BigInt(FIRST_SLOT + s - 1), parentBlockId: Buffer.alloc(32, 1) }), false);
    for (let b = 0; b < batchesPerSlot; b++) {
      // 20–80 entries of 0–3 transactions: one to three sets per batch, like a busy mainnet slot's batches.
      const entries = Array.from({ length: 20 + Math.floor(rand() * 60) }, () => ({
        numHashes: shape === 'real' && alpenglow ? 1n : 12_500n,
        hash: crypto.createHash('sha256').update(String(rand())).digest(),
        // 'real': every entry with transactions (an entry without any is a tick, and each era has its own ticks).
        txs: Array.from({ length: shape === 'real' ? 1 + Math.floor(rand() * 3) : Math.floor(rand() * 4) }, () => pick(rand)),
      }));
      if (shape === 'real' && !alpenglow) {
        // The slot's 64 ticks spread over its batches, the last batch ending with the last tick.
        const due = Math.round(((b + 1) * 64) / batchesPerSlot);
        for (; ticks < due; ticks++) entries.splice(Math.floor(((ticks % 3) + 1) * (entries.length / 4)), 0, { numHashes: 12_500n, hash: crypto.createHash('sha256').update(`t${s}.${ticks}`).digest(), txs: [] });
        if (b === batchesPerSlot - 1) entries.push({ numHashes: 12_500n, hash: Buffer.alloc(32, 4), txs: [] });
      }
      out.transactions += entries.reduce((n, e) => n + e.txs.length, 0);
      component(encodeEntryBatch(entries), !alpenglow && b === batchesPerSlot - 1);
    }
    if (alpenglow) {
      component(encodeBlockMarker({ kind: 'footer', byteLen: 0, bankHash: Buffer.alloc(32, 2), producerTimeNanos: 1n, userAgent: Buffer.from('bench'), finalCert: null, skipRewardCert: null, notarRewardCert: null }), false);
      component(encodeEntryBatch([{ numHashes: 1n, hash: Buffer.alloc(32, 3), txs: [] }]), true);
    }
  }
  return out;
}

function pipelineFor(leader: Buffer, sink: ConstructorParameters<typeof Pipeline>[0]['sink']): Pipeline {
  return new Pipeline({ shredVersion: SHRED_VERSION, leaders: fixedLeader(leader), slotWindow: 512, sink });
}

/** What the throughput case needs of a build: this one's modules, or another checkout's (INGEST_BASELINE). */
interface IngestBuild {
  name: string;
  Pipeline: typeof Pipeline;
  publishSink: typeof publishSink;
  fixedLeader: typeof fixedLeader;
  topics: typeof DEFAULT_TOPICS;
}

const THIS_BUILD: IngestBuild = { name: 'this', Pipeline, publishSink, fixedLeader, topics: DEFAULT_TOPICS };

/** Another built checkout's ingest modules, loaded beside this build's (their own module instances). */
function baselineBuild(root: string): IngestBuild {
  const dist = path.join(path.resolve(root), 'dist');
  const req = (m: string): Record<string, unknown> => require(path.join(dist, m)) as Record<string, unknown>;
  const pl = req('ingest/pipeline');
  const ps = req('ingest/publish-sink');
  const lk = req('ingest/shred/leader-keys');
  return { name: 'base', Pipeline: pl.Pipeline as typeof Pipeline, publishSink: ps.publishSink as typeof publishSink, fixedLeader: lk.fixedLeader as typeof fixedLeader, topics: ps.DEFAULT_TOPICS as typeof DEFAULT_TOPICS };
}

/** The stream's sets as the floor takes them (parsed beforehand: parsing is not crypto). */
interface FloorSet {
  shreds: Array<{ buf: Buffer; proofOff: number; leafIndex: number }>;
  signature: Buffer;
}

function floorSets(stream: Stream): FloorSet[] {
  const sets = new Map<string, FloorSet>();
  for (const pk of stream.packets) {
    const v = parseShred(pk, SHRED_VERSION);
    if (!isShredView(v)) throw new Error(`bench shred does not parse: ${v}`);
    const id = `${v.slot}/${v.fecSetIndex}`;
    let set = sets.get(id);
    if (set === undefined) sets.set(id, (set = { shreds: [], signature: v.buf.subarray(0, 64) }));
    set.shreds.push({ buf: v.buf, proofOff: v.layout.proofOff, leafIndex: v.leafIndex });
  }
  return [...sets.values()];
}

/** µs of CPU per shred for the verification alone (see the header). */
function cryptoFloor(sets: FloorSet[], shreds: number, leader: Buffer): number {
  const leaves = new Array<Buffer>(64);
  const c0 = process.cpuUsage();
  for (const set of sets) {
    for (const x of set.shreds) leaves[x.leafIndex] = leafHash(x.buf, x.proofOff);
    const levels = buildLevels(leaves);
    if (!verifyEd25519(leader, levels[levels.length - 1]![0]!, set.signature)) throw new Error('floor: a set root does not verify');
  }
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / shreds;
}

function checkComplete(s: PipelineStats, stream: Stream, what: string): void {
  if (s.transactions !== stream.transactions || s.setsCompleted !== stream.sets) {
    throw new Error(`${what}: decoded ${s.transactions}/${stream.transactions} transactions, ${s.setsCompleted}/${stream.sets} sets`);
  }
}

/** `entries` false: the sink publishes no stream.entries records (the cost they add, as a same-run reference). */
function throughput(name: string, stream: Stream, leader: Buffer, loss: number, entries = true, build: IngestBuild = THIS_BUILD): BenchResult {
  const rand = rng(11);
  const packets = loss === 0 ? stream.packets : stream.packets.filter(() => rand() >= loss);
  let records = 0;
  // The sink builds the records (encode included) and drops them: this case measures the CPU side only.
  let entryRecords = 0;
  const sink = build.publishSink(
    {
      offer: (item) => {
        if (item.topic === build.topics.transactions) records += item.records.length;
        else if (item.topic === build.topics.entries) entryRecords += item.records.length;
        return true;
      },
    },
    entries ? {} : { topics: { transactions: build.topics.transactions, slots: build.topics.slots } },
  );
  const p = new build.Pipeline({ shredVersion: SHRED_VERSION, leaders: build.fixedLeader(leader), slotWindow: 512, sink });
  const sampler = new ProcessSampler().start();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (const pk of packets) p.push(pk, t0);
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  const usage = sampler.stop();
  const s = p.stats();
  checkComplete(s, stream, name);
  if (records !== stream.transactions) throw new Error(`${name}: ${records} records for ${stream.transactions} transactions`);
  return {
    bench: 'ingest',
    case: name,
    figures: {
      shreds: packets.length,
      shreds_per_s: packets.length / (ms / 1000),
      sets_per_s: s.setsCompleted / (ms / 1000),
      txs_per_s: s.transactions / (ms / 1000),
      us_per_shred: (ms * 1000) / packets.length,
      cpu_us_per_shred: (cpu.user + cpu.system) / packets.length,
      entry_records: entryRecords,
      recovered_sets: s.setsRecovered,
      cpu_pct: usage.cpuPct,
      heap_peak_mb: usage.heapPeakMb,
    },
  };
}

async function latency(stream: Stream, leader: Buffer): Promise<BenchResult> {
  const bus = new EmbeddedBus({ log: createLogger({ level: 'warn', destination: new Writable({ write: (_c, _e, cb) => cb() }) }) });
  const topics = { transactions: 'bench.ingest.transactions', slots: 'bench.ingest.slots' };
  await bus.createTopics([
    { name: topics.transactions, partitions: 1, compacted: false },
    { name: topics.slots, partitions: 1, compacted: false },
  ]);
  const samples: number[] = [];
  const publisher = new Publisher(bus, { maxItems: 4096 });
  const p = pipelineFor(leader, publishSink(publisher, { topics, onLatency: (ms) => samples.push(ms) }));
  const starts = [...stream.batchStarts, stream.packets.length];
  const t0 = performance.now();
  for (let b = 0; b + 1 < starts.length; b++) {
    for (let i = starts[b]!; i < starts[b + 1]!; i++) p.push(stream.packets[i]!, nowMs());
    await new Promise((r) => setImmediate(r)); // let the produce of this batch resolve, as the UDP drain would
  }
  await publisher.idle();
  const ms = performance.now() - t0;
  checkComplete(p.stats(), stream, 'latency');
  await bus.close();
  const l = summarize(samples);
  return {
    bench: 'ingest',
    case: 'latency: completing shred → produce resolved (embedded bus, paced by batch)',
    figures: { batches: l.count, shreds_per_s: stream.packets.length / (ms / 1000), p50_ms: l.p50, p99_ms: l.p99, max_ms: l.max },
  };
}

/** ns per wire byte of decodeTransaction over `txs`, best of 5 rounds of `rounds` passes. */
function decodeCost(txs: Buffer[], rounds: number): { nsPerByte: number; nsPerTx: number; bytes: number } {
  const bytes = txs.reduce((n, t) => n + t.length, 0);
  let best = Infinity;
  for (let k = 0; k < 5; k++) {
    const t0 = process.hrtime.bigint();
    for (let r = 0; r < rounds; r++) for (const t of txs) if (!decodeTransaction(t, 0n).ok) throw new Error('bench tx does not decode');
    const ns = Number(process.hrtime.bigint() - t0);
    if (ns < best) best = ns;
  }
  return { nsPerByte: best / (rounds * bytes), nsPerTx: best / (rounds * txs.length), bytes: bytes / txs.length };
}

function decodeBench(): BenchResult[] {
  const fx = fixtureTxs();
  const v0 = fx.filter((t) => decodeTransaction(t, 0n).ok && (decodeTransaction(t, 0n) as { version: unknown }).version === 0);
  const legacy = fx.filter((t) => !v0.includes(t));
  const v1 = v1Txs();
  const v1big = v1Vectors().transactions.filter((t) => isGood(t) && t.hex.length / 2 === 4096).map((t) => Buffer.from(t.hex, 'hex'));
  const rows: Array<[string, Buffer[]]> = [['v0 (fixtures, reference)', v0], ['legacy (fixtures)', legacy], ['v1 (vectors ≤ 1,232 B)', v1], ['v1 (4,096-byte vectors)', v1big]];
  for (const [, t] of rows) decodeCost(t, 200); // warm-up
  return rows.map(([name, t]) => {
    const c = decodeCost(t, 2000);
    return { bench: 'ingest', case: `decode: ${name}`, figures: { ns_per_byte: c.nsPerByte, ns_per_tx: c.nsPerTx, mean_tx_bytes: c.bytes, txs: t.length } };
  });
}

export async function benchIngest(): Promise<BenchResult[]> {
  const seed = crypto.createHash('sha256').update('meridian bench leader').digest();
  const leader = publicKeyFromSeed(seed);
  const stream = makeStream(seed);
  if (process.env.INGEST_FLOOR_ONLY === '1') return floorRounds(stream, leader);
  // Warm the JIT on a throwaway pass so the first measured case is not the one paying for it.
  throughput('warm-up', stream, leader, 0);
  const results = [
    throughput('throughput: loss-free', stream, leader, 0),
    throughput('throughput: loss-free, no stream.entries records (reference)', stream, leader, 0, false),
    throughput(`throughput: ${LOSS * 100}% of shreds missing`, stream, leader, LOSS),
    await latency(stream, leader),
  ];
  results[0]!.note = `${stream.packets.length} shreds, ${stream.sets} FEC sets, ${SLOTS * BATCHES_PER_SLOT} batches, ${stream.transactions} transactions; one core, leader check on`;
  // 30% v1 beside legacy/v0 only: same shapes and seed, interleaved (A B A B) so machine noise hits both.
  const mixed = makeStream(seed, 0.3);
  throughput('warm-up', mixed, leader, 0);
  const pairs: BenchResult[] = [];
  for (let i = 0; i < 2; i++) {
    pairs.push(throughput(`throughput: legacy/v0 only (reference, pass ${i + 1})`, stream, leader, 0));
    pairs.push(throughput(`throughput: 30% v1 (pass ${i + 1})`, mixed, leader, 0));
  }
  const best = (re: RegExp): number => Math.max(...pairs.filter((r) => re.test(r.case)).map((r) => Number(r.figures.txs_per_s)));
  const bestShreds = (re: RegExp): number => Math.max(...pairs.filter((r) => re.test(r.case)).map((r) => Number(r.figures.shreds_per_s)));
  const ratio = best(/30% v1/) / best(/legacy\/v0 only/);
  const shredRatio = bestShreds(/30% v1/) / bestShreds(/legacy\/v0 only/);
  pairs[1]!.note = `${mixed.transactions} transactions (${mixed.packets.length} shreds) with 30% v1; best-of-2 ratios v1-mix / reference: txs/s ${ratio.toFixed(3)}, shreds/s ${shredRatio.toFixed(3)}`;
  // Alpenglow framing beside tower-era, same batches and seed, interleaved.
  const alpen = makeStream(seed, 0, true);
  throughput('warm-up', alpen, leader, 0);
  const ag: BenchResult[] = [];
  for (let i = 0; i < 2; i++) {
    ag.push(throughput(`throughput: tower-era blocks (reference, pass ${i + 1})`, stream, leader, 0));
    ag.push(throughput(`throughput: Alpenglow blocks (pass ${i + 1})`, alpen, leader, 0));
  }
  const bestOf = (rows: BenchResult[], re: RegExp, k: string): number => Math.max(...rows.filter((r) => re.test(r.case)).map((r) => Number(r.figures[k])));
  ag[1]!.note = `${alpen.packets.length} shreds (${alpen.sets} sets: +3 components a slot) for the same ${alpen.transactions} transactions; best-of-2 ratios Alpenglow / tower: txs/s ${(bestOf(ag, /Alpenglow/, 'txs_per_s') / bestOf(ag, /tower-era/, 'txs_per_s')).toFixed(3)}, shreds/s ${(bestOf(ag, /Alpenglow/, 'shreds_per_s') / bestOf(ag, /tower-era/, 'shreds_per_s')).toFixed(3)}`;
  // Each era's blocks as their producers make them and sized like mainnet's (24 batches a slot, ~40-70 FEC sets): the
  // tower-era stream with its 64 ticks, the Alpenglow one with its markers and one tick; the same transactions.
  const REAL_BATCHES = 24;
  const towerReal = makeStream(seed, 0, false, REAL_BATCHES, 'real');
  const alpenReal = makeStream(seed, 0, true, REAL_BATCHES, 'real');
  throughput('warm-up', towerReal, leader, 0);
  throughput('warm-up', alpenReal, leader, 0);
  const real: BenchResult[] = [];
  for (let i = 0; i < 4; i++) {
    real.push(throughput(`throughput: tower-era blocks as made, mainnet-sized slots (reference, pass ${i + 1})`, towerReal, leader, 0));
    real.push(throughput(`throughput: Alpenglow blocks as made, mainnet-sized slots (pass ${i + 1})`, alpenReal, leader, 0));
  }
  // On a shared machine the wall-clock rates swing with the CPU share each pass got: per CPU-second too.
  const perCpu = (re: RegExp, k: string): number => real.filter((r) => re.test(r.case)).reduce((n, r) => n + Number(r.figures[k]) / (Number(r.figures.cpu_pct) / 100), 0);
  real[1]!.note = `${REAL_BATCHES} batches a slot: tower ${towerReal.packets.length} shreds / ${towerReal.sets} sets, Alpenglow ${alpenReal.packets.length} shreds / ${alpenReal.sets} sets, ${alpenReal.transactions} transactions each; ratios Alpenglow / tower, best of 4 wall-clock: txs/s ${(bestOf(real, /Alpenglow/, 'txs_per_s') / bestOf(real, /tower-era/, 'txs_per_s')).toFixed(3)}, shreds/s ${(bestOf(real, /Alpenglow/, 'shreds_per_s') / bestOf(real, /tower-era/, 'shreds_per_s')).toFixed(3)}; per CPU-second over the 4 passes: txs ${(perCpu(/Alpenglow/, 'txs_per_s') / perCpu(/tower-era/, 'txs_per_s')).toFixed(3)}, shreds ${(perCpu(/Alpenglow/, 'shreds_per_s') / perCpu(/tower-era/, 'shreds_per_s')).toFixed(3)}`;
  return [...results, ...floorRounds(stream, leader), ...pairs, ...ag, ...real, ...decodeBench()];
}

/** Ingest (entries on) per shred ÷ the crypto floor, this build and the one before (INGEST_BASELINE), in
 *  interleaved rounds: each round runs every case once, so drift and the other helpers' load hit all alike. */
function floorRounds(stream: Stream, leader: Buffer): BenchResult[] {
  const sets = floorSets(stream);
  const n = stream.packets.length;
  const builds = BASELINE === undefined ? [THIS_BUILD] : [THIS_BUILD, baselineBuild(BASELINE)];
  for (const b of builds) throughput('warm-up', stream, leader, 0, true, b);
  cryptoFloor(sets, n, leader);
  const floor: number[] = [];
  const per = new Map<string, { us: number[]; ratio: number[]; records: number }>(builds.map((b) => [b.name, { us: [], ratio: [], records: 0 }]));
  for (let r = 0; r < ROUNDS; r++) {
    const f = cryptoFloor(sets, n, leader);
    floor.push(f);
    for (const b of r % 2 === 0 ? builds : [...builds].reverse()) {
      const t = throughput(`round ${r + 1} ${b.name}`, stream, leader, 0, true, b);
      const m = per.get(b.name)!;
      m.us.push(Number(t.figures.cpu_us_per_shred));
      m.ratio.push(Number(t.figures.cpu_us_per_shred) / f);
      m.records = Number(t.figures.entry_records);
    }
  }
  const med = (xs: number[]): number => summarize(xs).p50;
  const spread = (xs: number[]): string => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;
  // The part ingest's records cost alone (what the ticks change touched): the pipeline's outputs captured once,
  // then each build's sink makes its records from them, interleaved.
  const outs: Parameters<ReturnType<typeof publishSink>['batch']>[0][] = [];
  const cap = pipelineFor(leader, { batch: (o) => void outs.push(o), slot: () => undefined });
  for (const pk of stream.packets) cap.push(pk, 0);
  const sinkUs = new Map<string, number[]>(builds.map((b) => [b.name, []]));
  const entriesUs = new Map<string, number[]>(builds.map((b) => [b.name, []]));
  const sinkCpu = (sink: ReturnType<typeof publishSink>): number => {
    const c0 = process.cpuUsage();
    for (let k = 0; k < 4; k++) for (const o of outs) sink.batch(o);
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / (4 * n);
  };
  for (let r = 0; r < ROUNDS + 1; r++) {
    for (const b of r % 2 === 0 ? builds : [...builds].reverse()) {
      const all = sinkCpu(b.publishSink({ offer: () => true }));
      // Without the entries topic: the difference is what stream.entries records cost.
      const txOnly = sinkCpu(b.publishSink({ offer: () => true }, { topics: { transactions: b.topics.transactions, slots: b.topics.slots } }));
      if (r === 0) continue; // warm-up round
      sinkUs.get(b.name)!.push(all);
      entriesUs.get(b.name)!.push(all - txOnly);
    }
  }
  const out: BenchResult[] = [
    { bench: 'ingest', case: `crypto floor: leaf + tree hashes + one ed25519 verify per set (${ROUNDS} rounds)`, figures: { cpu_us_per_shred: Number(med(floor).toFixed(3)), spread_us: spread(floor) } },
  ];
  for (const b of builds) {
    const m = per.get(b.name)!;
    out.push({
      bench: 'ingest',
      case: `loss-free, entries on, ÷ same-run floor: ${b.name === 'this' ? 'this build' : `build before (${BASELINE})`}`,
      figures: {
        cpu_us_per_shred: Number(med(m.us).toFixed(3)), spread_us: spread(m.us), over_floor: Number(med(m.ratio).toFixed(3)), over_floor_spread: spread(m.ratio), entry_records: m.records,
        records_only_us_per_shred: Number(med(sinkUs.get(b.name)!).toFixed(3)), records_only_spread: spread(sinkUs.get(b.name)!),
        entry_records_us_per_shred: Number(med(entriesUs.get(b.name)!).toFixed(3)), entry_records_spread: spread(entriesUs.get(b.name)!),
      },
      note: b.name === 'this' ? 'aim ≤ 1.45× the floor (1.64× before ticks rode along); medians of per-round ratios, spread = min–max over rounds' : undefined,
    });
  }
  return out;
}

if (require.main === module) {
  void benchIngest().then((r) => console.log(formatResults('ingest', r)));
}
