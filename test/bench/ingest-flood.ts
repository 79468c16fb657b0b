import dgram from 'node:dgram';
import fs from 'node:fs';
import { Writable } from 'node:stream';
import bs58 from 'bs58';
import type { BusMessage } from '../../bus/bus';
import { EmbeddedBus } from '../../bus/embedded';
import { randomKeypair, type Keypair } from '../../infra/base/keypair';
import { createLogger } from '../../infra/base/log';
import { Registry } from '../../infra/base/metrics';
import type { IngestConfig } from '../../ingest/config';
import { Pipeline } from '../../ingest/pipeline';
import { publishSink } from '../../ingest/publish-sink';
import { fixedLeader } from '../../ingest/shred/leader-keys';
import { socketDrops } from '../../ingest/udp-drops';
import { startIngest } from '../../ingest/worker';
import { makeBlock, type Block } from '../ingest/support/blocks';
import { hostilePool, runFlood, type HostileKind } from '../ingest/support/flood';
import { formatResults, type BenchResult } from './stats';

// Ingest under attack (issue 34), two parts:
//   cost per datagram — Pipeline.push alone (no socket), leader check on, from one hostile address whose budget
//     is spent (the steady state of a flood), per kind: random bytes, malformed (mutated shreds), forged with a
//     valid header (another key's shreds in the feed's slots and the feed's own shreds with the slot rewritten,
//     each one distinct), duplicate (one forged shred repeated), outside the window; beside, same run and
//     interleaved: a valid shred's cost (a good stream of nearly full one-set blocks of 100 transfers, 64 shreds
//     each: verify, proofs, completion, reassembly, decode, record build, per shred) and a forged shred's cost with no budget (what each cost before: a
//     verify). Best of BENCH_FLOOD_ROUNDS (3) rounds of 20,000 pushes per kind.
//   flood over UDP — a running ingest (embedded bus) on loopback, a worker thread sending the hostile mix from
//     127.0.0.2 at each rate of BENCH_FLOOD_RATES (0, 10k, 25k, 50k/s) for ~5 s while a feed on 127.0.0.1
//     sends 14 blocks; per rate: blocks that completed, the rate the sender achieved, what the kernel dropped,
//     and ingest's main-thread CPU per received datagram (/proc/self/task/<pid>/stat: the sender's thread is
//     not counted). Rate 0 is the same-run reference.

const ROUNDS = Number(process.env.BENCH_FLOOD_ROUNDS ?? 3);
const PUSHES = 20_000;
const RATES = (process.env.BENCH_FLOOD_RATES ?? '0,10000,25000,50000').split(',').map(Number);
const SHRED_VERSION = 4242;
const FIRST_SLOT = 900_000n;
const quiet = createLogger({ level: 'warn', destination: new Writable({ write: (_c, _e, cb) => cb() }) });

function droppingSink(): ReturnType<typeof publishSink> {
  return publishSink({ offer: () => true });
}

/** µs per push of `packets` (cycled) into `p` from `source`; `fresh` rewrites a counter so no two are alike. */
function pushCost(p: Pipeline, packets: Buffer[], source: string | undefined, fresh: boolean, n = PUSHES): number {
  let c = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const b = packets[i % packets.length]!;
    if (fresh) b.writeUInt32LE(c++ >>> 0, b.length - 300);
    p.push(b, performance.timeOrigin + performance.now(), source);
  }
  return ((performance.now() - t0) * 1000) / n;
}

