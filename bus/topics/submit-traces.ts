// submit.traces — one event per step of an accepted transaction's life: accepted (each submission, resends
// included), forward (each route's attempt), seen (first seen in shreds), landed (a status from the chain node;
// again when the commitment rises), expired (its blockhash aged out unlanded). JSON on purpose: senders'
// customers and operators consume it in any language; it is not on the stream hot path.
//   key   = the transaction's first signature, base58 (UTF-8), so one transaction's events stay ordered
//   value = UTF-8 JSON of TraceEvent
// Delivery is at-least-once; `id` = `<signature>:<n>` (n = the step's index in its trace) is unique per event
// and stable across redeliveries, so consumers dedupe by it.

export const TRACE_STEPS = ['accepted', 'forward', 'seen', 'landed', 'expired'] as const;
export type TraceStep = (typeof TRACE_STEPS)[number];
export const FORWARD_OUTCOMES = ['ok', 'error', 'skipped'] as const;
export type ForwardOutcome = (typeof FORWARD_OUTCOMES)[number];
export const COMMITMENTS = ['processed', 'confirmed', 'finalized'] as const;
export type Commitment = (typeof COMMITMENTS)[number];

export interface TraceEvent {
  id: string;
  /** ISO-8601 time of the step. */
  time: string;
  signature: string;
  rental: string;
  step: TraceStep;
  /** ms from the first acceptance to this step (0 for the first accepted). */
  sinceAcceptedMs: number;
  /** accepted: the transport (jsonrpc, binary, plaintext, udp, quic). */
  transport?: string;
  /** accepted: submissions of these bytes before this one (0 = first); forwarded: false when suppressed as delivered. */
  resend?: number;
  forwarded?: boolean;
  /** accepted: the slot then (null when not yet known); seen/landed: the slot it appeared or landed in. */
  slot?: number | null;
  /** seen/landed: slot − slot at first acceptance (absent when that was unknown). */
  slotDelta?: number;
  /** forward: the route's name (never its URL), outcome, error and time to the route's answer. */
  route?: string;
  outcome?: ForwardOutcome;
  error?: string;
  ms?: number;
  /** forward on the `tpu` route: the identities (base58 public keys) of the leaders it was handed to. */
  leaders?: string[];
  /** landed: `ok`, or `failed` with err = the chain's TransactionError JSON. */
  status?: 'ok' | 'failed';
  err?: unknown;
  commitment?: Commitment;
  /** expired: the recent blockhash that aged out (base58). */
  blockhash?: string;
}

/** What JSON.stringify escapes in a string (control characters, '"', '\\', and lone surrogates, checked as any surrogate). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * A string as JSON: quoted as is when nothing in it needs escaping (the usual case here: base58, ISO times, step
 * names, route and rental names), else JSON.stringify's escaping. Per string field, JSON.stringify(s) cost more
 * than the whole event's scan (profiled in the traces bench).
 */
