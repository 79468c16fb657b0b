import bs58 from 'bs58';
import { streamError, type ListKind, type StreamError } from '../errors';
import { KeyList32, equal32, hash32 } from './key32';
import { decode58Into } from './pubkey58';
import type { WireKeys } from './wire-keys';
import { compileExtra, DEFAULT_FILTER_PART_LIMITS, extraDigest, extraKeyCount, instructionFilterCount, type CompiledExtra, type FilterExtraSpec, type FilterPartLimits } from './compile-extra';

// Compile a request's filter map once, at subscribe time (STYLE habit 8): validate every limit and key here,
// so matching never meets a bad key and never re-parses base58. A compiled list is its keys' 32 raw bytes each
// in one block (key32.ts): no string or object per key, and the index hashes those bytes itself.

export const PUBKEY_LEN = 32;

/** A list of base58 keys: strings, or the request's bytes with offsets (request-wire.ts, no strings made). */
export type KeyList = readonly string[] | WireKeys;

/**
 * What a filter asks for besides its keys (stream v2; a v1 filter has none): compiled into the set's masks, so
 * the hub reads one bit per filter and a new option is a field here and a mask below.
 */
export interface FilterOptions {
  /** TRANSACTION_ENCODING_RAW (from stream.entries), DECODED, or the stream's (its Start's) choice. */
  encoding: 'raw' | 'decoded' | 'default';
  /** match_loaded_addresses: also match what the transaction loads through lookup tables. */
  matchLoaded: boolean;
}

/** The bits (of a match mask over the set) of the filters with each option. */
export interface FilterMasks {
  raw: number;
  /** Encoding left to the stream: RAW on a RAW stream, else DECODED. */
  default: number;
  loaded: number;
}

const NO_MASKS: FilterMasks = { raw: 0, default: 0, loaded: 0 };

/** One named filter as the client sent it. */
export interface FilterSpec {
  include: KeyList;
  exclude: KeyList;
  required: KeyList;
  /** A digest of the filter's wire bytes, when it came off the wire: equal digests = unchanged filter. */
  digest?: string;
  options?: FilterOptions;
  /** v2: instruction filters, role lists, signature, vote (compile-extra.ts); absent or empty: accounts only. */
  extra?: FilterExtraSpec;
}

export interface FilterLimits {
  maxFilters: number;
  maxKeysPerList: number;
  maxFilterNameLen: number;
  /** Limits of the v2 parts beyond account lists; absent: the defaults (compile-extra.ts). */
  parts?: FilterPartLimits;
}

/** The most filters a set can hold: matched filters travel as bits of a 32-bit mask. */
export const MAX_FILTERS_PER_SET = 32;

export interface CompiledFilter {
  name: string;
  /** Position in the set (bit in a match mask). */
  slot: number;
  include: KeyList32;
  exclude: KeyList32;
  required: KeyList32;
  /** What it was compiled from, to tell an unchanged filter in the next update. */
  spec?: FilterSpec;
  options?: FilterOptions;
  /** The v2 parts beyond account lists, when the filter has any. */
  extra?: CompiledExtra;
}

function sameList(a: KeyList, b: KeyList): boolean {
  if (a === b) return true;
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameSpec(a: FilterSpec, b: FilterSpec): boolean {
  if (a.digest !== undefined || b.digest !== undefined) return a.digest === b.digest;
  if (extraDigest(a.extra) !== extraDigest(b.extra)) return false;
  return sameList(a.include, b.include) && sameList(a.exclude, b.exclude) && sameList(a.required, b.required);
}

/**
 * Keys an update makes the server decode and index: those of every filter that is new or changed since
 * `previous` (an unchanged filter is reused as is). What an update is charged against the keys-per-second caps.
 */
export function changedKeyCount(entries: ReadonlyArray<readonly [string, FilterSpec]>, previous: CompiledFilterSet | null): number {
  const before = new Map<string, FilterSpec>();
  if (previous !== null) for (const f of previous.filters) if (f.spec !== undefined) before.set(f.name, f.spec);
  let n = 0;
  for (const [name, f] of entries) {
    const old = before.get(name);
    if (old === undefined || !sameSpec(old, f)) n += f.include.length + f.exclude.length + f.required.length + extraKeyCount(f.extra);
  }
  return n;
}

/** Keys in a filter map as sent (before de-duplication): what the per-stream key cap counts. */
export function specKeyCount(entries: ReadonlyArray<readonly [string, FilterSpec]>): number {
  let n = 0;
  for (const [, f] of entries) n += f.include.length + f.exclude.length + f.required.length + extraKeyCount(f.extra);
  return n;
}

export interface CompiledFilterSet {
  filters: CompiledFilter[];
  masks: FilterMasks;
}

function masksOf(filters: readonly CompiledFilter[]): FilterMasks {
  let raw = 0;
  let dflt = 0;
  let loaded = 0;
  for (const f of filters) {
    const o = f.options;
    if (o === undefined) continue;
    const bit = 1 << f.slot;
    if (o.encoding === 'raw') raw |= bit;
    else if (o.encoding === 'default') dflt |= bit;
    if (o.matchLoaded) loaded |= bit;
  }
  return raw === 0 && dflt === 0 && loaded === 0 ? NO_MASKS : { raw, default: dflt, loaded };
}

export type CompileResult = { ok: true; set: CompiledFilterSet } | { ok: false; error: StreamError };

/** De-duplication table for one list (slot → position + 1), reused: compiling is one list at a time. */
let seen = new Int32Array(4096);

/** Decodes and de-duplicates one list (a repeated key in `required` must not need two hits). */
function compileList(filter: string, list: ListKind, keys: KeyList, limits: FilterLimits): KeyList32 | StreamError {
  if (keys.length > limits.maxKeysPerList) return streamError('tooManyKeys', { filter, list, count: keys.length, max: limits.maxKeysPerList });
  const block = new Uint8Array(keys.length * PUBKEY_LEN);
  const hashes = new Int32Array(keys.length);
  let size = 16;
  while (size < 2 * keys.length) size *= 2;
  if (seen.length < size) seen = new Int32Array(size);
  const table = seen;
  table.fill(0, 0, size);
  const mask = size - 1;
  const wire = Array.isArray(keys) ? null : (keys as WireKeys);
  let n = 0;
  for (let i = 0; i < keys.length; i++) {
    const at = n * PUBKEY_LEN;
    let ok: boolean;
    if (wire !== null) ok = decode58Into(wire.bytes, wire.offs[2 * i]!, wire.offs[2 * i + 1]!, block, at);
    else {
      const s = (keys as readonly string[])[i]!;
      ok = s.length > 0 && s.length <= 44 && isAscii(s) && decode58Into(Buffer.from(s, 'latin1'), 0, s.length, block, at);
    }
    if (!ok) {
      // Not a 32-byte key by the fast decoder: bs58 says exactly why.
      const key = wire !== null ? wire.text(i) : (keys as readonly string[])[i]!;
      const bytes = bs58.decodeUnsafe(key);
      if (bytes === undefined || key.length === 0) {
        return streamError('invalidPubkey', { filter, list, index: i, key, why: 'not valid base58' });
      }
      if (bytes.length !== PUBKEY_LEN) {
        return streamError('invalidPubkey', { filter, list, index: i, key, why: `decodes to ${bytes.length} bytes, expected ${PUBKEY_LEN}` });
      }
      block.set(bytes, at);
    }
    const h = hash32(block, at);
    let slot = h & mask;
    for (;;) {
      const p = table[slot]!;
      if (p === 0) {
        table[slot] = n + 1;
        hashes[n++] = h;
        break;
      }
      if (equal32(block, (p - 1) * PUBKEY_LEN, block, at)) break; // a repeat: not kept
      slot = (slot + 1) & mask;
    }
  }
  return n === keys.length ? new KeyList32(block, n, hashes) : new KeyList32(block.subarray(0, n * PUBKEY_LEN), n, hashes.subarray(0, n));
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 128) return false;
  return true;
}

