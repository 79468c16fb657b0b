import path from 'node:path';
import type { FanoutStats } from '../../fanout/v1/hub';
import { FilterAdd, Start, SubscribeRequest, TransactionFilter } from '../../proto/gen/stream_v2_pb';
import { zstdAvailable } from '../../proto/grpc-compression';
import { V2_SUBSCRIBE_PATH } from '../../proto/service-v2';
import { FanoutChild } from '../fanout/child-process';
import { goToolchain } from '../fanout/go-load-client-build';
import { GoLoadClient, type GoLoadOptions } from '../fanout/go-load-client';
import { subscribeFrame } from '../fanout/raw-client';
import { uniqueTopics } from '../fanout/support';
import { subscriberFilters, WORKLOAD } from './fanout-workload';
import { fmt, sleep, type BenchResult } from './stats';

// Stream v2 over sockets beside v1 in the same run: the fanout's CPU per delivered message and the bytes on the
// wire per delivered transaction, v2 uncompressed, gzip and zstd (zstd where node:zlib has it, Node ≥ 22.15).
// The fanout-raw bench's workload and client: 1,000 subscribers with 2 filters of 10 keys each (~5 reached per
// transaction, real ~800 B fixture transactions), published inside the fanout's process (embedded bus), read by
// the compiled Go load client (test/bench/loadclient) — cheaper than the server, in a process of its own — on
// 20 connections. v1 streams send one SubscribeRequest with both filters; v2 streams send add_filter ×2 and start.
// Each case runs in a fresh fanout child (own HTTP/2 transport, one process); v1 and uncompressed v2 run twice,
// interleaved (v1, v2, gzip, zstd, v1, v2), so the machine's drift shows beside the figures.
//
// STREAM_V2_WIRE_RATE=4000 (tx/s), STREAM_V2_WIRE_PHASE_S=4, STREAM_V2_WIRE_CONNECTIONS=20,
// STREAM_V2_WIRE_CASES=v1,v2,gzip,zstd,v1,v2 (the order run); STREAM_V2_WIRE_PROFILE=<dir>: the fanout children run
// under --cpu-prof and write their profiles there.
// STREAM_V2_WIRE_BASELINE=<root of another checkout, built>: cases written `v1@base`, `v2@base` run that build's
// fanout child (and its workload), so old and new builds interleave in one run; with it set and no CASES given,
// the order is v1, v2, v1@base, v2@base, three rounds, and the summary gives v2 ÷ v1 per build and per round.
const PROFILE_DIR = process.env.STREAM_V2_WIRE_PROFILE;
const BASELINE = process.env.STREAM_V2_WIRE_BASELINE;

const RATE = Number(process.env.STREAM_V2_WIRE_RATE ?? 4000);
const PHASE_S = Number(process.env.STREAM_V2_WIRE_PHASE_S ?? 4);
const CONNECTIONS = Number(process.env.STREAM_V2_WIRE_CONNECTIONS ?? 20);
const DEFAULT_CASES = BASELINE === undefined ? 'v1,v2,gzip,zstd,v1,v2' : 'v1,v2,v1@base,v2@base,v1,v2,v1@base,v2@base,v1,v2,v1@base,v2@base';
const CASES = (process.env.STREAM_V2_WIRE_CASES ?? DEFAULT_CASES).split(',').map((s) => s.trim());
const TAIL_MS = 3000;
const READY_MS = 60_000;

type Kind = 'v1' | 'v2' | 'gzip' | 'zstd';

interface V2Counts {
  deliveredTransactions: number;
  bytes: number;
  compressed: number;
}

function v1Requests(): Buffer[] {
  return Array.from({ length: WORKLOAD.subscribers }, (_, i) => subscribeFrame({ transactions: Object.fromEntries(subscriberFilters(i).map(([name, f]) => [name, { accountInclude: f.include }])), pingId: 1 }));
}

function frame(r: SubscribeRequest): Buffer {
  const b = Buffer.from(r.serializeBinary());
  const p = Buffer.alloc(5);
  p.writeUInt32BE(b.length, 1);
  return Buffer.concat([p, b]);
}

/** Per subscriber: add_filter for each of its filters, then a live start (3 frames). */
function v2Requests(): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < WORKLOAD.subscribers; i++) {
    for (const [name, f] of subscriberFilters(i)) {
      const tf = new TransactionFilter();
      tf.setAccountIncludeList(f.include);
      const a = new FilterAdd();
      a.setId(name);
      a.setFilter(tf);
      const r = new SubscribeRequest();
      r.setAddFilter(a);
      out.push(frame(r));
    }
    const s = new SubscribeRequest();
    s.setStart(new Start());
    out.push(frame(s));
  }
  return out;
}

interface Measured {
  kind: Kind;
  /** 'this' or 'base' (STREAM_V2_WIRE_BASELINE). */
  build: string;
  published: number;
  delivered: number;
  usPerMsg: number;
  publisherUsPerMsg: number;
  bytesPerTx: number;
  serverBytesPerTx: number;
  compressedPerRecord: number;
  p50: number;
  p99: number;
  clientUsPerMsg: number;
  lateMs: number;
  behind: string | undefined;
}

