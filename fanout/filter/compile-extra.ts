import bs58 from 'bs58';
import { streamError, type ListKind, type StreamError, type StreamErrorKind } from '../errors';
import { hash32, KeyList32 } from './key32';
import type { WireKeys } from './wire-keys';

/** compile.ts's KeyList (restated: compile.ts imports this file). */
type KeyList = readonly string[] | WireKeys;

// The parts of a v2 TransactionFilter beyond its account lists (proto/stream_v2.proto): instruction filters, role
// lists (writable, signer), a signature and a vote switch. Validated and compiled once, beside the account lists
// (compile.ts), into what the index (filter-index.ts, instruction-index.ts) keys: program ids and role keys as
// 32 raw bytes, data prefixes and offsets as bytes, the signature as 64 bytes. Every limit below is the config's
// fanout.v2.filterParts (README "Stream v2 filters: instructions, roles, signatures, votes").

/** One instruction condition as the client sent it. */
export interface InstructionSpec {
  programId: string;
  dataPrefix: Uint8Array;
  dataAt: ReadonlyArray<{ offset: number; bytes: Uint8Array }>;
  /** Exact data length; undefined: any. */
  dataSize?: number;
}

export interface FilterExtraSpec {
  instructions: readonly InstructionSpec[];
  writable: KeyList;
  signer: KeyList;
  /** Base58 of 64 bytes; '' = any. */
  signature: string;
  /** undefined: any; false: no vote transactions; true: only them. */
  vote?: boolean;
}

export interface FilterPartLimits {
  /** Instruction filters in one TransactionFilter. */
  maxInstructionFilters: number;
  /** Instruction filters in all of one stream's filters together. */
  maxInstructionFiltersPerStream: number;
  maxDataPrefixBytes: number;
  /** data_at entries in one instruction filter. */
  maxDataAt: number;
  /** Bytes of all data_at entries of one instruction filter together. */
  maxDataAtBytes: number;
}

export const DEFAULT_FILTER_PART_LIMITS: FilterPartLimits = {
  maxInstructionFilters: 8,
  maxInstructionFiltersPerStream: 64,
  maxDataPrefixBytes: 64,
  maxDataAt: 4,
  maxDataAtBytes: 64,
};

/** The largest transaction the chain accepts (solana-packet PACKET_DATA_SIZE): no instruction data is longer,
 *  so an offset or size past it can never match and is refused as malformed. */
export const MAX_TX_BYTES = 1232;

export interface CompiledInstructionFilter {
  program: Uint8Array;
  programHash: number;
  prefix: Uint8Array;
  at: ReadonlyArray<{ offset: number; bytes: Uint8Array }>;
  /** -1: any size. */
  size: number;
}

export interface CompiledExtra {
  instructions: readonly CompiledInstructionFilter[];
  writable: KeyList32;
  signer: KeyList32;
  /** 64 bytes, or null (any). */
  signature: Uint8Array | null;
  /** -1: any; 0: no votes; 1: votes only. */
  vote: -1 | 0 | 1;
}

/** The error kinds that are limits (FILTER_ACK_LIMIT_REACHED); every other compile error is FILTER_ACK_INVALID. */
export function isLimitError(kind: StreamErrorKind): boolean {
  return kind === 'tooManyFilters' || kind === 'tooManyKeys' || kind === 'tooManyInstructionFilters' || kind === 'dataPrefixTooLong' || kind === 'tooManyDataAt' || kind === 'dataBytesTooLong';
}

/** Nothing beyond account lists asked. */
export function isEmptyExtra(x: FilterExtraSpec | undefined): boolean {
  return x === undefined || (x.instructions.length === 0 && x.writable.length === 0 && x.signer.length === 0 && x.signature === '' && x.vote === undefined);
}

/** Role keys of a filter (counted with the account keys against the per-stream and server key caps). */
export function extraKeyCount(x: FilterExtraSpec | undefined): number {
  return x === undefined ? 0 : x.writable.length + x.signer.length + x.instructions.length;
}

/** Instruction filters of a filter map (the per-stream cap). */
export function instructionFilterCount(entries: ReadonlyArray<readonly [string, { extra?: FilterExtraSpec }]>): number {
  let n = 0;
  for (const [, f] of entries) n += f.extra?.instructions.length ?? 0;
  return n;
}

const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

/** A canonical text of the parts, to tell an unchanged filter (compile.ts sameSpec). */
export function extraDigest(x: FilterExtraSpec | undefined): string {
  if (isEmptyExtra(x)) return '';
  const e = x!;
  const list = (l: KeyList): string => (Array.isArray(l) ? (l as readonly string[]).join(',') : Array.from({ length: l.length }, (_, i) => (l as { text(i: number): string }).text(i)).join(','));
  const ix = e.instructions.map((i) => `${i.programId}/${hex(i.dataPrefix)}/${i.dataAt.map((a) => `${a.offset}:${hex(a.bytes)}`).join('+')}/${i.dataSize ?? ''}`).join(';');
  return `${ix}|${list(e.writable)}|${list(e.signer)}|${e.signature}|${e.vote ?? ''}`;
}

