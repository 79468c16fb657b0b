import type { TxFields } from '../tx-fields';
import { TxnCursor } from './cursor';
import { readLegacyMessage } from './legacy';
import type { MessageBody } from './message';
import type { TxnReason } from './reasons';
import { readV0Message, V0_PREFIX } from './v0';
import { readV1Message, V1_MAX_TX_SZ, V1_PREFIX, V1_SIGNATURE_SZ, type TxnConfig } from './v1';

// The transaction dispatcher. The FIRST byte of a transaction tells its framing (the SDK's VersionedTransaction
// wincode schema reads it the same way):
//
//   < 0x80   legacy / v0: signatures first (spec/shreds.md §3)
//              signatures  compact-u16 S · S × 64   (S < 128, so this byte is S itself)
//              message     [0x80]?  body (message.ts)  [v0: lookups (v0.ts)]
//            The first message byte: high bit set = versioned (only version 0 is valid after a signature
//            count), otherwise it is legacy's num_required_signatures.
//   0x81     v1 (SIMD-0385): message first, signatures after it, no count (v1.ts)
//   0x80, 0x82..0xff   a version this decoder does not know: 'unsupported_version' with `version` = byte & 0x7f.
//            Its length is unknowable, so in an entry batch it ends the batch.
//
// Every field of the result is a view into the input bytes: nothing is copied.

/** Legacy and v0 (PACKET_DATA_SIZE); v1 has its own (V1_MAX_TX_SZ). */
export const MAX_TX_SZ = 1232;
export const SIGNATURE_SZ = 64;
const VERSION_MASK = 0x7f;

export type TxnVersion = 'legacy' | 0 | 1;

export interface DecodedTxn {
  tx: TxFields;
  wireLen: number;
  version: TxnVersion;
  /** The static account keys, N × 32 contiguous (a view): what stream records carry for filters. */
  staticKeys: Buffer;
  /** The signing payload (a view): what every signature signs. */
  message: Buffer;
  /** v1 only: the config values (null for legacy and v0, whose budget is in ComputeBudget instructions). */
  config: TxnConfig | null;
}

export type TxnDecode =
  | ({ ok: true } & DecodedTxn)
  /** `version`: the unknown version number, when the transaction's first byte names one ('unsupported_version'). */
  | { ok: false; reason: TxnReason; version?: number };

/**
 * Reads one transaction starting at `off`; bytes after it are left alone (entry batches are not
 * length-prefixed, so this is how their length is learnt). Never throws.
 */
export function readTransaction(bytes: Buffer, off: number, slot: bigint): TxnDecode {
  if (off < bytes.length && bytes[off]! >= V0_PREFIX) {
    if (bytes[off] === V1_PREFIX) return readV1Transaction(bytes, off, slot);
    return { ok: false, reason: 'unsupported_version', version: bytes[off]! & VERSION_MASK };
  }
  const c = new TxnCursor(bytes, off, Math.min(bytes.length, off + MAX_TX_SZ));
  const sigCount = c.cu16();
  if (c.fail === null && sigCount === 0) c.fail = 'no_signatures';
  const sigBytes = c.take(sigCount * SIGNATURE_SZ);
  if (c.fail !== null) return { ok: false, reason: c.fail };
  const first = c.u8();
  if (c.fail !== null) return { ok: false, reason: c.fail };

  let version: TxnVersion;
  let body: MessageBody | null;
  let lookups: TxFields['addressTableLookups'] = [];
  if ((first & V0_PREFIX) === 0) {
    version = 'legacy';
    c.off--; // the byte was num_required_signatures
    body = readLegacyMessage(c, sigCount);
  } else {
    // Not a future version (those put their version byte first): a malformed legacy/v0 transaction.
    if ((first & VERSION_MASK) !== 0) return { ok: false, reason: 'unsupported_version' };
    version = 0;
    const m = readV0Message(c, sigCount);
    body = m === null ? null : m.body;
    if (m !== null) lookups = m.lookups;
  }
  if (body === null || c.fail !== null) return { ok: false, reason: c.fail ?? 'truncated' };

  const signatures = new Array<Buffer>(sigCount);
  for (let i = 0; i < sigCount; i++) signatures[i] = sigBytes.subarray(i * SIGNATURE_SZ, (i + 1) * SIGNATURE_SZ);
  const msgStart = sigBytes.byteOffset - bytes.byteOffset + sigBytes.length;
  return {
    ok: true,
    wireLen: c.off - off,
    version,
    staticKeys: body.staticKeys,
    message: bytes.subarray(msgStart, c.off),
    config: null,
    tx: {
      slot,
      numRequiredSignatures: body.numRequiredSignatures,
      numReadonlySignedAccounts: body.numReadonlySignedAccounts,
      numReadonlyUnsignedAccounts: body.numReadonlyUnsignedAccounts,
      recentBlockhash: body.recentBlockhash,
      signatures,
      accountKeys: body.accountKeys,
      instructions: body.instructions,
      addressTableLookups: lookups,
      versioned: version === 0,
    },
  };
}

/** v1: message (v1.ts), then num_required_signatures × 64. */
function readV1Transaction(bytes: Buffer, off: number, slot: bigint): TxnDecode {
  const c = new TxnCursor(bytes, off, Math.min(bytes.length, off + V1_MAX_TX_SZ));
  const m = readV1Message(c);
  if (m === null) return { ok: false, reason: c.fail ?? 'truncated' };
  const n = m.body.numRequiredSignatures;
  const sigBytes = c.take(n * V1_SIGNATURE_SZ);
  if (c.fail !== null) return { ok: false, reason: c.fail };
  const signatures = new Array<Buffer>(n);
  for (let i = 0; i < n; i++) signatures[i] = sigBytes.subarray(i * V1_SIGNATURE_SZ, (i + 1) * V1_SIGNATURE_SZ);
  const body = m.body;
  return {
    ok: true,
    wireLen: c.off - off,
    version: 1,
    staticKeys: body.staticKeys,
    message: bytes.subarray(off, m.messageEnd),
    config: m.config,
    tx: {
      slot,
      numRequiredSignatures: body.numRequiredSignatures,
      numReadonlySignedAccounts: body.numReadonlySignedAccounts,
      numReadonlyUnsignedAccounts: body.numReadonlyUnsignedAccounts,
      recentBlockhash: body.recentBlockhash,
      signatures,
      accountKeys: body.accountKeys,
      instructions: body.instructions,
      addressTableLookups: NO_LOOKUPS,
      versioned: true,
      v1Config: m.config,
    },
  };
}

const NO_LOOKUPS: TxFields['addressTableLookups'] = [];

/** Exactly one transaction: bytes after it are an error ('trailing_bytes'). */
export function decodeTransaction(bytes: Buffer, slot: bigint): TxnDecode {
  const r = readTransaction(bytes, 0, slot);
  if (r.ok && r.wireLen !== bytes.length) return { ok: false, reason: 'trailing_bytes' };
  return r;
}
