import { FanoutChild } from '../fanout/child-process';
import { RawConnection, type RawStream } from '../fanout/raw-client';
import { uniqueTopics } from '../fanout/support';
import { publishStamp } from './fanout';
import { nowMs, subscriberFilters, WORKLOAD } from './fanout-workload';
import { sleep, summarize, type BenchResult } from './stats';

// The fanout's own cost per delivered message, under a load client cheaper than the server: 1,000 subscriber
// streams on bare node:http2 (raw-client.ts: cuts the byte stream at gRPC length prefixes, reads only the
// publish stamp in signatures[0], decodes nothing else), on 1,000 connections and on 20. Same workload as
// fanout.ts (~5 subscribers reached per transaction, real ~800 B templates), published inside the fanout's
// process (embedded bus). Server CPU = the fanout process's user+system time over the phase, divided by the
// messages the clients received. Each case runs twice in the same conditions: responses through grpc-js's
// per-message write path (the reference) and written straight to the HTTP/2 stream (fanout.directWrites).

// FANOUT_BENCH_PROFILE=<dir>: the fanout child runs under --cpu-prof and writes its profile there on exit.
// FANOUT_BENCH_ONLY=direct|grpc-js, FANOUT_BENCH_CONNECTIONS=20: run a subset.
const PROFILE_DIR = process.env.FANOUT_BENCH_PROFILE;
const PHASE_S = 5;
const RATES = [4000, 12_000];
const CONNECTION_COUNTS = [1000, 20];

interface Load {
  streams: RawStream[];
  conns: RawConnection[];
  received: number;
  samples: number[];
  recording: boolean;
}

async function openLoad(address: string, connections: number): Promise<Load> {
  const load: Load = { streams: [], conns: [], received: 0, samples: [], recording: false };
  for (let c = 0; c < connections; c++) load.conns.push(await RawConnection.connect(address, { initialWindowSize: 1 << 20 }, 16 << 20));
  const onMessage = (m: Buffer): void => {
    const t = publishStamp(m);
    if (t === undefined) return;
    load.received++;
    if (load.recording) load.samples.push(nowMs() - t);
  };
  for (let i = 0; i < WORKLOAD.subscribers; i++) {
    const s = load.conns[i % connections]!.open(onMessage);
    const transactions = Object.fromEntries(subscriberFilters(i).map(([name, f]) => [name, { accountInclude: f.include }]));
    s.send({ transactions, pingId: 1 });
    load.streams.push(s);
  }
  const deadline = Date.now() + 60_000;
  while (load.streams.some((s) => s.messages === 0) && Date.now() < deadline) await sleep(20);
  if (load.streams.some((s) => s.messages === 0)) throw new Error('not every subscriber got its pong');
  return load;
}

async function runCase(directWrites: boolean, connections: number): Promise<BenchResult[]> {
  const child = await FanoutChild.start({
    bus: 'embedded',
    feedModule: require.resolve('./fanout-workload'),
    fanout: {
      topics: uniqueTopics('bench-raw'),
      heartbeatMs: 10_000,
      directWrites,
      maxStreamsPerConnection: 1000,
      maxStreamsPerIp: 2000,
      queueMaxMessages: 50_000,
      queueMaxBytes: 64 << 20,
      queueMaxLagMs: 60_000,
      queueBudgetBytes: 1 << 30,
    },
  }, PROFILE_DIR === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`]);
  const out: BenchResult[] = [];
  let load: Load | undefined;
  try {
    load = await openLoad(child.address, connections);
    let seq = 0;
    await child.feed({ rate: 2000, seconds: 1, seq0: seq }, 30_000); // warm up
    seq += 2000;
    for (const rate of RATES) {
      await sleep(500);
      load.samples = [];
      load.recording = true;
      const r0 = load.received;
      const u0 = await child.usage();
      const t0 = performance.now();
      const fed = await child.feed({ rate, seconds: PHASE_S, seq0: seq }, (PHASE_S + 30) * 1000);
      seq += fed.published;
      // The tail: up to 2 s for the clients to receive what the fanout wrote.
      const wrote0 = (u0.stats as { deliveredTransactions: number }).deliveredTransactions;
      const until = performance.now() + 2000;
      let u1 = await child.usage();
      while (performance.now() < until && load.received - r0 < (u1.stats as { deliveredTransactions: number }).deliveredTransactions - wrote0) {
        await sleep(50);
        u1 = await child.usage();
      }
      const wallS = (performance.now() - t0) / 1000;
      load.recording = false;
      const delivered = load.received - r0;
      const cpuMs = u1.cpuMs - u0.cpuMs;
      const s = summarize(load.samples);
      out.push({
        bench: 'fanout-raw',
        case: `${directWrites ? 'direct writes' : 'grpc-js writes (reference)'}, ${connections} connections, ${rate.toLocaleString('en-US')} tx/s`,
        figures: {
          published: fed.published,
          delivered,
          delivered_per_s: delivered / (fed.elapsedMs / 1000),
          server_cpu_pct: (cpuMs / 1000 / wallS) * 100,
          server_us_per_msg: delivered > 0 ? (cpuMs * 1000) / delivered : Number.NaN,
          p50_ms: s.p50,
          p99_ms: s.p99,
        },
        note: delivered < fed.published * 4 ? 'fell behind: far fewer messages than the workload reaches (~5.1 per transaction)' : undefined,
      });
    }
  } finally {
    if (load !== undefined) for (const c of load.conns) c.destroy();
    await child.close();
  }
  return out;
}

export async function benchFanoutRaw(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  const only = process.env.FANOUT_BENCH_ONLY;
  const conns = process.env.FANOUT_BENCH_CONNECTIONS === undefined ? CONNECTION_COUNTS : [Number(process.env.FANOUT_BENCH_CONNECTIONS)];
  for (const connections of conns) {
    for (const direct of [false, true]) {
      if (only === (direct ? 'grpc-js' : 'direct')) continue;
      results.push(...(await runCase(direct, connections)));
    }
  }
  return results;
}

if (require.main === module) {
  void (async () => {
    const { formatResults } = await import('./stats');
    console.log(formatResults('fanout-raw', await benchFanoutRaw()));
    process.exit(0);
  })();
}
