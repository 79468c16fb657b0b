import { DATA_SHREDS_PER_SET, type CompletedFecSet } from '../../../ingest/fec-set';

// Synthetic CompletedFecSets (what the FEC resolver hands to reassembly), for unit tests that should not
// depend on shred parsing.

/** Entry bytes per data shred in a chained set: data buffer 88..1051. */
export const CHUNK = 963;

/** Splits one batch payload over consecutive sets starting at `fec`; the last set carries DATA_COMPLETE. */
export function setsFor(slot: bigint, fec: number, payload: Buffer, opts: { lastInSlot?: boolean; firstSeenMs?: number } = {}): CompletedFecSet[] {
  const perSet = CHUNK * DATA_SHREDS_PER_SET;
  const n = Math.max(1, Math.ceil(payload.length / perSet));
  const sets: CompletedFecSet[] = [];
  for (let s = 0; s < n; s++) {
    const payloads: Buffer[] = [];
    for (let i = 0; i < DATA_SHREDS_PER_SET; i++) {
      const from = Math.min(payload.length, s * perSet + i * CHUNK);
      payloads.push(payload.subarray(from, Math.min(payload.length, from + CHUNK)));
    }
    const last = s === n - 1;
    const flags = new Uint8Array(DATA_SHREDS_PER_SET);
    if (last) flags[DATA_SHREDS_PER_SET - 1] = opts.lastInSlot === true ? 0xc0 : 0x40;
    sets.push({
      slot,
      fecSetIndex: fec + s * DATA_SHREDS_PER_SET,
      parentOffset: 1,
      merkleRoot: Buffer.alloc(32, s),
      chainedMerkleRoot: Buffer.alloc(32),
      payloads,
      flags,
      dataComplete: last,
      lastInSlot: last && opts.lastInSlot === true,
      recoveredData: 0,
      resigned: last && opts.lastInSlot === true,
      firstSeenMs: (opts.firstSeenMs ?? 1000) + s,
      completedMs: (opts.firstSeenMs ?? 1000) + s + 0.5,
    });
  }
  return sets;
}