function q(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`;
}

/** The last string quoted for one field: consecutive events share their signature, rental and millisecond. */
class LastQuoted {
  private s: string | undefined;
  private quoted = '';
  of(s: string): string {
    if (s !== this.s) {
      this.s = s;
      this.quoted = q(s);
    }
    return this.quoted;
  }
}
/** The enumerated fields' values quoted once (a value outside its list still goes through q()). */
const quotedOf = (list: readonly string[]): Map<string, string> => new Map(list.map((v) => [v, `"${v}"`]));
const QUOTED_STEPS = quotedOf(TRACE_STEPS);
const QUOTED_OUTCOMES = quotedOf(FORWARD_OUTCOMES);
const QUOTED_COMMITMENTS = quotedOf(COMMITMENTS);
const lastSignature = new LastQuoted();
const lastRental = new LastQuoted();
const lastTime = new LastQuoted();

/**
 * The last signature's key bytes: a trace's events come in runs (accepted, then its forward steps), so they share
 * one key buffer. Shared read-only: the bus copies or serializes keys and never writes them.
 */
class LastKey {
  private s: string | undefined;
  private key = Buffer.alloc(0);
  of(s: string): Buffer {
    if (s !== this.s) {
      this.s = s;
      this.key = Buffer.from(s, 'utf8');
    }
    return this.key;
  }
}
const lastKey = new LastKey();

/** A number as JSON.stringify writes it (non-finite → null). */
const num = (n: number): string => (Number.isFinite(n) ? String(n) : 'null');

/**
 * The event's JSON written field by field, in the order trace.ts builds events (so the bytes are those of
 * JSON.stringify of those objects; an object built in another order gives the same JSON with its keys in this
 * order). Measured (test/bench/submit.ts, traces on): JSON.stringify of the object and a Buffer each for key and
 * value were the largest part of what tracing costs per accepted transaction; this writes one string per event
 * (JSON.stringify only for the string fields that need escaping) and one buffer for the value; consecutive
 * events of one trace share their key's buffer.
 */
export function encodeTraceEvent(e: TraceEvent): { key: Buffer; value: Buffer } {
  let s = `{"id":${q(e.id)},"time":${lastTime.of(e.time)},"signature":${lastSignature.of(e.signature)},"rental":${lastRental.of(e.rental)},"step":${QUOTED_STEPS.get(e.step) ?? q(e.step)},"sinceAcceptedMs":${num(e.sinceAcceptedMs)}`;
  if (e.transport !== undefined) s += `,"transport":${q(e.transport)}`;
  if (e.resend !== undefined) s += `,"resend":${num(e.resend)}`;
  if (e.forwarded !== undefined) s += e.forwarded ? ',"forwarded":true' : ',"forwarded":false';
  if (e.slot !== undefined) s += `,"slot":${e.slot === null ? 'null' : num(e.slot)}`;
  if (e.route !== undefined) s += `,"route":${q(e.route)}`;
  if (e.outcome !== undefined) s += `,"outcome":${QUOTED_OUTCOMES.get(e.outcome) ?? q(e.outcome)}`;
  if (e.error !== undefined) s += `,"error":${q(e.error)}`;
  if (e.ms !== undefined) s += `,"ms":${num(e.ms)}`;
  if (e.leaders !== undefined) s += `,"leaders":${JSON.stringify(e.leaders)}`;
  if (e.status !== undefined) s += `,"status":${q(e.status)}`;
  if (e.err !== undefined) {
    const err: string | undefined = JSON.stringify(e.err); // undefined for a function or symbol: omitted, as JSON.stringify omits it
    if (err !== undefined) s += `,"err":${err}`;
  }
  if (e.commitment !== undefined) s += `,"commitment":${QUOTED_COMMITMENTS.get(e.commitment) ?? q(e.commitment)}`;
  if (e.slotDelta !== undefined) s += `,"slotDelta":${num(e.slotDelta)}`;
  if (e.blockhash !== undefined) s += `,"blockhash":${q(e.blockhash)}`;
  s += '}';
  return { key: lastKey.of(e.signature), value: Buffer.from(s, 'utf8') };
}

const has = <T extends string>(list: readonly T[], v: unknown): v is T => typeof v === 'string' && (list as readonly string[]).includes(v);
const optNum = (v: unknown): boolean => v === undefined || (typeof v === 'number' && Number.isFinite(v));
const optStr = (v: unknown): boolean => v === undefined || typeof v === 'string';

/** A result type, not `T | { error }`: a forward event has an `error` field of its own. */
export type TraceEventDecode = { ok: true; event: TraceEvent } | { ok: false; reason: string };

export function decodeTraceEvent(value: Buffer): TraceEventDecode {
  let v: unknown;
  try {
    v = JSON.parse(value.toString('utf8'));
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { ok: false, reason: 'not an object' };
  const o = v as Record<string, unknown>;
  if (typeof o.id !== 'string' || o.id.length === 0) return { ok: false, reason: 'id missing' };
  if (typeof o.time !== 'string' || Number.isNaN(Date.parse(o.time))) return { ok: false, reason: 'time invalid' };
  if (typeof o.signature !== 'string' || o.signature.length === 0) return { ok: false, reason: 'signature missing' };
  if (typeof o.rental !== 'string') return { ok: false, reason: 'rental missing' };
  if (!has(TRACE_STEPS, o.step)) return { ok: false, reason: 'step invalid' };
  if (typeof o.sinceAcceptedMs !== 'number' || !Number.isFinite(o.sinceAcceptedMs)) return { ok: false, reason: 'sinceAcceptedMs invalid' };
  if (o.slot !== undefined && o.slot !== null && !(typeof o.slot === 'number' && Number.isInteger(o.slot) && o.slot >= 0)) return { ok: false, reason: 'slot invalid' };
  if (!optNum(o.slotDelta) || !optNum(o.ms) || !optNum(o.resend)) return { ok: false, reason: 'number field invalid' };
  if (!optStr(o.transport) || !optStr(o.route) || !optStr(o.error) || !optStr(o.blockhash)) return { ok: false, reason: 'string field invalid' };
  if (o.leaders !== undefined && !(Array.isArray(o.leaders) && o.leaders.every((l) => typeof l === 'string'))) return { ok: false, reason: 'leaders invalid' };
  if (o.forwarded !== undefined && typeof o.forwarded !== 'boolean') return { ok: false, reason: 'forwarded invalid' };
  if (o.outcome !== undefined && !has(FORWARD_OUTCOMES, o.outcome)) return { ok: false, reason: 'outcome invalid' };
  if (o.status !== undefined && o.status !== 'ok' && o.status !== 'failed') return { ok: false, reason: 'status invalid' };
  if (o.commitment !== undefined && !has(COMMITMENTS, o.commitment)) return { ok: false, reason: 'commitment invalid' };
  return { ok: true, event: o as unknown as TraceEvent };
}
