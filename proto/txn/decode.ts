import type { TxFields } from '../tx-fields';
import { TxnCursor } from './cursor';
import { readLegacyMessage } from './legacy';
import type { MessageBody } from './message';
import type { TxnReason } from './reasons';
import { readV0Message, V0_PREFIX } from './v0';

// The transaction dispatcher. Wire format (spec/shreds.md §3):
//
//   signatures  compact-u16 S · S × 64
//   message     [0x80 | version]?  body (message.ts)  [v0: lookups (v0.ts)]
//
// The first message byte tells the version: high bit set = versioned (`byte & 0x7f`; only 0 is live, 0x81 is
// the proposed v1 and is counted as unsupported), otherwise it is legacy's num_required_signatures.
// Every field of the result is a view into the input bytes: nothing is copied.

export const MAX_TX_SZ = 1232;
export const SIGNATURE_SZ = 64;
const VERSION_MASK = 0x7f;

export type TxnVersion = 'legacy' | 0;

export interface DecodedTxn {
  tx: TxFields;
  wireLen: number;
  version: TxnVersion;
  /** The static account keys, N × 32 contiguous (a view): what stream records carry for filters. */
  staticKeys: Buffer;
}

export type TxnDecode = ({ ok: true } & DecodedTxn) | { ok: false; reason: TxnReason };

/**
 * Reads one transaction starting at `off`; bytes after it are left alone (entry batches are not
 * length-prefixed, so this is how their length is learnt). Never throws.
 */
export function readTransaction(bytes: Buffer, off: number, slot: bigint): TxnDecode {
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
    if ((first & VERSION_MASK) !== 0) return { ok: false, reason: 'unsupported_version' };
    version = 0;
    const m = readV0Message(c, sigCount);
    body = m === null ? null : m.body;
    if (m !== null) lookups = m.lookups;
  }
  if (body === null || c.fail !== null) return { ok: false, reason: c.fail ?? 'truncated' };

  const signatures = new Array<Buffer>(sigCount);
  for (let i = 0; i < sigCount; i++) signatures[i] = sigBytes.subarray(i * SIGNATURE_SZ, (i + 1) * SIGNATURE_SZ);
  return {
    ok: true,
    wireLen: c.off - off,
    version,
    staticKeys: body.staticKeys,
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

/** Exactly one transaction: bytes after it are an error ('trailing_bytes'). */
export function decodeTransaction(bytes: Buffer, slot: bigint): TxnDecode {
  const r = readTransaction(bytes, 0, slot);
  if (r.ok && r.wireLen !== bytes.length) return { ok: false, reason: 'trailing_bytes' };
  return r;
}
