import { goToolchain } from '../fanout/go-load-client-build';
import { GoLoadClient } from '../fanout/go-load-client';
import { RawConnection, subscribeFrame, type RawStream } from '../fanout/raw-client';
import { publishStamp } from './fanout';
import { nowMs, subscriberFilters, WORKLOAD } from './fanout-workload';
import { sleep, summarize } from './stats';

// The raw fanout bench's load: WORKLOAD.subscribers Subscribe streams, stream i on connection i % connections,
// each subscribing to subscriberFilters(i) and pinging once (its pong says the filters are in place). Two clients:
//   - go: the compiled client (test/bench/loadclient), a process of its own: its CPU is its own, not this one's;
//   - node: bare node:http2 in this process (test/fanout/raw-client.ts).
// Both count only the messages that carry a publish stamp and record (receipt − stamp) while recording is on.

export type LoadClientKind = 'go' | 'node';

export interface Latency {
  count: number;
  p50: number;
  p99: number;
}

export interface Load {
  readonly kind: LoadClientKind;
  /** Stamped messages (transactions) received so far. */
  received(): Promise<number>;
  /** Clears the latency samples and starts recording. */
  startRecording(): Promise<void>;
  /** Stops recording; the latency over the samples since startRecording. */
  stopRecording(): Promise<Latency>;
  /** CPU ms (user, system) the load client has used so far (the go client's process; for node: this whole process). */
  cpuMs(): Promise<{ user: number; sys: number }>;
  close(): Promise<void>;
}

const PONG_TIMEOUT_MS = 60_000;

function subscribeRequest(i: number): Buffer {
  const transactions = Object.fromEntries(subscriberFilters(i).map(([name, f]) => [name, { accountInclude: f.include }]));
  return subscribeFrame({ transactions, pingId: 1 });
}

/**
 * The client kinds to run: FANOUT_BENCH_CLIENT=go|node|go,node; by default go when a Go toolchain is on PATH, else
 * node. `note` says what was chosen and why.
 */
export function loadClientKinds(): { kinds: LoadClientKind[]; note: string } {
  const asked = process.env.FANOUT_BENCH_CLIENT;
  if (asked !== undefined && asked !== '') {
    const kinds = asked.split(',').map((k) => k.trim());
    for (const k of kinds) if (k !== 'go' && k !== 'node') throw new Error(`FANOUT_BENCH_CLIENT: unknown client "${k}" (go or node)`);
    return { kinds: kinds as LoadClientKind[], note: `load client: ${kinds.join(' and ')} (FANOUT_BENCH_CLIENT)` };
  }
  const go = goToolchain();
  return go === null
    ? { kinds: ['node'], note: 'load client: node (no Go toolchain on PATH; the compiled client needs `go`)' }
    : { kinds: ['go'], note: `load client: go (compiled, ${go.replace(/^go version /, '')})` };
}

export async function openLoad(kind: LoadClientKind, address: string, connections: number): Promise<Load> {
  return kind === 'go' ? openGoLoad(address, connections) : openNodeLoad(address, connections);
}

async function openGoLoad(address: string, connections: number): Promise<Load> {
  const requests: Buffer[] = [];
  for (let i = 0; i < WORKLOAD.subscribers; i++) requests.push(subscribeRequest(i));
  const client = await GoLoadClient.start(address, connections, requests).catch((e: unknown) => {
    throw new Error(`the compiled load client did not start (FANOUT_BENCH_CLIENT=node runs the Node one): ${e instanceof Error ? e.message : String(e)}`);
  });
  if (!(await client.ready(PONG_TIMEOUT_MS))) {
    const s = await client.counts();
    await client.close();
    throw new Error(`only ${s.pongs} of ${s.streams} subscribers got their pong${s.status === '' ? '' : ` (${s.status})`}`);
  }
  return {
    kind: 'go',
    received: async () => (await client.counts()).received,
    startRecording: () => client.record(true),
    stopRecording: async () => {
      await client.record(false);
      const s = await client.stats();
      return { count: s.samples, p50: s.p50 ?? Number.NaN, p99: s.p99 ?? Number.NaN };
    },
    cpuMs: async () => {
      const s = await client.counts();
      return { user: s.userMs, sys: s.sysMs };
    },
    close: () => client.close(),
  };
}

async function openNodeLoad(address: string, connections: number): Promise<Load> {
  const conns: RawConnection[] = [];
  const streams: RawStream[] = [];
  let received = 0;
  let samples: number[] = [];
  let recording = false;
  for (let c = 0; c < connections; c++) conns.push(await RawConnection.connect(address, { initialWindowSize: 1 << 20 }, 16 << 20));
  const onMessage = (m: Buffer): void => {
    const t = publishStamp(m);
    if (t === undefined) return;
    received++;
    if (recording) samples.push(nowMs() - t);
  };
  for (let i = 0; i < WORKLOAD.subscribers; i++) {
    const s = conns[i % connections]!.open(onMessage);
    s.req.write(subscribeRequest(i));
    streams.push(s);
  }
  const deadline = Date.now() + PONG_TIMEOUT_MS;
  while (streams.some((s) => s.messages === 0) && Date.now() < deadline) await sleep(20);
  const pongs = streams.filter((s) => s.messages > 0).length;
  if (pongs < streams.length) {
    for (const c of conns) c.destroy();
    throw new Error(`only ${pongs} of ${streams.length} subscribers got their pong`);
  }
  return {
    kind: 'node',
    received: () => Promise.resolve(received),
    startRecording: () => {
      samples = [];
      recording = true;
      return Promise.resolve();
    },
    stopRecording: () => {
      recording = false;
      const s = summarize(samples);
      return Promise.resolve({ count: s.count, p50: s.p50, p99: s.p99 });
    },
    cpuMs: () => {
      const u = process.cpuUsage();
      return Promise.resolve({ user: u.user / 1000, sys: u.system / 1000 });
    },
    close: () => {
      for (const c of conns) c.destroy();
      return Promise.resolve();
    },
  };
}
