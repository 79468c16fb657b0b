import bs58 from 'bs58';
import { invalidParam, invalidParams } from './errors';

// Positional params and config objects, checked the way agave's serde decoding answers: a wrong shape is
// -32602 naming what was expected; unknown config fields are ignored (serde's default).

export type Raw = Record<string, unknown>;
export type Commitment = 'processed' | 'confirmed' | 'finalized';

const COMMITMENTS: Record<string, Commitment> = {
  processed: 'processed', confirmed: 'confirmed', finalized: 'finalized',
  // Deprecated spellings real nodes still accept.
  recent: 'processed', single: 'confirmed', singleGossip: 'confirmed', root: 'finalized', max: 'finalized',
};

export function paramList(params: unknown): unknown[] {
  if (params === undefined || params === null) return [];
  if (!Array.isArray(params)) throw invalidParams('invalid type: map, expected a sequence');
  return params;
}

export function isObj(v: unknown): v is Raw {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function config(v: unknown): Raw {
  if (v === undefined || v === null) return {};
  if (!isObj(v)) throw invalidParams(`invalid type: ${typeName(v)}, expected a config object`);
  return v;
}

export function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'sequence';
  if (typeof v === 'string') return `string ${JSON.stringify(v)}`;
  if (typeof v === 'number') return Number.isInteger(v) ? `integer \`${v}\`` : `floating point \`${v}\``;
  if (typeof v === 'boolean') return `boolean \`${v}\``;
  return typeof v === 'object' ? 'map' : typeof v;
}

export function required(params: unknown[], i: number, what: string): unknown {
  if (params.length <= i || params[i] === undefined) throw invalidParams(`missing field \`${what}\``);
  return params[i];
}

export function pubkey(v: unknown): Buffer {
  if (typeof v !== 'string') throw invalidParams(`invalid type: ${typeName(v)}, expected a string`);
  let b: Uint8Array | undefined;
  try {
    b = bs58.decodeUnsafe(v);
  } catch {
    b = undefined;
  }
  if (b === undefined || v.length > 44) throw invalidParam('Invalid');
  if (b.length !== 32) throw invalidParam('WrongSize');
  return Buffer.from(b);
}

export function signatureParam(v: unknown): Buffer {
  if (typeof v !== 'string') throw invalidParams(`invalid type: ${typeName(v)}, expected a string`);
  const b = v.length <= 88 ? bs58.decodeUnsafe(v) : undefined;
  if (b === undefined || b.length !== 64) throw invalidParam('Invalid');
  return Buffer.from(b);
}

export function u64(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw invalidParams(`invalid type: ${typeName(v)}, expected u64 (${what})`);
  return v;
}

export function optU64(o: Raw, key: string): number | undefined {
  const v = o[key];
  return v === undefined || v === null ? undefined : u64(v, key);
}

export function optBool(o: Raw, key: string, dflt: boolean): boolean {
  const v = o[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw invalidParams(`invalid type: ${typeName(v)}, expected a boolean (${key})`);
  return v;
}

export function commitment(o: Raw): Commitment {
  const v = o.commitment;
  if (v === undefined || v === null) return 'finalized';
  const c = typeof v === 'string' ? COMMITMENTS[v] : undefined;
  if (c === undefined) throw invalidParams(`unknown variant \`${String(v)}\`, expected one of \`processed\`, \`confirmed\`, \`finalized\``);
  return c;
}

export function oneOf<T extends string>(o: Raw, key: string, allowed: readonly T[], dflt: T): T {
  const v = o[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    throw invalidParams(`unknown variant \`${String(v)}\`, expected one of ${allowed.map((a) => `\`${a}\``).join(', ')}`);
  }
  return v as T;
}
