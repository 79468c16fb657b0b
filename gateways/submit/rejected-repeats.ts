import crypto from 'node:crypto';
import { AgedMap } from './aged-map';
import type { RejectReason } from './rejections';

// compat.md: the QUIC SDK retries every failed send once after a reconnect, so a rejected transaction arrives
// twice; the repeat must not be charged again against the rate limit the first attempt already paid. This
// remembers, for a short window, the exact bytes of charged rejections per rental. A repeat is recognised by
// its first 64 bytes after the signature count (the first signature) plus its length, then confirmed by a
// SHA-256 of all its bytes, so different bytes that merely share a signature never ride for free. Only the
// digest is kept (32 bytes an entry, whatever the size of what was sent: an oversized UDP datagram included).
// Deterministic rejections (size, parse, signatures, tip) are replayed as they are; the others (preflight,
// forward queue) run again uncharged, once.

const DETERMINISTIC: ReadonlySet<RejectReason> = new Set<RejectReason>([
  'too_large', 'cannot_deserialize', 'signature_count_mismatch', 'unsigned', 'invalid_signature', 'missing_tip', 'tip_too_small',
]);

interface Entry {
  rental: string;
  digest: Buffer;
  reason: RejectReason;
  detail: string | undefined;
  at: number;
}

export type Repeat = { replay: true; reason: RejectReason; detail: string | undefined } | { replay: false };

const NOT_A_REPEAT = null;
const RERUN: Repeat = { replay: false };

function digest(bytes: Buffer): Buffer {
  return crypto.createHash('sha256').update(bytes).digest();
}

export class RejectedRepeats {
  /** Age-ordered, swept and bounded on write (aged-map.ts). */
  private readonly entries: AgedMap<Entry>;

  constructor(
    windowMs = 10_000,
    maxEntries = 20_000,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.entries = new AgedMap(windowMs, maxEntries);
  }

  private static key(bytes: Buffer): string {
    return bytes.toString('latin1', 1, Math.min(bytes.length, 65)) + bytes.length;
  }

  /** A remembered charged rejection of these exact bytes for this rental, or null. */
  find(rental: string, bytes: Buffer): Repeat | null {
    if (this.entries.size === 0) return NOT_A_REPEAT;
    const k = RejectedRepeats.key(bytes);
    const e = this.entries.get(k);
    if (e === undefined) return NOT_A_REPEAT;
    if (this.entries.expired(e, this.now())) {
      this.entries.delete(k);
      return NOT_A_REPEAT;
    }
    if (e.rental !== rental || !e.digest.equals(digest(bytes))) return NOT_A_REPEAT;
    if (DETERMINISTIC.has(e.reason)) return { replay: true, reason: e.reason, detail: e.detail };
    this.entries.delete(k); // non-deterministic outcome: one uncharged rerun
    return RERUN;
  }

  /** Remembers a rejection that was charged (by digest: the caller's buffer may be reused). */
  remember(rental: string, bytes: Buffer, reason: RejectReason, detail: string | undefined): void {
    const t = this.now();
    this.entries.write(RejectedRepeats.key(bytes), t, () => ({ rental, digest: digest(bytes), reason, detail, at: t }));
  }

  get size(): number {
    return this.entries.size;
  }
}
