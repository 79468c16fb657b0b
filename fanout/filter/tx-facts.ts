import bs58 from 'bs58';
import { FieldWalker } from '../../proto/tx-message-reader';
import { equal32 } from './key32';

// What the v2 filters beyond account lists (instructions, roles, signature, vote) need to know about one
// transaction, read once per record from its encoded SubscribeResponseTransaction (the record's message bytes):
//
//   2 num_required_signatures · 3 num_readonly_signed_accounts · 4 num_readonly_unsigned_accounts   (varints)
//   6 signatures[] (64 bytes each; the first is the transaction id)
//   8 instructions[]  CompiledInstruction: 1 program_id_index varint · 2 accounts bytes · 3 data bytes
//   10 versioned  BoolValue (absent or false: legacy)
//
// Roles follow the message header, as the chain reads it (Agave's Message::is_maybe_writable): static key i is a
// signer when i < S; writable when i < S − ROS (signed) or S ≤ i < N − ROU (unsigned). Loaded addresses: the first
// `loadedWritable` of the loaded block (the chain's load order: writable indexes of every lookup, then readonly).
// Nothing here allocates per transaction: the instruction arrays are reused and grow for a large message only.

/** The Vote program (solana-sdk-ids vote::ID). */
export const VOTE_PROGRAM = Buffer.from(bs58.decode('Vote111111111111111111111111111111111111111'));

const F_NUM_REQUIRED = 2;
const F_RO_SIGNED = 3;
const F_RO_UNSIGNED = 4;
const F_SIGNATURES = 6;
const F_INSTRUCTIONS = 8;
const F_VERSIONED = 10;
const WT_VARINT = 0;
const WT_LEN = 2;

export class TxFacts {
  /** The message bytes the offsets below point into. */
  message: Uint8Array = new Uint8Array(0);
  /** The record's static account keys (N × 32). */
  keys: Uint8Array = new Uint8Array(0);
  keyCount = 0;
  numRequiredSignatures = 0;
  numReadonlySigned = 0;
  numReadonlyUnsigned = 0;
  /** Offset of the first signature in `message` (64 bytes), or -1. */
  signatureOff = -1;
  signatureCount = 0;
  legacy = true;
  /** Top-level instructions: program_id_index, data offset and length in `message`. */
  ixCount = 0;
  ixProgram: Int32Array<ArrayBuffer> = new Int32Array(16);
  ixDataOff: Int32Array<ArrayBuffer> = new Int32Array(16);
  ixDataLen: Int32Array<ArrayBuffer> = new Int32Array(16);
  /** How many of the loaded addresses given beside the static keys are writable (the rest are readonly). */
  loadedWritable = 0;
  /** The message did not parse: nothing beyond account lists matches it. */
  bad = false;

  private readonly w = new FieldWalker();
  private readonly iw = new FieldWalker();

  /** Reads `message` (a record's encoded SubscribeResponseTransaction) beside its static keys. */
  read(keys: Uint8Array, keysLength: number, message: Uint8Array): this {
    this.message = message;
    this.keys = keys;
    this.keyCount = keysLength >>> 5;
    this.numRequiredSignatures = 0;
    this.numReadonlySigned = 0;
    this.numReadonlyUnsigned = 0;
    this.signatureOff = -1;
    this.signatureCount = 0;
    this.legacy = true;
    this.ixCount = 0;
    this.loadedWritable = 0;
    const w = this.w;
    w.reset(message, 0, message.length);
    while (w.next()) {
      const f = w.field;
      if (w.wire === WT_VARINT) {
        if (f === F_NUM_REQUIRED) this.numRequiredSignatures = w.value;
        else if (f === F_RO_SIGNED) this.numReadonlySigned = w.value;
        else if (f === F_RO_UNSIGNED) this.numReadonlyUnsigned = w.value;
      } else if (w.wire === WT_LEN) {
        if (f === F_SIGNATURES) {
          if (this.signatureCount++ === 0 && w.len === 64) this.signatureOff = w.off;
        } else if (f === F_INSTRUCTIONS) this.instruction(message, w.off, w.off + w.len);
        else if (f === F_VERSIONED) this.legacy = !boolValue(message, w.off, w.off + w.len);
      }
    }
    this.bad = w.bad;
    return this;
  }

  private instruction(b: Uint8Array, start: number, end: number): void {
    let program = 0;
    let off = end;
    let len = 0;
    const iw = this.iw;
    iw.reset(b, start, end);
    while (iw.next()) {
      if (iw.field === 1 && iw.wire === WT_VARINT) program = iw.value;
      else if (iw.field === 3 && iw.wire === WT_LEN) {
        off = iw.off;
        len = iw.len;
      }
    }
    if (iw.bad) return;
    const i = this.ixCount++;
    if (i >= this.ixProgram.length) {
      this.ixProgram = grow(this.ixProgram);
      this.ixDataOff = grow(this.ixDataOff);
      this.ixDataLen = grow(this.ixDataLen);
    }
    this.ixProgram[i] = Number.isFinite(program) ? program : -1;
    this.ixDataOff[i] = off;
    this.ixDataLen[i] = len;
  }

  /** Static key i is a signer. */
  isSigner(i: number): boolean {
    return i < this.numRequiredSignatures;
  }

  /** Static key i is writable by the header. */
  isWritable(i: number): boolean {
    const s = this.numRequiredSignatures;
    return i < s ? i < s - this.numReadonlySigned : i < this.keyCount - this.numReadonlyUnsigned;
  }

  /** Offset in `keys` of instruction i's program (a static key), or -1 when its index is past the static keys. */
  programOff(i: number): number {
    const p = this.ixProgram[i]!;
    return p >= 0 && p < this.keyCount ? p * 32 : -1;
  }

  /** Agave's simple vote transaction (what geyser's is_vote and Yellowstone's `vote` filter read). */
  get isVote(): boolean {
    if (!this.legacy || this.signatureCount > 2 || this.ixCount !== 1) return false;
    const o = this.programOff(0);
    return o >= 0 && equal32(this.keys, o, VOTE_PROGRAM, 0);
  }
}

function boolValue(b: Uint8Array, start: number, end: number): boolean {
  // BoolValue { bool value = 1 }: 0x08 0x01 when true, empty when false.
  for (let i = start; i + 1 < end; i += 2) if (b[i] === 0x08) return b[i + 1] !== 0;
  return false;
}

function grow(a: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer> {
  const b = new Int32Array(a.length * 2);
  b.set(a);
  return b;
}
