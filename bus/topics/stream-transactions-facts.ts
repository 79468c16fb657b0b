// stream.transactions record header `facts`: what ingest knows of a transaction's message when it encodes it (its
// header counts, where its first signature and each top-level instruction's data sit in the record's message
// bytes, each instruction's program index), so that the fanout's v2 filters on instructions, roles, signatures and
// votes (fanout/filter/tx-facts.ts) never walk the SubscribeResponseTransaction protobuf to match. A Kafka record
// header, as `lookups` (stream-transactions-lookups.ts) is: the value keeps its VERSION 1 layout byte for byte.
//
//   header key  "facts"
//   value:
//   +0   u8    VERSION (1)
//   +1   u8    flags: bit 0 = legacy (the message's `versioned` is absent or false)
//   +2   u8    num_required_signatures
//   +3   u8    num_readonly_signed_accounts
//   +4   u8    num_readonly_unsigned_accounts
//   +5   u8    signature count
//   +6   u16   offset of the first signature's 64 bytes in the message (LE; 0xffff: none, or not 64 bytes)
//   +8   u16   top-level instruction count I (LE)
//   +10  I × 5 bytes, in message order:
//        u8    program_id_index
//        u16   offset of the instruction's data in the message (LE; an empty data field: where the data field
//              would start, the instruction's end, as a reader of the message finds it)
//        u16   data length (LE)
//
// Offsets are into the record's message (decodeTxRecord's `message`: the value after the static keys), not the
// value. Ingest sets the header when every figure fits its field (a legacy or v0 message's counts are u8 on the
// chain's wire, and a transaction is at most 4,096 bytes, so all do); a record without it, or with a VERSION or a
// length this reader does not know, has its facts read from the message as before. A reader checks every offset
// against the message it has (factsFit), so a header that does not belong to its message is never believed.

export const FACTS_HEADER = 'facts';
export const FACTS_HEADER_VERSION = 1;
export const FACTS_FLAG_LEGACY = 1;
export const FACTS_FLAGS_OFF = 1;
export const FACTS_NUM_REQUIRED_OFF = 2;
export const FACTS_RO_SIGNED_OFF = 3;
export const FACTS_RO_UNSIGNED_OFF = 4;
export const FACTS_SIG_COUNT_OFF = 5;
export const FACTS_SIG_OFF = 6;
export const FACTS_IX_COUNT_OFF = 8;
export const FACTS_HEAD_SZ = 10;
export const FACTS_IX_SZ = 5;
/** FACTS_SIG_OFF's "no 64-byte first signature". */
export const FACTS_NO_SIGNATURE = 0xffff;

/** What encodeFactsHeader reads of a transaction (proto/tx-fields.ts TxFields has this shape). */
export interface FactsSource {
  numRequiredSignatures: number;
  numReadonlySignedAccounts: number;
  numReadonlyUnsignedAccounts: number;
  signatures: readonly Uint8Array[];
  /** `dataLength`, when an instruction has it, is its data's length (a decoded instruction's, read without making
   *  the data a view: proto/tx-fields.ts WireInstruction). */
  instructions: ReadonlyArray<{ programIdIndex: number; data: Uint8Array; readonly dataLength?: number }>;
  versioned?: boolean;
}

const u8 = (v: number): boolean => Number.isInteger(v) && v >= 0 && v <= 0xff;

/**
 * The header for a transaction whose message was encoded with `positions` filled (proto/wire.ts
 * encodeTransactionInto: [0] the first signature's offset, or -1; [1 + i] instruction i's data offset), or null
 * when a figure does not fit its field (the record then goes without it).
 */
export function encodeFactsHeader(tx: FactsSource, positions: Int32Array): Buffer | null {
  const out = Buffer.allocUnsafe(factsHeaderSize(tx));
  return encodeFactsHeaderInto(tx, positions, out) ? out : null;
}

/** The length of a transaction's facts header (when it gets one). */
export function factsHeaderSize(tx: FactsSource): number {
  return FACTS_HEAD_SZ + tx.instructions.length * FACTS_IX_SZ;
}

/**
 * encodeFactsHeader into `out`, factsHeaderSize(tx) bytes the caller gives (a view of a buffer it shares with
 * other records); false when a figure does not fit its field (`out` is then partly written and not to be used).
 */
export function encodeFactsHeaderInto(tx: FactsSource, positions: Int32Array, out: Buffer): boolean {
  const ixs = tx.instructions;
  const n = ixs.length;
  if (n > 0xffff || !u8(tx.numRequiredSignatures) || !u8(tx.numReadonlySignedAccounts) || !u8(tx.numReadonlyUnsignedAccounts) || tx.signatures.length > 0xff) return false;
  out[0] = FACTS_HEADER_VERSION;
  out[FACTS_FLAGS_OFF] = tx.versioned === true ? 0 : FACTS_FLAG_LEGACY;
  out[FACTS_NUM_REQUIRED_OFF] = tx.numRequiredSignatures;
  out[FACTS_RO_SIGNED_OFF] = tx.numReadonlySignedAccounts;
  out[FACTS_RO_UNSIGNED_OFF] = tx.numReadonlyUnsignedAccounts;
  out[FACTS_SIG_COUNT_OFF] = tx.signatures.length;
  const sig = positions[0]!;
  if (sig >= FACTS_NO_SIGNATURE) return false;
  out.writeUInt16LE(sig < 0 ? FACTS_NO_SIGNATURE : sig, FACTS_SIG_OFF);
  out.writeUInt16LE(n, FACTS_IX_COUNT_OFF);
  let o = FACTS_HEAD_SZ;
  for (let i = 0; i < n; i++) {
    const ix = ixs[i]!;
    const at = positions[1 + i]!;
    const len = ix.dataLength ?? ix.data.length;
    if (!u8(ix.programIdIndex) || at < 0 || at > 0xffff || len > 0xffff) return false;
    out[o] = ix.programIdIndex;
    out.writeUInt16LE(at, o + 1);
    out.writeUInt16LE(len, o + 3);
    o += FACTS_IX_SZ;
  }
  return true;
}

/** The record's `facts` header when present and of this VERSION with a length that matches its count; else null. */
export function factsHeaderOf(headers: Readonly<Record<string, Buffer>> | undefined): Buffer | null {
  const h = headers?.[FACTS_HEADER];
  if (h === undefined || h.length < FACTS_HEAD_SZ || h[0] !== FACTS_HEADER_VERSION) return null;
  return h.length === FACTS_HEAD_SZ + h.readUInt16LE(FACTS_IX_COUNT_OFF) * FACTS_IX_SZ ? h : null;
}