function costPerKind(leader: Keypair, attacker: Keypair, payer: Keypair): BenchResult[] {
  // 100 transfers per block: one nearly full FEC set (~21 KB of the resigned set's 28,768 bytes).
  const good: Block[] = Array.from({ length: 160 }, (_, i) => makeBlock(FIRST_SLOT + BigInt(i), leader, payer, 100, SHRED_VERSION));
  const goodShreds = good.flatMap((b) => b.shreds);
  const pool = hostilePool(34, attacker, payer, good[0]!, FIRST_SLOT, SHRED_VERSION, 8192);
  const byKind = (k: HostileKind): Buffer[] => pool.packets.filter((_, i) => pool.kinds[i] === k).map((b) => Buffer.from(b));
  const kinds: HostileKind[] = ['random', 'malformed', 'forged', 'duplicate', 'outside'];
  const sets = Object.fromEntries(kinds.map((k) => [k, byKind(k)])) as Record<HostileKind, Buffer[]>;
  const best: Record<string, number> = {};
  const keep = (name: string, us: number): void => void (best[name] = Math.min(best[name] ?? Infinity, us));
  for (let r = 0; r < ROUNDS; r++) {
    // Valid shreds: a fresh pipeline per round, the whole good stream from the feed's address.
    const pv = new Pipeline({ shredVersion: SHRED_VERSION, leaders: fixedLeader(leader.publicKey), sink: droppingSink() });
    keep('valid shred (reference)', pushCost(pv, goodShreds, 'feed', false, goodShreds.length));
    if (pv.stats().setsCompleted !== good.length) throw new Error(`valid stream: ${pv.stats().setsCompleted}/${good.length} sets`);
    // Hostile kinds into one pipeline that has a window (one good block) and a hostile source over its budget.
    const ph = new Pipeline({ shredVersion: SHRED_VERSION, leaders: fixedLeader(leader.publicKey), sink: droppingSink() });
    for (const s of good[0]!.shreds) ph.push(s, performance.timeOrigin + performance.now(), 'feed');
    pushCost(ph, sets.forged, 'evil', true, 2000); // spends the budget
    for (const k of kinds) keep(k, pushCost(ph, sets[k], 'evil', k === 'forged'));
    // The old cost of a forged shred: nothing budgets it (no source), so each one is verified.
    const po = new Pipeline({ shredVersion: SHRED_VERSION, leaders: fixedLeader(leader.publicKey), sink: droppingSink() });
    for (const s of good[0]!.shreds) po.push(s, performance.timeOrigin + performance.now());
    keep('forged, unbudgeted (a verify each: the cost before)', pushCost(po, sets.forged, undefined, true, 2000));
  }
  const ref = best['valid shred (reference)']!;
  return Object.entries(best).map(([k, us]) => ({
    bench: 'ingest-flood',
    case: `cost per datagram: ${k}`,
    figures: { us_per_datagram: us, per_core_per_s: 1e6 / us, vs_valid_shred: us / ref },
  }));
}

/** utime + stime of this process's main thread, in seconds (Linux), or NaN. */
function mainThreadCpuS(): number {
  try {
    const stat = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'latin1');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // USER_HZ = 100 on Linux
  } catch {
    return NaN;
  }
}

