import { randomUUID } from 'node:crypto';

// usage.events — one event per metered request or stream period. JSON on purpose: billing jobs are written
// in any language, and this topic is not on the stream hot path.
//   key   = rental id (UTF-8), so one rental's events stay ordered on one partition
//   value = UTF-8 JSON of UsageEvent
// Delivery is at-least-once; `id` is unique per event so consumers dedupe.

export type Surface = 'stream' | 'rpc' | 'rpc-ws' | 'submit' | 'evm';
export type Outcome = 'ok' | 'rejected' | 'error' | 'rate_limited';

export interface UsageEvent {
  id: string;
  /** ISO-8601 time of the metered request (or the end of the stream period). */
  time: string;
  rental: string;
  surface: Surface;
  method: string;
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

export function newUsageEvent(e: Omit<UsageEvent, 'id' | 'time'> & { time?: Date }): UsageEvent {
  const ev: UsageEvent = { id: randomUUID(), time: e.time === undefined ? isoNow() : e.time.toISOString(), rental: e.rental, surface: e.surface, method: e.method, units: e.units, outcome: e.outcome };
  if (e.chain !== undefined) ev.chain = e.chain;
  return ev;
}

/**
 * Exactly JSON.stringify's text for a UsageEvent, built directly: this runs once per metered request on every
 * surface. id and time are generated here (UUID, ISO) and need no escaping; every other string is escaped by
 * JSON.stringify; a non-finite number falls back to the generic path (which writes null, as JSON.stringify does).
 */
function usageJson(e: UsageEvent): string {
  if (!Number.isFinite(e.units) || (e.chain !== undefined && !Number.isFinite(e.chain))) return JSON.stringify(e);
  const chain = e.chain === undefined ? '' : `,"chain":${e.chain}`;
  return `{"id":${JSON.stringify(e.id)},"time":${JSON.stringify(e.time)},"rental":${JSON.stringify(e.rental)},"surface":${JSON.stringify(e.surface)},"method":${JSON.stringify(e.method)},"units":${e.units},"outcome":${JSON.stringify(e.outcome)}${chain}}`;
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
  if (typeof o.id !== 'string' || o.id.length === 0) return { error: 'id missing' };
  if (typeof o.time !== 'string' || Number.isNaN(Date.parse(o.time))) return { error: 'time invalid' };
  if (typeof o.rental !== 'string') return { error: 'rental missing' };
  if (typeof o.surface !== 'string' || !SURFACES.has(o.surface)) return { error: 'surface invalid' };
  if (typeof o.method !== 'string') return { error: 'method missing' };
  if (typeof o.units !== 'number' || !Number.isFinite(o.units) || o.units < 0) return { error: 'units invalid' };
  if (typeof o.outcome !== 'string' || !OUTCOMES.has(o.outcome)) return { error: 'outcome invalid' };
  if (o.chain !== undefined && (typeof o.chain !== 'number' || !Number.isInteger(o.chain) || o.chain < 0)) return { error: 'chain invalid' };
  const ev: UsageEvent = { id: o.id, time: o.time, rental: o.rental, surface: o.surface as Surface, method: o.method, units: o.units, outcome: o.outcome as Outcome };
  if (typeof o.chain === 'number') ev.chain = o.chain;
  return ev;
}
