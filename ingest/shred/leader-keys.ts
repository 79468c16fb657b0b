// Who signs a slot's shreds. The resolver asks once per FEC set (not per shred). Answers:
//   Buffer    — the slot leader's 32-byte public key: verify the set's root against it;
//   null      — no check for this slot (the check is off);
//   'unknown' — the check is on but the schedule does not cover the slot (yet): the shred is dropped as
//               'leader_unknown' rather than held, which keeps the resolver simple and spoof-proof.

import bs58 from 'bs58';

export interface LeaderKeys {
  leaderFor(slot: number): Buffer | null | 'unknown';
}

/** The check is off: every slot answers null. */
export const NO_LEADER_CHECK: LeaderKeys = { leaderFor: () => null };

/** One key for every slot (a local cluster, a test, a capture from a known leader). */
export function fixedLeader(publicKey: Buffer | string): LeaderKeys {
  const key = typeof publicKey === 'string' ? Buffer.from(bs58.decode(publicKey)) : publicKey;
  if (key.length !== 32) throw new RangeError(`leader key must be 32 bytes, got ${key.length}`);
  return { leaderFor: () => key };
}
