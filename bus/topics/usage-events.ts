import { randomUUID } from 'node:crypto';

// usage.events — one event per metered method and request (a JSON-RPC batch of ten getHealth is one event with
// calls 10), or per stream period. JSON on purpose: billing jobs are written in any language, and this topic is
// not on the stream hot path.
//   key   = rental id (UTF-8), so one rental's events stay ordered on one partition
//   value = UTF-8 JSON of UsageEvent, with "v":2 first
// Delivery is at-least-once; `id` is unique per event so consumers dedupe.
//
// Versions (a consumer reads both; the topic holds both until retention ages version 1 out):
//   1  no `v`: one event per call, so `calls` is 1 (what the project wrote up to issue 35).
//   2  `v: 2` and `calls`: the number of calls the event counts, all of the same rental, surface, method, chain and
//      outcome in one request; `units` is their sum. Every version 1 field keeps its name and meaning, so a
//      version 1 reader's unit totals stay exact; only a count of events must read `calls` to count calls.
// A record of a later version is refused ('version unsupported'), never counted as something it is not.

/** The version this codec writes. */
export const USAGE_EVENT_VERSION = 2;

export type Surface = 'stream' | 'rpc' | 'rpc-ws' | 'submit' | 'evm';
export type Outcome = 'ok' | 'rejected' | 'error' | 'rate_limited';

export interface UsageEvent {
  id: string;
  /** ISO-8601 time of the metered request (or the end of the stream period). */
  time: string;
  rental: string;
  surface: Surface;
  method: string;
  /** Calls this event counts (≥ 1; 1 for a version 1 record). */
  calls: number;
  /** Units of all of them together. */
  units: number;
  outcome: Outcome;
  /** EVM chain id (surface `evm` only). */
  chain?: number;
}

const SURFACES: ReadonlySet<string> = new Set<Surface>(['stream', 'rpc', 'rpc-ws', 'submit', 'evm']);
const OUTCOMES: ReadonlySet<string> = new Set<Outcome>(['ok', 'rejected', 'error', 'rate_limited']);

let isoMs = -1;
let isoText = '';

/** The ISO time of now, formatted once per millisecond: every surface emits an event per request. */
function isoNow(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    isoText = new Date(ms).toISOString();
  }
  return isoText;
}

/** Now as a usage event's `time` (ISO-8601), for events of one request to share. */
export function usageTimeNow(): string {
  return isoNow();
}

/** A new event with a fresh id; `calls` defaults to 1, `time` to now (a string is taken as ISO-8601 text as is). */
export function newUsageEvent(e: Omit<UsageEvent, 'id' | 'time' | 'calls'> & { time?: Date | string; calls?: number }): UsageEvent {
  const ev: UsageEvent = { id: randomUUID(), time: e.time === undefined ? isoNow() : typeof e.time === 'string' ? e.time : e.time.toISOString(), rental: e.rental, surface: e.surface, method: e.method, calls: e.calls ?? 1, units: e.units, outcome: e.outcome };
  if (e.chain !== undefined) ev.chain = e.chain;
  return ev;
}

/**
 * Exactly JSON.stringify's text for { v: 2, ...event }, built directly: this runs once per metered method and
 * request on every surface. id and time are generated here (UUID, ISO) and need no escaping; every other string is
 * escaped by JSON.stringify; a non-finite number falls back to the generic path (which writes null, as
 * JSON.stringify does).
 */
function usageJson(e: UsageEvent): string {
  if (!Number.isFinite(e.units) || !Number.isFinite(e.calls) || (e.chain !== undefined && !Number.isFinite(e.chain))) return JSON.stringify({ v: USAGE_EVENT_VERSION, ...e });
  const chain = e.chain === undefined ? '' : `,"chain":${e.chain}`;
  return `{"v":2,"id":${JSON.stringify(e.id)},"time":${JSON.stringify(e.time)},"rental":${JSON.stringify(e.rental)},"surface":${JSON.stringify(e.surface)},"method":${JSON.stringify(e.method)},"calls":${e.calls},"units":${e.units},"outcome":${JSON.stringify(e.outcome)}${chain}}`;
}

export function encodeUsageEvent(e: UsageEvent): { key: Buffer; value: Buffer } {
  return { key: Buffer.from(e.rental, 'utf8'), value: Buffer.from(usageJson(e), 'utf8') };
}

export function decodeUsageEvent(value: Buffer): UsageEvent | { error: string } {
  let v: unknown;
  try {
    v = JSON.parse(value.toString('utf8'));
  } catch {
    return { error: 'not JSON' };
  }
  if (typeof v !== 'object' || v === null) return { error: 'not an object' };
  const o = v as Record<string, unknown>;
  let calls = 1;
  if (o.v !== undefined) {
    if (o.v !== 2) return { error: 'version unsupported' };
    if (typeof o.calls !== 'number' || !Number.isInteger(o.calls) || o.calls < 1) return { error: 'calls invalid' };
    calls = o.calls;
  }
  if (typeof o.id !== 'string' || o.id.length === 0) return { error: 'id missing' };
  if (typeof o.time !== 'string' || Number.isNaN(Date.parse(o.time))) return { error: 'time invalid' };
  if (typeof o.rental !== 'string') return { error: 'rental missing' };
  if (typeof o.surface !== 'string' || !SURFACES.has(o.surface)) return { error: 'surface invalid' };
  if (typeof o.method !== 'string') return { error: 'method missing' };
  if (typeof o.units !== 'number' || !Number.isFinite(o.units) || o.units < 0) return { error: 'units invalid' };
  if (typeof o.outcome !== 'string' || !OUTCOMES.has(o.outcome)) return { error: 'outcome invalid' };
  if (o.chain !== undefined && (typeof o.chain !== 'number' || !Number.isInteger(o.chain) || o.chain < 0)) return { error: 'chain invalid' };
  const ev: UsageEvent = { id: o.id, time: o.time, rental: o.rental, surface: o.surface as Surface, method: o.method, calls, units: o.units, outcome: o.outcome as Outcome };
  if (typeof o.chain === 'number') ev.chain = o.chain;
  return ev;
}
