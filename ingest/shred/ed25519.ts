// Ed25519 for shreds with node:crypto only. Keys travel as raw 32-byte values (the Solana form); node:crypto
// wants KeyObjects, so raw keys are wrapped in the fixed DER prefixes (PKCS#8 for a seed, SPKI for a public key)
// and public KeyObjects are cached: building one costs more than half a verification.

import crypto from 'node:crypto';
import { keypairFromSeed } from '../../infra/base/keypair';

const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const ED25519_KEY_SZ = 32;
const ED25519_SIG_SZ = 64;
const KEY_CACHE_MAX = 4096;
const keyCache = new Map<string, crypto.KeyObject>();

/** The public key of a 32-byte ed25519 seed (pure: same seed, same key). */
export function publicKeyFromSeed(seed: Buffer): Buffer {
  return keypairFromSeed(seed).publicKey;
}

/** A signing function over a 32-byte seed; ed25519 is deterministic, so equal inputs give equal signatures. */
export function signerFromSeed(seed: Buffer): (message: Uint8Array) => Buffer {
  const { privateKey } = keypairFromSeed(seed);
  return (message) => crypto.sign(null, message, privateKey);
}

function publicKeyObject(raw: Uint8Array): crypto.KeyObject {
  const id = Buffer.from(raw.buffer, raw.byteOffset, raw.length).toString('latin1');
  let k = keyCache.get(id);
  if (k === undefined) {
    k = crypto.createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, raw]), format: 'der', type: 'spki' });
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.delete(keyCache.keys().next().value!);
    keyCache.set(id, k);
  }
  return k;
}

/** False (never a throw) for malformed keys or signatures: these come from the wire. */
export function verifyEd25519(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey.length !== ED25519_KEY_SZ || signature.length !== ED25519_SIG_SZ) return false;
  try {
    return crypto.verify(null, message, publicKeyObject(publicKey), signature);
  } catch {
    return false; // a 32-byte string that is not a curve point
  }
}