const deliveredOf = (kind: Kind, u: { stats: unknown; v2?: unknown }): number => (kind === 'v1' ? (u.stats as FanoutStats).deliveredTransactions : (u.v2 as V2Counts).deliveredTransactions);

async function runCase(kind: Kind, seq0: number, build: string): Promise<Measured> {
  const root = build === 'base' ? BASELINE : undefined;
  const child = await FanoutChild.start(
    {
      bus: 'embedded',
      feedModule: root === undefined ? require.resolve('./fanout-workload') : path.join(root, 'dist', 'test', 'bench', 'fanout-workload.js'),
      workers: 1,
      fanout: {
        topics: uniqueTopics('bench-v2-wire'),
        heartbeatMs: 60_000,
        transport: 'h2',
        maxStreamsPerConnection: 1000,
        maxStreamsPerIp: 2000,
        queueMaxMessages: 50_000,
        queueMaxBytes: 64 << 20,
        queueMaxLagMs: 60_000,
        queueBudgetBytes: 1 << 30,
      },
    },
    PROFILE_DIR === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`],
    root,
  );
  let load: GoLoadClient | undefined;
  try {
    const opts: GoLoadOptions = kind === 'v1' ? {} : { path: V2_SUBSCRIBE_PATH, v2: true, framesPerStream: WORKLOAD.filtersPerSubscriber + 1, ...(kind === 'v2' ? {} : { acceptEncoding: kind }) };
    load = await GoLoadClient.start(child.address, CONNECTIONS, kind === 'v1' ? v1Requests() : v2Requests(), opts);
    if (!(await load.ready(READY_MS))) throw new Error(`${kind}: not every stream got its first message (${(await load.counts()).status})`);
    await child.feed({ rate: 2000, seconds: 1, seq0 }, 30_000); // warm up
    let seq = seq0 + 2000;
    const settled = async (): Promise<void> => {
      const deadline = performance.now() + 15_000;
      for (;;) {
        const u = await child.usage();
        if (((u.stats as FanoutStats).transactions >= seq - seq0 && (await load!.counts()).received >= deliveredOf(kind, u)) || performance.now() > deadline) return;
        await sleep(100);
      }
    };
    await settled();
    await sleep(300);
    await load.record(true);
    const r0 = await load.counts();
    const u0 = await child.usage();
    const fed = await child.feed({ rate: RATE, seconds: PHASE_S, seq0: seq }, (PHASE_S + 60) * 1000);
    seq += fed.published;
    const until = performance.now() + TAIL_MS;
    let u1 = await child.usage();
    let r1 = await load.counts();
    const caughtUp = (): boolean => (u1.stats as FanoutStats).transactions - (u0.stats as FanoutStats).transactions >= fed.published && r1.received - r0.received >= deliveredOf(kind, u1) - deliveredOf(kind, u0);
    while (!caughtUp() && performance.now() < until) {
      await sleep(50);
      u1 = await child.usage();
      r1 = await load.counts();
    }
    const done = caughtUp();
    const st = await load.stats();
    await load.record(false);
    const delivered = r1.received - r0.received;
    const v2b = kind === 'v1' ? undefined : { bytes: (u1.v2 as V2Counts).bytes - (u0.v2 as V2Counts).bytes, compressed: (u1.v2 as V2Counts).compressed - (u0.v2 as V2Counts).compressed };
    const serverBytes = v2b?.bytes ?? Number.NaN;
    return {
      kind,
      build,
      published: fed.published,
      delivered,
      usPerMsg: ((u1.cpuMs - u0.cpuMs) * 1000) / delivered,
      publisherUsPerMsg: ((fed.publishMs ?? 0) * 1000) / delivered,
      bytesPerTx: (r1.bytes - r0.bytes) / delivered,
      serverBytesPerTx: serverBytes / delivered,
      compressedPerRecord: v2b === undefined ? Number.NaN : v2b.compressed / fed.published,
      p50: st.p50 ?? Number.NaN,
      p99: st.p99 ?? Number.NaN,
      clientUsPerMsg: ((r1.cpuMs - r0.cpuMs) * 1000) / delivered,
      lateMs: fed.lateMs ?? 0,
      behind: done ? undefined : `not caught up ${TAIL_MS} ms after the feed (${delivered} of ${deliveredOf(kind, u1) - deliveredOf(kind, u0)} received)`,
    };
  } finally {
    if (load !== undefined) await load.close();
    await child.close();
  }
}

const LABEL: Record<Kind, string> = { v1: 'v1 (reference)', v2: 'v2 uncompressed', gzip: 'v2 gzip', zstd: 'v2 zstd' };

export async function benchStreamV2Wire(): Promise<BenchResult[]> {
  if (goToolchain() === null) return [{ bench: 'stream-v2-wire', case: 'skipped', figures: {}, note: 'needs the compiled Go load client: no `go` on PATH' }];
  const results: BenchResult[] = [];
  const runs: Measured[] = [];
  let seq = 0;
  for (const c of CASES) {
    const [kindText, at] = c.split('@') as [string, string | undefined];
    const kind = kindText as Kind;
    const build = at ?? 'this';
    if (!(kind in LABEL) || (build !== 'this' && build !== 'base')) throw new Error(`STREAM_V2_WIRE_CASES: unknown case ${c}`);
    if (build === 'base' && BASELINE === undefined) throw new Error(`case ${c} needs STREAM_V2_WIRE_BASELINE (the root of another built checkout)`);
    if (kind === 'zstd' && !zstdAvailable) {
      results.push({ bench: 'stream-v2-wire', case: 'v2 zstd', figures: {}, note: `skipped: node:zlib has zstd from Node 22.15; this is ${process.version} (infra/scripts/with-node.sh 24 runs it)` });
      continue;
    }
    const m = await runCase(kind, seq, build);
    seq += m.published + 2000;
    runs.push(m);
    results.push({
      bench: 'stream-v2-wire',
      case: `${LABEL[kind]}${build === 'base' ? ' [baseline build]' : ''}, ${fmt(RATE)} tx/s, ${WORKLOAD.subscribers} streams on ${CONNECTIONS} connections`,
      figures: {
        delivered: m.delivered,
        server_us_per_msg: m.usPerMsg,
        publisher_us_per_msg: m.publisherUsPerMsg,
        wire_bytes_per_tx: m.bytesPerTx,
        server_bytes_per_tx: m.serverBytesPerTx,
        compressions_per_record: m.compressedPerRecord,
        p50_ms: m.p50,
        p99_ms: m.p99,
        client_us_per_msg: m.clientUsPerMsg,
        publisher_late_ms: m.lateMs,
        kept_up: m.behind === undefined ? 'yes' : 'no',
      },
      note: m.behind,
    });
  }
  const mean = (k: Kind, f: (m: Measured) => number, build = 'this'): number => {
    const xs = runs.filter((m) => m.kind === k && m.build === build).map(f);
    return xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
  };
  const v1Us = mean('v1', (m) => m.usPerMsg);
  const v1Bytes = mean('v1', (m) => m.bytesPerTx);
  const v2Bytes = mean('v2', (m) => m.bytesPerTx);
  results.push({
    bench: 'stream-v2-wire',
    case: 'summary (means over the runs above)',
    figures: {
      v2_cpu_vs_v1: +(mean('v2', (m) => m.usPerMsg) / v1Us).toFixed(3),
      gzip_cpu_vs_v1: +(mean('gzip', (m) => m.usPerMsg) / v1Us).toFixed(3),
      zstd_cpu_vs_v1: +(mean('zstd', (m) => m.usPerMsg) / v1Us).toFixed(3),
      v2_bytes_vs_v1: +(v2Bytes / v1Bytes).toFixed(3),
      gzip_bytes_vs_v2: +(mean('gzip', (m) => m.bytesPerTx) / v2Bytes).toFixed(3),
      zstd_bytes_vs_v2: +(mean('zstd', (m) => m.bytesPerTx) / v2Bytes).toFixed(3),
      ...(BASELINE === undefined
        ? {}
        : {
            base_v2_cpu_vs_v1: +(mean('v2', (m) => m.usPerMsg, 'base') / mean('v1', (m) => m.usPerMsg, 'base')).toFixed(3),
            v1_cpu_vs_base_v1: +(v1Us / mean('v1', (m) => m.usPerMsg, 'base')).toFixed(3),
            v2_cpu_vs_base_v2: +(mean('v2', (m) => m.usPerMsg) / mean('v2', (m) => m.usPerMsg, 'base')).toFixed(3),
            v2_vs_v1_per_round: perRound(runs, 'this'),
            base_v2_vs_v1_per_round: perRound(runs, 'base'),
          }),
    },
    note:
      'server_us_per_msg = the fanout child\'s CPU over the phase / transactions the client received (the publisher\'s share included, as in fanout-raw); ' +
      'wire_bytes_per_tx = HTTP/2 DATA payload bytes the client read / transactions (server_bytes_per_tx: gRPC messages v2 handed to the transport); ' +
      'compressions_per_record = shared parts compressed / records published (≤ 1 per encoding: once per record, not per stream); ' +
      'the zstd client counts compressed messages without decoding them (Go has no zstd), so its p50/p99 are empty',
  });
  return results;
}

/** v2 ÷ v1 CPU per message of each v1 run and the v2 run after it, on one build. */
function perRound(runs: readonly Measured[], build: string): string {
  const out: string[] = [];
  const mine = runs.filter((m) => m.build === build);
  for (let i = 0; i + 1 < mine.length; i++) {
    if (mine[i]!.kind === 'v1' && mine[i + 1]!.kind === 'v2') out.push((mine[i + 1]!.usPerMsg / mine[i]!.usPerMsg).toFixed(2));
  }
  return out.join(', ');
}

if (require.main === module) {
  void (async () => {
    const { formatResults } = await import('./stats');
    console.log(formatResults('stream-v2-wire', await benchStreamV2Wire()));
    process.exit(0);
  })();
}