type ListCompiler = (filter: string, list: ListKind, keys: KeyList) => KeyList32 | StreamError;

/** Compiles the parts of one filter, or the first reason they are refused. undefined: nothing beyond accounts. */
export function compileExtra(filter: string, x: FilterExtraSpec | undefined, limits: FilterPartLimits, compileList: ListCompiler): CompiledExtra | undefined | StreamError {
  if (x === undefined || isEmptyExtra(x)) return undefined;
  if (x.instructions.length > limits.maxInstructionFilters) return streamError('tooManyInstructionFilters', { filter, count: x.instructions.length, max: limits.maxInstructionFilters });
  const instructions: CompiledInstructionFilter[] = [];
  for (let i = 0; i < x.instructions.length; i++) {
    const s = x.instructions[i]!;
    if (s.programId.length === 0) return streamError('invalidInstructionFilter', { filter, index: i, why: 'program_id is required' });
    const prog = compileList(filter, `instructions[${i}].program_id`, [s.programId]);
    if (!(prog instanceof KeyList32)) return prog;
    if (s.dataPrefix.length > limits.maxDataPrefixBytes) return streamError('dataPrefixTooLong', { filter, index: i, length: s.dataPrefix.length, max: limits.maxDataPrefixBytes });
    if (s.dataAt.length > limits.maxDataAt) return streamError('tooManyDataAt', { filter, index: i, count: s.dataAt.length, max: limits.maxDataAt });
    let atBytes = 0;
    for (const a of s.dataAt) {
      if (a.bytes.length === 0) return streamError('invalidInstructionFilter', { filter, index: i, why: `data_at at offset ${a.offset} has no bytes` });
      if (a.offset + a.bytes.length > MAX_TX_BYTES) return streamError('invalidInstructionFilter', { filter, index: i, why: `data_at at offset ${a.offset} ends past ${MAX_TX_BYTES} bytes, longer than any transaction` });
      atBytes += a.bytes.length;
    }
    if (atBytes > limits.maxDataAtBytes) return streamError('dataBytesTooLong', { filter, index: i, length: atBytes, max: limits.maxDataAtBytes });
    const size = s.dataSize ?? -1;
    if (size > MAX_TX_BYTES) return streamError('invalidInstructionFilter', { filter, index: i, why: `data_size ${size} is longer than any transaction (${MAX_TX_BYTES} bytes)` });
    if (size >= 0) {
      if (s.dataPrefix.length > size) return streamError('invalidInstructionFilter', { filter, index: i, why: `data_prefix (${s.dataPrefix.length} bytes) is longer than data_size ${size}` });
      for (const a of s.dataAt) if (a.offset + a.bytes.length > size) return streamError('invalidInstructionFilter', { filter, index: i, why: `data_at at offset ${a.offset} ends past data_size ${size}` });
    }
    const program = prog.bytes.slice(0, 32);
    instructions.push({ program, programHash: hash32(program, 0), prefix: Uint8Array.from(s.dataPrefix), at: s.dataAt.map((a) => ({ offset: a.offset, bytes: Uint8Array.from(a.bytes) })), size });
  }
  const writable = compileList(filter, 'account_writable', x.writable);
  if (!(writable instanceof KeyList32)) return writable;
  const signer = compileList(filter, 'account_signer', x.signer);
  if (!(signer instanceof KeyList32)) return signer;
  let signature: Uint8Array | null = null;
  if (x.signature !== '') {
    const b = x.signature.length <= 88 ? bs58.decodeUnsafe(x.signature) : undefined;
    if (b === undefined) return streamError('invalidSignature', { filter, value: x.signature, why: x.signature.length > 88 ? 'longer than any base58 signature' : 'not valid base58' });
    if (b.length !== 64) return streamError('invalidSignature', { filter, value: x.signature, why: `decodes to ${b.length} bytes, expected 64` });
    signature = Uint8Array.from(b);
  }
  return { instructions, writable, signer, signature, vote: x.vote === undefined ? -1 : x.vote ? 1 : 0 };
}

/** Does instruction data d[off, off+len) satisfy f's data parts (prefix, bytes at offsets, size)? */
export function dataMatches(f: CompiledInstructionFilter, d: Uint8Array, off: number, len: number): boolean {
  if (f.size >= 0 && len !== f.size) return false;
  const p = f.prefix;
  if (p.length > len) return false;
  for (let i = 0; i < p.length; i++) if (d[off + i] !== p[i]) return false;
  const at = f.at;
  for (let j = 0; j < at.length; j++) {
    const a = at[j]!;
    const b = a.bytes;
    if (a.offset + b.length > len) return false;
    for (let i = 0; i < b.length; i++) if (d[off + a.offset + i] !== b[i]) return false;
  }
  return true;
}