async function floodAt(rate: number, leader: Keypair, attacker: Keypair, payer: Keypair, slot0: bigint): Promise<BenchResult> {
  const bus = new EmbeddedBus({ log: quiet });
  const topics = { transactions: `bench.flood.${rate}.transactions`, slots: `bench.flood.${rate}.slots` };
  await bus.createTopics([
    { name: topics.transactions, partitions: 1, compacted: false },
    { name: topics.slots, partitions: 1, compacted: false },
  ]);
  const got: BusMessage[] = [];
  const consumer = await bus.consume({ topics: [topics.transactions], from: 'beginning', onBatch: (m) => void got.push(...m) });
  await consumer.ready;
  const cfg: IngestConfig = {
    enabled: true, host: '127.0.0.1', port: 0, recvBufferBytes: 4 * 1024 * 1024, recvBufferExplicit: false, shredVersion: SHRED_VERSION,
    leader: { mode: 'fixed', key: bs58.encode(leader.publicKey) }, slotWindow: 512, windowResetMs: 10_000, queuePackets: 65_536, publishQueueBatches: 4096,
  };
  const ingest = await startIngest(cfg, bus, quiet, { topics, registry: new Registry() });
  const port = ingest.address.port;
  const blocks = Array.from({ length: 14 }, (_, i) => makeBlock(slot0 + BigInt(i), leader, payer, 20, SHRED_VERSION));
  // The feed's first block, alone, makes its address a known source (as in the test).
  const udp = dgram.createSocket('udp4');
  await new Promise<void>((r) => udp.bind(0, '127.0.0.1', r));
  for (const s of blocks[0]!.shreds) await new Promise<void>((r, j) => udp.send(s, port, '127.0.0.1', (e) => (e ? j(e) : r())));
  udp.close();
  const deadline = Date.now() + 30_000;
  while (got.length < 20 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  const pool = hostilePool(rate, attacker, payer, blocks[0]!, slot0, SHRED_VERSION);
  const cpu0 = mainThreadCpuS();
  const rx0 = ingest.stats().receiver.received;
  const elu0 = performance.eventLoopUtilization();
  const report = await runFlood({ port, hostileAddress: '127.0.0.2', feedAddress: '127.0.0.1', pool, ratePerS: rate, blocks: blocks.slice(1).map((b) => b.shreds), blockEveryMs: 300, tailMs: 500 });
  // Wait until the kernel's backlog is read or dropped and ingest's queue is empty.
  const sent = report.hostileSent + report.goodSent + blocks[0]!.shreds.length;
  while (Date.now() < deadline + 60_000) {
    const st = ingest.stats();
    if (st.receiver.received + (socketDrops(port, false) ?? 0) >= sent && st.receiver.queued === 0 && st.publisher.queued === 0) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const cpu = mainThreadCpuS() - cpu0;
  const elu = performance.eventLoopUtilization(elu0);
  const st = ingest.stats();
  const have = new Set(got.map((m) => bs58.encode(m.key!)));
  const complete = blocks.filter((b) => b.signatures.every((s) => have.has(s))).length;
  const received = st.receiver.received - rx0;
  const kernelDrops = socketDrops(port, false) ?? NaN;
  await ingest.close();
  await consumer.close();
  await bus.close();
  const floodS = report.floodMs / 1000;
  return {
    bench: 'ingest-flood',
    case: rate === 0 ? 'flood over UDP: none (reference: the feed alone)' : `flood over UDP: ${rate.toLocaleString('en-US')}/s asked`,
    figures: {
      hostile_per_s: report.hostileSent / floodS,
      good_blocks: `${complete}/${blocks.length}`,
      received,
      kernel_drops: kernelDrops,
      ingest_cpu_s: cpu,
      ingest_cpu_pct: (100 * cpu) / floodS,
      us_per_received: (cpu * 1e6) / Math.max(1, received),
      main_elu: elu.utilization,
      verifies_failed: st.pipeline.verifies.fail.unproven,
      budget_drops: st.pipeline.drops.source_budget,
      dedicated_sockets: st.receiver.dedicated,
    },
  };
}

export async function benchIngestFlood(): Promise<BenchResult[]> {
  const leader = randomKeypair();
  const attacker = randomKeypair();
  const payer = randomKeypair();
  const out = costPerKind(leader, attacker, payer);
  out[0]!.note = `best of ${ROUNDS} interleaved rounds; hostile kinds from one address past its verify budget; Pipeline.push only (no socket)`;
  let slot = 1_000_000n;
  for (const rate of RATES) {
    out.push(await floodAt(rate, leader, attacker, payer, slot));
    slot += 1000n;
  }
  out[out.length - RATES.length]!.note = 'ingest_cpu: the main thread only (the sender is a worker thread of the same process); us_per_received: all of ingest (socket, queue, pipeline, publish) per datagram read';
  return out;
}

if (require.main === module) {
  void benchIngestFlood().then((r) => console.log(formatResults('ingest under a flood', r)));
}
