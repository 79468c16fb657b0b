import crypto from 'node:crypto';
import { OldestFirstMap } from '../../infra/base/oldest-first';

// Ed25519 verification of every signature of a transaction with node:crypto (OpenSSL). node:crypto takes
// KeyObjects, and building one from a raw key (SPKI DER wrap + parse) costs about as much as a verification,
// so KeyObjects are cached per signer: repeat senders (the usual case) pay only the verification.

const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const PUBKEY_SZ = 32;
const SIG_SZ = 64;

export type SignatureCheck = { ok: true } | { ok: false; reason: 'unsigned' | 'invalid_signature'; index: number };

export class SignatureVerifier {
  /** Oldest first in O(1) at the cap (infra/base/oldest-first.ts: a Map's first key walks its deleted entries). */
  private readonly keys = new OldestFirstMap<string, crypto.KeyObject | null>();
  private readonly spki = Buffer.alloc(SPKI_ED25519_PREFIX.length + PUBKEY_SZ);

  constructor(private readonly maxKeys = 65_536) {
    SPKI_ED25519_PREFIX.copy(this.spki);
  }

  /** null = the 32 bytes are not a curve point (no signature by that "key" can verify). */
  private keyObject(raw: Buffer): crypto.KeyObject | null {
    const id = raw.toString('latin1');
    let k = this.keys.get(id);
    if (k !== undefined) return k;
    raw.copy(this.spki, SPKI_ED25519_PREFIX.length);
    try {
      k = crypto.createPublicKey({ key: this.spki, format: 'der', type: 'spki' });
    } catch {
      k = null;
    }
    if (this.keys.size >= this.maxKeys) this.keys.deleteOldest();
    this.keys.set(id, k);
    return k;
  }

  /**
   * Signature i must verify over `message` against signer key i (the first `signatures.length` static keys).
   * An all-zero signature is a missing one (clients serialize partially signed transactions that way).
   */
  verifyAll(signatures: Buffer[], signerKeys: Buffer[], message: Buffer): SignatureCheck {
    for (let i = 0; i < signatures.length; i++) {
      if (isZero(signatures[i]!)) return { ok: false, reason: 'unsigned', index: i };
    }
    for (let i = 0; i < signatures.length; i++) {
      const k = this.keyObject(signerKeys[i]!);
      if (k === null || !crypto.verify(null, message, k, signatures[i]!)) return { ok: false, reason: 'invalid_signature', index: i };
    }
    return { ok: true };
  }

  get cachedKeys(): number {
    return this.keys.size;
  }
}

function isZero(sig: Buffer): boolean {
  for (let i = 0; i < SIG_SZ; i++) if (sig[i] !== 0) return false;
  return true;
}
