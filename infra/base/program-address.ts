import crypto from 'node:crypto';

// Solana program-derived addresses (solana-pubkey's create_program_address / find_program_address): the
// SHA-256 of seeds ‖ program id ‖ "ProgramDerivedAddress", accepted only when it is NOT a point of the ed25519
// curve (so no private key can sign for it); find tries bump seeds 255 down to 0, appended as the last seed.

const PDA_MARKER = Buffer.from('ProgramDerivedAddress');
const MAX_SEED_LEN = 32;
const MAX_SEEDS = 16;

// Curve25519 field and the twisted Edwards constant d = -121665/121666 (RFC 8032 §5.1).
const P = 2n ** 255n - 19n;

function modPow(b: bigint, e: bigint): bigint {
  let r = 1n;
  b %= P;
  while (e > 0n) {
    if (e & 1n) r = (r * b) % P;
    b = (b * b) % P;
    e >>= 1n;
  }
  return r;
}

const D = (((-121665n * modPow(121666n, P - 2n)) % P) + P) % P;

/**
 * Whether the 32 bytes decompress to a curve point (RFC 8032 §5.1.3): y from the low 255 bits (little-endian),
 * x² = (y² − 1) / (d·y² + 1) must be a square mod p. As curve25519-dalek's decompress, y is not required to be
 * canonical (< p).
 */
export function isOnCurve(b: Uint8Array): boolean {
  let y = 0n;
  for (let i = 31; i >= 0; i--) y = (y << 8n) | BigInt(i === 31 ? b[i]! & 0x7f : b[i]!);
  y %= P;
  const y2 = (y * y) % P;
  const u = (y2 - 1n + P) % P;
  const v = (D * y2 + 1n) % P;
  const x2 = (u * modPow(v, P - 2n)) % P;
  if (x2 === 0n) return (b[31]! & 0x80) === 0; // x = 0 has no negative: sign bit 1 does not decompress
  return modPow(x2, (P - 1n) / 2n) === 1n;
}

export function createProgramAddress(seeds: readonly Uint8Array[], programId: Uint8Array): Buffer | null {
  if (seeds.length > MAX_SEEDS || seeds.some((s) => s.length > MAX_SEED_LEN)) return null;
  const h = crypto.createHash('sha256');
  for (const s of seeds) h.update(s);
  const out = h.update(programId).update(PDA_MARKER).digest();
  return isOnCurve(out) ? null : out;
}

export function findProgramAddress(seeds: readonly Uint8Array[], programId: Uint8Array): { address: Buffer; bump: number } {
  for (let bump = 255; bump >= 0; bump--) {
    const address = createProgramAddress([...seeds, Uint8Array.of(bump)], programId);
    if (address !== null) return { address, bump };
  }
  throw new Error('no program address found for these seeds');
}
