import type { Commitment, ForwardOutcome, TraceEvent } from '../../bus/topics/submit-traces';
import { encodeBase58 } from './base58';

// The trace of one accepted transaction, keyed by its first signature: pure state and transitions, no I/O and
// no clock (every transition takes `now`, ms since epoch). Each transition that changes something returns the
// event for `submit.traces`; the store (trace-store.ts) bounds how many traces live and for how long.
//
//   accepted ──► forward (per route, per submission) ──► seen (first in shreds) ──► landed (rising commitment)
//        └────────────────────────────────────────────────────────────────────────► expired (blockhash aged out)
//
// A resend of the same bytes joins the trace (another `accepted`, and its own forwards); slot delta and
// latencies count from the first acceptance, the moment the customer handed the transaction over.

export interface ForwardAttempt {
  route: string;
  at: number;
  outcome: ForwardOutcome;
  error?: string;
  ms?: number;
  /** `tpu`: the leaders' identities (public keys) it was handed to (or, on error, meant for). */
  leaders?: string[];
}

export interface Landing {
  at: number;
  slot: number;
  status: 'ok' | 'failed';
  err: unknown;
  commitment: Commitment;
}

export type TraceState = 'pending' | 'landed' | 'failed' | 'expired';

/** Forward attempts kept per trace at most (resends × routes); later ones still count in metrics and events. */
export const MAX_FORWARDS_KEPT = 64;
/** Distinct API keys remembered per trace (the same bytes sent by several keys of one customer). */
export const MAX_KEYS_PER_TRACE = 8;

const RANK: Record<Commitment, number> = { processed: 0, confirmed: 1, finalized: 2 };

export function commitmentAtLeast(c: Commitment, target: Commitment): boolean {
  return RANK[c] >= RANK[target];
}

/** What a trace without attempts, or without a successful route, holds: one shared empty list each, frozen (the
 *  code below replaces it with a list of its own before the first push). */
const NO_FORWARDS = Object.freeze([]) as unknown as ForwardAttempt[];
const NO_ROUTES = Object.freeze([]) as unknown as string[];

export class Trace {
  readonly keys: string[];
  // A trace lives for minutes beside up to maxTraces others (100k by default), so what it holds is what every
  // collection of the heap walks: the lists below are made with their first member, sized to it (an empty array
  // grows to 17 slots at its first push, and a Set carries a hash table).
  private fw: ForwardAttempt[] = NO_FORWARDS;
  private ok: string[] = NO_ROUTES;
  submissions = 1;
  seen: { at: number; slot: number } | null = null;
  landing: Landing | null = null;
  expiredAt: number | null = null;
  /** Events emitted so far (the next event's index, part of its id). */
  private steps = 0;

  constructor(
    /** base58 of the first signature. */
    readonly signature: string,
    readonly rental: string,
    apiKey: string,
    readonly transport: string,
    /** Wall clock ms of the first acceptance. */
    readonly acceptedAt: number,
    /** The slot at first acceptance, null when the service had not learnt one yet. */
    readonly acceptedSlot: number | null,
    /** The recent blockhash's 32 bytes as latin1 (what expiry is judged by; grouping key for the poller). */
    readonly blockhashKey: string,
  ) {
    this.keys = [apiKey];
  }

  private blockhash58: string | undefined;

  /** The forward attempts kept (MAX_FORWARDS_KEPT at most), in the order reported. */
  get forwards(): readonly ForwardAttempt[] {
    return this.fw;
  }

  /** Routes whose attempt succeeded at least once (landing is attributed to them), in the order they first did. */
  get routesOk(): readonly string[] {
    return this.ok;
  }

  /** base58 of the recent blockhash, made on first use (most traces land and never need it). */
  get blockhash(): string {
    return (this.blockhash58 ??= encodeBase58(Buffer.from(this.blockhashKey, 'latin1')));
  }

  get state(): TraceState {
    if (this.landing !== null) return this.landing.status === 'ok' ? 'landed' : 'failed';
    return this.expiredAt === null ? 'pending' : 'expired';
  }

  /** Landed or expired: nothing more will change, except a landing's commitment rising. */
  get settled(): boolean {
    return this.landing !== null || this.expiredAt !== null;
  }

  slotDeltaOf(slot: number): number | undefined {
    return this.acceptedSlot === null ? undefined : slot - this.acceptedSlot;
  }

  /** The first acceptance's event (the constructor's transition). */
  firstEvent(forwarded: boolean): TraceEvent {
    const e = this.event(this.acceptedAt, 'accepted');
    e.transport = this.transport;
    e.resend = 0;
    e.forwarded = forwarded;
    e.slot = this.acceptedSlot;
    return e;
  }

  /** The same bytes accepted again. */
  resent(now: number, transport: string, apiKey: string, forwarded: boolean, slot: number | null): TraceEvent {
    if (!this.keys.includes(apiKey) && this.keys.length < MAX_KEYS_PER_TRACE) this.keys.push(apiKey);
    const e = this.event(now, 'accepted');
    e.transport = transport;
    e.resend = this.submissions++;
    e.forwarded = forwarded;
    e.slot = slot;
    return e;
  }

