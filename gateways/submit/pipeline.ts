import type { Rental } from '../../bus/topics/rentals';
import type { RentalRegistry } from '../../bus/rental-registry';
import { newUsageEvent, type UsageEvent } from '../../bus/topics/usage-events';
import type { UsageSink } from '../../bus/usage-producer';
import { decodeTransaction, MAX_TX_SZ } from '../../proto/txn/decode';
import { V1_PREFIX } from '../../proto/txn/v1';
import { submitLimits, type SubmitLimits } from './limits';
import { TXN_REASONS } from '../../proto/txn/reasons';
import { normalizeApiKey } from './api-key';
import type { Forwarder } from './forwarder';
import { SubmitMetrics, type Transport } from './metrics';
import type { Preflight, PreflightOptions } from './preflight';
import { RateLimiter } from './rate-limit';
import { RejectedRepeats } from './rejected-repeats';
import { rejection, type RejectReason } from './rejections';
import { SignatureCache } from './signature-cache';
import { SignatureVerifier } from './signatures';
import { checkTip, type TipRule } from './tip';
import type { TraceStore } from './trace-store';

// One validation pipeline for every transport. A transport frames a request into a Submission, calls
// submit() (or submitNow() when it never preflights), and turns the Outcome into its own answer through the
// rejection table. The stages, in order:
//
//   API key (UUID, looked up per request) → rate limit (rental TPS; a repeat of charged, rejected bytes is not
//   charged again) → size (≤ 1,232; v1 ≤ v1MaxBytes except on UDP) → parse (legacy / v0 / v1, proto/txn's
//   decoder, the one ingest uses) → signature count = header's required signatures → every signature verifies (ed25519, over the
//   message: after the signatures for legacy/v0, before them for v1) → tip rule (top-level instructions) →
//   preflight (when asked) →
//   signature cache (suppress only once delivered) → forward (dispatch only) → answer.
//
// Each submission with a known rental emits one usage event and counts once in the metrics.

export type { Transport } from './metrics';
export type { PreflightOptions, Commitment } from './preflight';
export { MAX_TX_SZ };

export interface Submission {
  /** UUID text as the client gave it (any case); undefined/null = none given. */
  apiKey: string | null | undefined;
  /** The serialized transaction (decoded form). Not kept after the call returns. */
  bytes: Uint8Array;
  transport: Transport;
  /** Present = simulate before forwarding (JSON-RPC with skipPreflight false). */
  preflight?: PreflightOptions;
}

export interface Accepted {
  ok: true;
  /** The first signature, 64 raw bytes (a view into the submitted bytes: encode it before they are reused). */
  signature: Buffer;
  /** false when the signature was already delivered and the duplicate was suppressed. */
  forwarded: boolean;
  /** base58 of the signature when already computed (the trace needs it too): transports answer with it. */
  signatureText?: string;
}

export interface Rejected {
  ok: false;
  reason: RejectReason;
  /** Appended to the table's message after ": " (rejectionMessage()). */
  detail?: string;
  /** JSON-RPC `data` (the full simulation result of a failed preflight). */
  data?: unknown;
}

export type Outcome = Accepted | Rejected;

export type { UsageSink };

export interface PipelineOptions {
  rentals: RentalRegistry;
  forwarder: Forwarder;
  tips: TipRule;
  preflight?: Preflight;
  /** Simulations in flight over all clients at most. */
  maxPreflightInFlight?: number;
  cache?: SignatureCache;
  usage?: UsageSink;
  metrics?: SubmitMetrics;
  rateLimiter?: RateLimiter;
  repeats?: RejectedRepeats;
  verifier?: SignatureVerifier;
  /** Size limits (limits.ts); default = the contract's. */
  limits?: SubmitLimits;
  /** Present = every accepted transaction gets a trace (trace-store.ts). */
  traces?: TraceStore;
}

interface Valid {
  ok: true;
  rental: Rental;
  /** Normalized API key. */
  apiKey: string;
  tx: Buffer;
  signature: Buffer;
  /** The recent blockhash, 32 raw bytes (a view into tx). */
  blockhash: Uint8Array;
}

