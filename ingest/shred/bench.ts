// A small API for benchmarks: make a realistic shred stream (signed, chained, with loss) and push it through
// parse + resolve (dedupe, proof, leader signature, Reed–Solomon) on this thread, timing it. The benchmark
// runner decides sizes; nothing here reads fixtures.

import crypto from 'node:crypto';
import type { CompletedFecSet } from '../fec-set';
import { publicKeyFromSeed } from './ed25519';
import { FecResolver } from './fec-resolver';
import { fixedLeader } from './leader-keys';
import { shredBatch } from './shredder';

export interface SyntheticShreds {
  packets: Buffer[];
  leaderPubkey: Buffer;
  shredVersion: number;
  /** Sets made (before loss). */
  sets: number;
}

export interface SyntheticOptions {
  /** Slots to make; each is one batch ending the slot (default 4). */
  slots?: number;
  /** Entry bytes per slot (default ~8 chained sets + the resigned one). */
  bytesPerSlot?: number;
  /** Fraction of packets dropped at random (default 0). Sets keep ≥ 32 shards at realistic rates. */
  lossRate?: number;
  /** Seeds the entry bytes, the leader key and the loss pattern (default 1). */
  seed?: number;
  /** Interleave data and code shreds of a set randomly, as turbine delivers them (default true). */
  shuffle?: boolean;
  firstSlot?: number;
}

/** Deterministic PRNG (mulberry32): benchmarks compare runs, so the stream must not change between them. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function makeSyntheticShreds(opts: SyntheticOptions = {}): SyntheticShreds {
  const seed = opts.seed ?? 1;
  const rand = rng(seed);
  const leaderSeed = crypto.createHash('sha256').update(`meridian bench leader ${seed}`).digest();
  const shredVersion = 50093;
  const bytes = opts.bytesPerSlot ?? 8 * 30_816 + 28_768;
  const packets: Buffer[] = [];
  let sets = 0;
  let chainedRoot: Buffer = Buffer.alloc(32);
  const first = opts.firstSlot ?? 1000;
  for (let s = 0; s < (opts.slots ?? 4); s++) {
    const entries = Buffer.allocUnsafe(bytes);
    for (let i = 0; i < bytes; i++) entries[i] = (rand() * 256) | 0;
    const batch = shredBatch(entries, { slot: first + s, parentOffset: 1, shredVersion, fecSetIndexStart: 0, chainedRoot, leaderSeed32: leaderSeed, lastInSlot: true });
    chainedRoot = batch.merkleRoots[batch.merkleRoots.length - 1]!;
    sets += batch.merkleRoots.length;
    for (let k = 0; k < batch.shreds.length; k += 64) {
      const set = batch.shreds.slice(k, k + 64);
      if (opts.shuffle ?? true) {
        for (let i = set.length - 1; i > 0; i--) {
          const j = Math.floor(rand() * (i + 1));
          [set[i], set[j]] = [set[j]!, set[i]!];
        }
      }
      for (const p of set) if (rand() >= (opts.lossRate ?? 0)) packets.push(p);
    }
  }
  return { packets, leaderPubkey: publicKeyFromSeed(leaderSeed), shredVersion, sets };
}

export interface ResolveRun {
  shreds: number;
  completedSets: number;
  recoveredShreds: number;
  elapsedMs: number;
  shredsPerSec: number;
}

/** Parse + resolve every packet once, with the leader check on or off; optional sink for completed sets. */
export function runResolver(input: SyntheticShreds, opts: { leaderCheck?: boolean; onSet?: (s: CompletedFecSet) => void } = {}): ResolveRun {
  const r = new FecResolver({ shredVersion: input.shredVersion, leaders: (opts.leaderCheck ?? true) ? fixedLeader(input.leaderPubkey) : null });
  let completedSets = 0;
  let recoveredShreds = 0;
  const t0 = process.hrtime.bigint();
  for (const p of input.packets) {
    const o = r.push(p, 0);
    if (o.kind === 'completes') {
      completedSets++;
      recoveredShreds += o.set.recoveredData;
      opts.onSet?.(o.set);
    }
  }
  const elapsedMs = Number(process.hrtime.bigint() - t0) / 1e6;
  return { shreds: input.packets.length, completedSets, recoveredShreds, elapsedMs, shredsPerSec: input.packets.length / (elapsedMs / 1000) };
}