  forwarded(now: number, route: string, outcome: ForwardOutcome, error?: string, ms?: number, leaders?: string[]): TraceEvent {
    const rounded = ms === undefined ? undefined : Math.round(ms * 100) / 100;
    // Only kept attempts need an object of their own (a resent transaction's later attempts are events only).
    if (this.fw.length < MAX_FORWARDS_KEPT) {
      const a: ForwardAttempt = { route, at: now, outcome };
      if (error !== undefined) a.error = error;
      if (rounded !== undefined) a.ms = rounded;
      if (leaders !== undefined) a.leaders = leaders;
      if (this.fw === NO_FORWARDS) this.fw = [a];
      else this.fw.push(a);
    }
    if (outcome === 'ok' && !this.ok.includes(route)) {
      if (this.ok === NO_ROUTES) this.ok = [route];
      else this.ok.push(route);
    }
    const e = this.event(now, 'forward');
    e.route = route;
    e.outcome = outcome;
    if (error !== undefined) e.error = error;
    if (rounded !== undefined) e.ms = rounded;
    if (leaders !== undefined) e.leaders = leaders;
    return e;
  }

  /** First seen in shreds; null when already seen. `at` = when ingest observed the shreds. */
  seenInShreds(at: number, slot: number): TraceEvent | null {
    if (this.seen !== null) return null;
    this.seen = { at, slot };
    const e = this.event(at, 'seen');
    e.slot = slot;
    return this.withDelta(e, slot);
  }

  /** A status from the chain node; an event when it is new or its commitment rose, else null. */
  landed(now: number, slot: number, err: unknown, commitment: Commitment): TraceEvent | null {
    const prev = this.landing;
    if (prev !== null && RANK[commitment] <= RANK[prev.commitment]) return null;
    const status = err === null || err === undefined ? 'ok' : 'failed';
    this.landing = { at: prev?.at ?? now, slot, status, err: err ?? null, commitment };
    this.expiredAt = null; // a status outranks an expiry judged from a lagging view
    const e = this.event(now, 'landed');
    e.slot = slot;
    e.status = status;
    e.err = err ?? null;
    e.commitment = commitment;
    return this.withDelta(e, slot);
  }

  /** The blockhash aged out and no status was found after that; null when it already landed or expired. */
  expired(now: number): TraceEvent | null {
    if (this.settled) return null;
    this.expiredAt = now;
    const e = this.event(now, 'expired');
    e.blockhash = this.blockhash;
    return e;
  }

  private withDelta(e: TraceEvent, slot: number): TraceEvent {
    const d = this.slotDeltaOf(slot);
    if (d !== undefined) e.slotDelta = d;
    return e;
  }

  /**
   * The fields every event has; the step's own are assigned after, in the order encodeTraceEvent writes them
   * (a spread of a fields object cost an object and a copy per event on the accept path).
   */
  private event(at: number, step: TraceEvent['step']): TraceEvent {
    return {
      id: `${this.signature}:${this.steps++}`,
      time: iso(at),
      signature: this.signature,
      rental: this.rental,
      step,
      sinceAcceptedMs: Math.max(0, Math.round(at - this.acceptedAt)),
    };
  }

  /** The customer's view (GET /trace): no API keys, no rental internals. */
  view(): TraceView {
    const v: TraceView = {
      signature: this.signature,
      state: this.state,
      accepted: { time: iso(this.acceptedAt), transport: this.transport, slot: this.acceptedSlot, submissions: this.submissions },
      forwards: this.forwards.map((f) => ({ ...f, at: iso(f.at) })),
      seen: null,
      landed: null,
      expired: null,
    };
    if (this.seen !== null) v.seen = { time: iso(this.seen.at), slot: this.seen.slot, slotDelta: this.slotDeltaOf(this.seen.slot) ?? null, sinceAcceptedMs: Math.round(this.seen.at - this.acceptedAt) };
    const l = this.landing;
    if (l !== null) {
      v.landed = { time: iso(l.at), slot: l.slot, status: l.status, err: l.err, commitment: l.commitment, slotDelta: this.slotDeltaOf(l.slot) ?? null, sinceAcceptedMs: Math.round(l.at - this.acceptedAt), sinceSeenMs: this.seen === null ? null : Math.round(l.at - this.seen.at) };
    }
    if (this.expiredAt !== null) v.expired = { time: iso(this.expiredAt), blockhash: this.blockhash, sinceAcceptedMs: Math.round(this.expiredAt - this.acceptedAt) };
    return v;
  }
}

let isoMs = -1;
let isoText = '';

/** ISO text of a wall-clock ms, the last one cached: a burst of events shares its millisecond. */
function iso(ms: number): string {
  if (ms !== isoMs) {
    isoMs = ms;
    isoText = new Date(ms).toISOString();
  }
  return isoText;
}

export interface TraceView {
  signature: string;
  state: TraceState;
  accepted: { time: string; transport: string; slot: number | null; submissions: number };
  forwards: Array<Omit<ForwardAttempt, 'at'> & { at: string }>;
  seen: { time: string; slot: number; slotDelta: number | null; sinceAcceptedMs: number } | null;
  landed: { time: string; slot: number; status: 'ok' | 'failed'; err: unknown; commitment: Commitment; slotDelta: number | null; sinceAcceptedMs: number; sinceSeenMs: number | null } | null;
  expired: { time: string; blockhash: string; sinceAcceptedMs: number } | null;
}
