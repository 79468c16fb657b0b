import { Worker } from 'node:worker_threads';
import type { Keypair } from '../../../infra/base/keypair';
import { makeBlock, withSlot, type Block } from './blocks';
import { mutate, Rng } from './mutate';

// A hostile sender on its own thread (so ingest's event loop, on the test's main thread, does not pace it):
// a seeded pool of forged and malformed shreds, sent from one loopback address at a fixed rate, while a good
// feed on another address sends whole blocks at a steady pace. The worker is plain JavaScript (no TypeScript
// loader in a worker thread); the pool is built here, where the project's shredder is.

export type HostileKind = 'random' | 'malformed' | 'forged' | 'duplicate' | 'outside';
export const HOSTILE_KINDS: readonly HostileKind[] = ['random', 'malformed', 'forged', 'duplicate', 'outside'];

export interface HostilePool {
  packets: Buffer[];
  kinds: HostileKind[];
}

/**
 * The mix of the outside test of issue 34: random bytes, mutated shreds (flips, truncation, extension,
 * fields at extremes), forged shreds with a valid header (another key's blocks in the feed's slots, and the
 * feed's own shreds with the slot rewritten), one forged shred repeated, and forgeries far outside the window.
 * `forged` packets get a running counter written into their payload as they are sent, so no two are alike.
 */
export function hostilePool(seed: number, attacker: Keypair, payer: Keypair, genuine: Block, nearSlot: bigint, shredVersion: number, size = 2048): HostilePool {
  const r = new Rng(seed);
  const other = [0n, 3n, 7n, 12n].map((d) => makeBlock(nearSlot + d, attacker, payer, 20, shredVersion).shreds).flat();
  const duplicate = other[5]!;
  const out: HostilePool = { packets: [], kinds: [] };
  for (let i = 0; i < size; i++) {
    const roll = r.int(20);
    let kind: HostileKind;
    let p: Buffer;
    if (roll < 2) {
      kind = 'random';
      p = r.bytes(1 + r.int(1300));
    } else if (roll < 5) {
      kind = 'malformed';
      p = mutate(r, r.pick(other));
    } else if (roll < 16) {
      kind = 'forged';
      p = r.int(2) === 0 ? Buffer.from(r.pick(other)) : withSlot(r.pick(genuine.shreds), nearSlot + BigInt(r.int(40)));
    } else if (roll < 19) {
      kind = 'duplicate';
      p = duplicate;
    } else {
      kind = 'outside';
      p = withSlot(r.pick(other), nearSlot + 100_000n + BigInt(r.int(1000)));
    }
    out.packets.push(p);
    out.kinds.push(kind);
  }
  return out;
}

export interface FloodPlan {
  port: number;
  /** Loopback addresses of the hostile sender and of the good feed (Linux routes all of 127/8 to lo). */
  hostileAddress: string;
  feedAddress: string;
  pool: HostilePool;
  ratePerS: number;
  /** Good blocks sent during the flood, one every blockEveryMs (its shreds spread over it); the flood goes on for tailMs after the last. */
  blocks: Buffer[][];
  blockEveryMs: number;
  tailMs: number;
}

export interface FloodReport {
  hostileSent: number;
  goodSent: number;
  floodMs: number;
  byKind: Record<string, number>;
}

const WORKER = `
const { parentPort, workerData: w } = require('node:worker_threads');
const dgram = require('node:dgram');
const bind = (addr) => new Promise((res) => { const s = dgram.createSocket('udp4'); s.bind(0, addr, () => res(s)); });
(async () => {
  const hostile = await bind(w.hostileAddress);
  const feed = await bind(w.feedAddress);
  const pool = w.packets.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength));
  const byKind = {};
  let hostileSent = 0, goodSent = 0, counter = 0, next = 0;
  const t0 = performance.now();
  const endMs = (w.blocks.length + 3) * w.blockEveryMs + w.tailMs;
  // The feed streams each block's shreds across SPREAD intervals, so consecutive blocks overlap as turbine's
  // slots do, and a stall of the receiver takes a part of several blocks rather than all of one.
  const SPREAD = 4;
  const good = [];
  w.blocks.forEach((b, k) => b.forEach((s, j) => good.push({ at: (k + (SPREAD * j) / b.length) * w.blockEveryMs, s })));
  good.sort((x, y) => x.at - y.at);
  let nextGood = 0;
  await new Promise((done) => {
    const tick = () => {
      const el = performance.now() - t0;
      if (el >= endMs) return done();
      while (nextGood < good.length && el >= good[nextGood].at) {
        feed.send(good[nextGood++].s, w.port, '127.0.0.1');
        goodSent++;
      }
      const due = Math.floor((el * w.ratePerS) / 1000);
      for (let n = 0; hostileSent < due && n < 2000; n++) {
        const i = next++ % pool.length;
        const kind = w.kinds[i];
        const p = pool[i];
        // A running counter in the payload (inside what the leaf hashes): no two forged packets alike.
        if (kind === 'forged') p.writeUInt32LE(counter++ >>> 0, p.length - 300);
        hostile.send(p, w.port, '127.0.0.1');
        byKind[kind] = (byKind[kind] || 0) + 1;
        hostileSent++;
      }
      setTimeout(tick, 1); // a 1 ms tick: the sender sleeps between bursts instead of spinning a core
    };
    tick();
  });
  const floodMs = performance.now() - t0;
  hostile.close();
  feed.close();
  parentPort.postMessage({ hostileSent, goodSent, floodMs, byKind });
})();
`;

/** Runs the plan on a worker thread; resolves with what was sent once the flood is over. */
export function runFlood(plan: FloodPlan): Promise<FloodReport> {
  const w = new Worker(WORKER, {
    eval: true,
    workerData: {
      port: plan.port, hostileAddress: plan.hostileAddress, feedAddress: plan.feedAddress, ratePerS: plan.ratePerS,
      packets: plan.pool.packets.map((p) => new Uint8Array(p)), kinds: plan.pool.kinds,
      blocks: plan.blocks.map((b) => b.map((s) => new Uint8Array(s))), blockEveryMs: plan.blockEveryMs, tailMs: plan.tailMs,
    },
  });
  return new Promise((resolve, reject) => {
    w.once('message', (m: FloodReport) => resolve(m));
    w.once('error', reject);
    w.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`flood worker exited with ${code}`))));
  });
}