/**
 * Validates the whole map before anything changes: a bad entry rejects the request (the stream then ends with
 * INVALID_ARGUMENT), never half of it. Filter order is the request's order, so `filters` lists names stably.
 */
export function compileFilters(entries: ReadonlyArray<readonly [string, FilterSpec]>, limits: FilterLimits, previous?: CompiledFilterSet | null): CompileResult {
  // A client re-sends the whole map to change one filter: a filter whose name and lists are unchanged keeps its
  // compiled lists (same arrays, so the index keeps its postings too); only the others are decoded.
  const before = new Map<string, CompiledFilter>();
  if (previous !== null && previous !== undefined) for (const f of previous.filters) if (f.spec !== undefined) before.set(f.name, f);
  const max = Math.min(limits.maxFilters, MAX_FILTERS_PER_SET);
  if (entries.length > max) return { ok: false, error: streamError('tooManyFilters', { count: entries.length, max }) };
  const parts = limits.parts ?? DEFAULT_FILTER_PART_LIMITS;
  const ixCount = instructionFilterCount(entries);
  if (ixCount > parts.maxInstructionFiltersPerStream) return { ok: false, error: streamError('tooManyInstructionFilters', { count: ixCount, max: parts.maxInstructionFiltersPerStream }) };
  const filters: CompiledFilter[] = [];
  for (const [name, spec] of entries) {
    if (name.length > limits.maxFilterNameLen) {
      return { ok: false, error: streamError('filterNameTooLong', { filter: name, length: name.length, max: limits.maxFilterNameLen }) };
    }
    const same = before.get(name);
    if (same !== undefined && sameSpec(same.spec!, spec)) {
      // The keys are unchanged; the options are the new ones.
      filters.push({ ...same, slot: filters.length, options: spec.options });
      continue;
    }
    const include = compileList(name, 'account_include', spec.include, limits);
    if (!(include instanceof KeyList32)) return { ok: false, error: include };
    const exclude = compileList(name, 'account_exclude', spec.exclude, limits);
    if (!(exclude instanceof KeyList32)) return { ok: false, error: exclude };
    const required = compileList(name, 'account_required', spec.required, limits);
    if (!(required instanceof KeyList32)) return { ok: false, error: required };
    const extra = compileExtra(name, spec.extra, parts, (filter, list, keys) => compileList(filter, list, keys, limits));
    if (extra !== undefined && !('instructions' in extra)) return { ok: false, error: extra };
    // A wire spec is kept by its digest only: its lists point into the request buffer, which must not stay alive.
    filters.push({ name, slot: filters.length, include, exclude, required, spec: spec.digest !== undefined ? { include: [], exclude: [], required: [], digest: spec.digest } : spec, options: spec.options, ...(extra === undefined ? {} : { extra }) });
  }
  return { ok: true, set: { filters, masks: masksOf(filters) } };
}

/** Names of the filters whose bits are set, in set order. */
export function maskNames(set: CompiledFilterSet, mask: number): string[] {
  const out: string[] = [];
  for (const f of set.filters) if ((mask & (1 << f.slot)) !== 0) out.push(f.name);
  return out;
}