/** `free`: refused without taking a TPS token (the limit itself, or a repeat of rejected bytes): billed 0 units. */
type Validated = Valid | (Rejected & { rental: Rental | undefined; free?: true });

export class SubmitPipeline {
  readonly cache: SignatureCache;
  readonly metrics: SubmitMetrics;
  readonly limits: SubmitLimits;
  private readonly limiter: RateLimiter;
  private readonly repeats: RejectedRepeats;
  private readonly verifier: SignatureVerifier;
  private readonly maxPreflight: number;
  private preflightInFlight = 0;

  constructor(private readonly opts: PipelineOptions) {
    this.cache = opts.cache ?? new SignatureCache();
    this.metrics = opts.metrics ?? new SubmitMetrics();
    this.limiter = opts.rateLimiter ?? new RateLimiter();
    this.repeats = opts.repeats ?? new RejectedRepeats();
    this.verifier = opts.verifier ?? new SignatureVerifier();
    this.maxPreflight = opts.maxPreflightInFlight ?? 256;
    this.limits = opts.limits ?? submitLimits();
  }

  /** The rental of a key, looked up now (never cached: rentals change live). QUIC calls this at connect. */
  authorize(apiKey: string | null | undefined): Rental | undefined {
    const k = normalizeApiKey(apiKey);
    return k === null ? undefined : this.opts.rentals.byApiKey(k);
  }

  /** Every transport's entry point. Never rejects: failures are Outcomes. */
  async submit(s: Submission): Promise<Outcome> {
    if (s.preflight === undefined) return this.submitNow(s);
    const v = this.validate(s);
    if (!v.ok) return this.finish(s.transport, v.rental, v);
    const pre = await this.runPreflight(v.tx, s.preflight);
    if (pre !== null) {
      this.repeats.remember(v.rental.id, v.tx, pre.reason, pre.detail);
      return this.finish(s.transport, v.rental, pre);
    }
    return this.dispatch(s.transport, v);
  }

  /** The same pipeline without preflight, synchronously (/binary, /plaintext, UDP, QUIC). */
  submitNow(s: Submission): Outcome {
    const v = this.validate(s);
    if (!v.ok) return this.finish(s.transport, v.rental, v);
    return this.dispatch(s.transport, v);
  }

  private validate(s: Submission): Validated {
    const apiKey = normalizeApiKey(s.apiKey);
    const rental = apiKey === null ? undefined : this.opts.rentals.byApiKey(apiKey);
    if (rental === undefined || apiKey === null) return { ok: false, reason: 'unauthorized', rental: undefined };
    const tx = Buffer.isBuffer(s.bytes) ? s.bytes : Buffer.from(s.bytes.buffer, s.bytes.byteOffset, s.bytes.length);

    const repeat = this.repeats.find(rental.id, tx);
    if (repeat !== null && repeat.replay) return { ok: false, reason: repeat.reason, ...(repeat.detail === undefined ? {} : { detail: repeat.detail }), rental, free: true };
    if (repeat === null && !this.limiter.take(rental.id, rental.tps)) return { ok: false, reason: 'rate_limited', rental, free: true };

    const r = this.check(tx, s.transport);
    if (!r.ok) {
      this.repeats.remember(rental.id, tx, r.reason, r.detail);
      return { ...r, rental };
    }
    return { ok: true, rental, apiKey, tx, signature: r.signature, blockhash: r.blockhash };
  }

