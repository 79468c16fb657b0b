import crypto from 'node:crypto';

// Ed25519 from a raw 32-byte seed with node:crypto (no dependency): wrap the seed in the fixed PKCS#8 prefix.
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export interface Keypair {
  seed: Buffer;
  publicKey: Buffer;
  privateKey: crypto.KeyObject;
}

export function keypairFromSeed(seed: Buffer): Keypair {
  if (seed.length !== 32) throw new RangeError('ed25519 seed must be 32 bytes');
  const privateKey = crypto.createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  const spki = crypto.createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  return { seed, publicKey: Buffer.from(spki.subarray(SPKI_ED25519_PREFIX.length)), privateKey };
}

export function randomKeypair(): Keypair {
  return keypairFromSeed(crypto.randomBytes(32));
}

export function sign(kp: Keypair, message: Buffer): Buffer {
  return crypto.sign(null, message, kp.privateKey);
}
