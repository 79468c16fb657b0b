import path from 'node:path';
import { mochaHooks } from '../support/global-fixtures';
import { formatResults, type BenchResult } from './stats';

// `npm run bench`: every bench module present, one after another (they share two cores; running them in
// parallel would measure the contention). A module that is not there yet is skipped with a note; a bench that
// throws is reported and makes the exit code 1, the others still run. Whatever a bench started (the Kafka
// broker) is stopped through the run-end hooks the tests use.

interface BenchModule {
  file: string;
  title: string;
  entry: string;
}

const BENCHES: BenchModule[] = [
  { file: './bus', title: 'bus', entry: 'benchBus' },
  { file: './ingest', title: 'ingest', entry: 'benchIngest' },
  { file: './ingest-flood', title: 'ingest under a flood (cost per hostile datagram by kind, good blocks under a UDP flood)', entry: 'benchIngestFlood' },
  { file: './fanout', title: 'fanout', entry: 'benchFanout' },
  { file: './fanout-filter', title: 'fanout filter update', entry: 'benchFanoutFilter' },
  { file: './fanout-filter-parts', title: 'fanout matching: instruction and role filters beside account-only filters of the same reach', entry: 'benchFanoutFilterParts' },
  { file: './fanout-lookup', title: 'fanout matching with lookup tables resolved', entry: 'benchFanoutLookup' },
  { file: './stream-v2', title: 'stream v2 beside v1 (hub CPU, replay)', entry: 'benchStreamV2' },
  { file: './stream-v2-wire', title: 'stream v2 over sockets beside v1 (CPU per message, bytes on the wire, gzip/zstd)', entry: 'benchStreamV2Wire' },
  { file: './fanout-raw', title: 'fanout per delivered message (raw HTTP/2 load client)', entry: 'benchFanoutRaw' },
  { file: './billing', title: 'billing', entry: 'benchBilling' },
  { file: './localchain', title: 'localchain', entry: 'benchLocalChain' },
  { file: './rpc', title: 'rpc gateway', entry: 'benchRpc' },
  { file: './usage-hook', title: 'usage accounting per request: an event per method and request beside one per call', entry: 'benchUsageHook' },
  { file: './fleet-meter', title: 'chain gateway meter: fleet-wide limits beside local', entry: 'benchFleetMeter' },
  { file: './loop', title: 'whole loop on one machine', entry: 'benchLoop' },
  { file: './evm', title: 'evm', entry: 'benchEvm' },
  { file: './submit', title: 'submit', entry: 'benchSubmit' },
  { file: './quic', title: 'quic', entry: 'benchQuic' },
  { file: './tpu', title: "tpu route beside rpc on the local multi-leader cluster (landing at 0% / 10% loss, per core with tpu on / off, traces on / off)", entry: 'benchTpu' },
];

/** The bench's function, or null if its module does not exist. Errors inside an existing module propagate. */
function load(b: BenchModule): (() => Promise<BenchResult[]>) | null {
  let resolved: string;
  try {
    resolved = require.resolve(path.join(__dirname, b.file));
  } catch {
    return null;
  }
  const mod = require(resolved) as Record<string, unknown>;
  const fn = mod[b.entry];
  if (typeof fn !== 'function') throw new Error(`${b.file} does not export ${b.entry}()`);
  return fn as () => Promise<BenchResult[]>;
}

/** BENCH_ONLY=rpc,submit runs just the benches whose module names are listed (all of them when unset). */
function selected(): BenchModule[] {
  const only = process.env.BENCH_ONLY;
  if (only === undefined || only.trim() === '') return BENCHES;
  const names = new Set(only.split(',').map((s) => s.trim()));
  return BENCHES.filter((b) => names.has(b.file.slice(2)));
}

async function main(): Promise<number> {
  let failed = 0;
  const started = performance.now();
  for (const b of selected()) {
    const t0 = performance.now();
    try {
      const fn = load(b);
      if (fn === null) {
        console.log(`== ${b.title} ==\n  skipped: test/bench/${b.file.slice(2)} is not there yet\n`);
        continue;
      }
      const results = await fn();
      console.log(`${formatResults(b.title, results)}\n  (${((performance.now() - t0) / 1000).toFixed(1)} s)\n`);
    } catch (e) {
      failed++;
      console.log(`== ${b.title} ==\n  FAILED: ${(e as Error).stack ?? String(e)}\n`);
    }
  }
  console.log(`benches done in ${((performance.now() - started) / 1000).toFixed(1)} s${failed > 0 ? `, ${failed} failed` : ''}`);
  return failed > 0 ? 1 : 0;
}

void (async () => {
  let code = 1;
  try {
    code = await main();
  } finally {
    await mochaHooks.afterAll().catch((e: unknown) => console.error('stopping bench resources failed:', e));
  }
  // kafkajs and friends may leave sockets and timers behind; the run is over, so do not wait for them.
  process.exit(code);
})();
