// The shred layer's public surface: parse, resolve (dedupe, proofs, leader signature, Reed–Solomon), shred.
export { parseShred, isShredView, type ShredView } from './parse';
export { FecResolver, type FecResolverOptions, type ResolveOutcome } from './fec-resolver';
export type { FecResolverStats } from './resolver-stats';
export { DROP_REASONS, PARSE_REJECTS, RESOLVE_REJECTS, type DropReason, type ParseReject, type ResolveReject } from './drop-reasons';
export { NO_LEADER_CHECK, fixedLeader, type LeaderKeys } from './leader-keys';
export { publicKeyFromSeed, signerFromSeed, verifyEd25519 } from './ed25519';
export { shredBatch, shredEntries, planSets, type ShredBatch, type ShredOptions } from './shredder';
