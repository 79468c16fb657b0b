// The landed-aware signature cache (service.md, Delivery rules 2–3): a duplicate is suppressed only once its
// signature has been delivered. Until then a resend of the same bytes is forwarded again — that is how
// clients chase a landing. "Delivered" = the signature appeared on `stream.transactions` (delivered-feed.ts).
//
// Keyed by the first signature (the transaction id, and the key of stream.transactions records) as a latin1
// string. Bounded twice: entries older than the window go (a blockhash is valid for ~60–90 s, after which a
// resend cannot land anyway), and past maxEntries the oldest goes (aged-map.ts: insertion order is age order
// because every update re-inserts).

import { AgedMap } from './aged-map';

interface Entry {
  at: number;
  delivered: boolean;
}

export interface SignatureCacheOptions {
  windowMs?: number;
  maxEntries?: number;
  now?: () => number;
}

export class SignatureCache {
  private readonly entries: AgedMap<Entry>;
  private readonly now: () => number;

  constructor(opts: SignatureCacheOptions = {}) {
    this.entries = new AgedMap(opts.windowMs ?? 120_000, opts.maxEntries ?? 200_000);
    this.now = opts.now ?? (() => performance.now());
  }

  static key(signature: Buffer): string {
    return signature.toString('latin1');
  }

  /** True when this signature was forwarded and has since been seen delivered (within the window). */
  isDelivered(key: string): boolean {
    const e = this.entries.get(key);
    if (e === undefined || !e.delivered) return false;
    if (this.entries.expired(e, this.now())) {
      this.entries.delete(key);
      return false;
    }
    return true;
  }

  /** A forward was dispatched for this signature. */
  noteForwarded(key: string): void {
    const t = this.now();
    this.entries.write(key, t, (old) => ({ at: t, delivered: old?.delivered ?? false }));
  }

  /**
   * The signature was seen on the stream. Only signatures this instance forwarded are kept (the stream carries
   * every transaction of the chain; remembering all of them would cost memory for nothing: a transaction we
   * never forwarded is simply forwarded once if someone sends it, and the chain drops it as already processed).
   */
  markDelivered(key: string): boolean {
    const e = this.entries.get(key);
    if (e === undefined || e.delivered) return false;
    this.entries.reinsert(key, { at: this.now(), delivered: true });
    return true;
  }

  get size(): number {
    return this.entries.size;
  }
}