  /** The stateless stages: size, parse, signature count, signatures, tip. */
  private check(tx: Buffer, transport: Transport): { ok: true; signature: Buffer; blockhash: Uint8Array } | Rejected {
    // A datagram is one packet whatever the version; v1 may be larger where the operator allows it.
    const max = tx[0] === V1_PREFIX && transport !== 'udp' ? this.limits.v1MaxBytes : this.limits.maxTxBytes;
    if (tx.length > max) return { ok: false, reason: 'too_large', detail: `${tx.length} bytes (max ${max})` };
    const d = decodeTransaction(tx, 0n);
    if (!d.ok) {
      if (d.reason === 'no_signatures') return { ok: false, reason: 'unsigned', detail: 'the transaction carries no signatures' };
      if (d.reason === 'signature_count_mismatch') return { ok: false, reason: 'signature_count_mismatch' };
      return { ok: false, reason: 'cannot_deserialize', detail: TXN_REASONS[d.reason] };
    }
    const sigs = d.tx.signatures;
    // The signing payload: after the signatures for legacy/v0, before them for v1 (the decoder knows which).
    const sc = this.verifier.verifyAll(sigs, d.tx.accountKeys, d.message);
    if (!sc.ok) return { ok: false, reason: sc.reason, detail: `signature ${sc.index}` };
    const tip = checkTip(d.tx, this.opts.tips);
    if (!tip.ok) return { ok: false, reason: tip.reason, detail: tip.detail };
    return { ok: true, signature: sigs[0]!, blockhash: d.tx.recentBlockhash };
  }

  private async runPreflight(tx: Buffer, opts: PreflightOptions): Promise<Rejected | null> {
    const p = this.opts.preflight;
    if (p === undefined) return { ok: false, reason: 'preflight_upstream_error' }; // no simulation upstream configured
    if (this.preflightInFlight >= this.maxPreflight) return { ok: false, reason: 'preflight_busy' };
    this.preflightInFlight++;
    try {
      const r = await p.simulate(tx, opts);
      switch (r.kind) {
        case 'ok':
          return null;
        case 'failed':
          return { ok: false, reason: 'preflight_failed', detail: r.error, data: r.data };
        case 'upstream_error':
          return { ok: false, reason: 'preflight_upstream_error' };
        case 'timeout':
          return { ok: false, reason: 'preflight_timeout' };
      }
    } finally {
      this.preflightInFlight--;
    }
  }

  private dispatch(transport: Transport, v: Valid): Outcome {
    const { rental, signature } = v;
    const key = SignatureCache.key(signature);
    const traces = this.opts.traces;
    if (this.cache.isDelivered(key)) {
      this.metrics.count(transport, 'duplicate');
      this.emit(transport, rental, 'ok');
      if (traces === undefined) return { ok: true, signature, forwarded: false };
      const t = traces.accept(key, signature, { transport, rental: rental.id, apiKey: v.apiKey, blockhash: v.blockhash, forwarded: false });
      return { ok: true, signature, forwarded: false, signatureText: t.signature };
    }
    // The trace opens when the first route takes the transaction, before any route reports (forwarder.ts);
    // if none takes it, it was not accepted and has no trace.
    const opening = traces?.opening(key, signature, { transport, rental: rental.id, apiKey: v.apiKey, blockhash: v.blockhash, forwarded: true });
    if (!this.opts.forwarder.forward(v.tx, opening)) {
      const r: Rejected = { ok: false, reason: 'forward_failed' };
      return this.finish(transport, rental, r);
    }
    const signatureText = opening?.signature;
    this.cache.noteForwarded(key);
    this.metrics.count(transport, 'accepted');
    this.emit(transport, rental, 'ok');
    return signatureText === undefined ? { ok: true, signature, forwarded: true } : { ok: true, signature, forwarded: true, signatureText };
  }

  /** Counts and meters a rejection; the answer carries only reason, detail and data (not the rental). */
  private finish(transport: Transport, rental: Rental | undefined, r: Rejected & { free?: true }): Outcome {
    this.metrics.count(transport, r.reason);
    const usage = rejection(r.reason).usage;
    if (rental !== undefined && usage !== null) this.emit(transport, rental, usage, r.free === true ? 0 : 1);
    const o: Rejected = { ok: false, reason: r.reason };
    if (r.detail !== undefined) o.detail = r.detail;
    if (r.data !== undefined) o.data = r.data;
    return o;
  }

  /** Units as the README's usage.events table has them: 1 a submission, 0 one refused without a TPS token. */
  private emit(transport: Transport, rental: Rental, outcome: UsageEvent['outcome'], units = 1): void {
    this.opts.usage?.emit(newUsageEvent({ rental: rental.id, surface: 'submit', method: transport, units, outcome }));
  }
}
