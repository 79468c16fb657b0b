import bs58 from 'bs58';
import {
  FACTS_FLAG_LEGACY, FACTS_FLAGS_OFF, FACTS_HEAD_SZ, FACTS_IX_COUNT_OFF, FACTS_IX_SZ, FACTS_NO_SIGNATURE, FACTS_NUM_REQUIRED_OFF,
  FACTS_RO_SIGNED_OFF, FACTS_RO_UNSIGNED_OFF, FACTS_SIG_COUNT_OFF, FACTS_SIG_OFF,
} from '../../bus/topics/stream-transactions-facts';
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
// A record ingest produced carries the same facts in its `facts` header (bus/topics/stream-transactions-facts.ts):
// fromHeader takes them from there in O(instructions), without walking the message.

/** The Vote program (solana-sdk-ids vote::ID). */
export const VOTE_PROGRAM = Buffer.from(bs58.decode('Vote111111111111111111111111111111111111111'));

const F_NUM_REQUIRED = 2;
const F_RO_SIGNED = 3;
const F_RO_UNSIGNED = 4;
const F_SIGNATURES = 6;
const F_INSTRUCTIONS = 8;
const F_VERSIONED = 10;
/** Tags (field << 3 | wire type LEN) of recent_blockhash (5) and account_keys (7). */
const TAG_BLOCKHASH = 0x2a;
const TAG_ACCOUNT_KEY = 0x3a;
const WT_VARINT = 0;
const WT_I64 = 1;
const WT_LEN = 2;
const WT_I32 = 5;

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

  /**
   * Reads `message` (a record's encoded SubscribeResponseTransaction) beside its static keys. One pass over the
   * top-level fields with the varints read inline (proto/tx-message-reader.ts's FieldWalker reads the same bytes
   * the same way, field by field through its object; this runs per matched record, so the walk is written out):
   * what is malformed for FieldWalker (a truncated or over-long varint, a length past the end, an unknown wire
   * type) is `bad` here; a malformed instruction is left out, as the walker's inner pass left it out.
   */
  read(keys: Uint8Array, keysLength: number, message: Uint8Array): this {
    this.message = message;
    this.keys = keys;
    this.keyCount = keysLength >>> 5;
    let nReq = 0;
    let roS = 0;
    let roU = 0;
    let sigOff = -1;
    let sigCount = 0;
    let legacy = true;
    this.ixCount = 0;
    this.loadedWritable = 0;
    const b = message;
    const end = b.length;
    let p = 0;
    let bad = false;
    while (p < end) {
      let tag = b[p]!;
      // Most fields of a message are 32-byte keys nothing here reads (account_keys, recent_blockhash): skipped in
      // one step when whole (what the general path below does with them, field by field).
      if ((tag === TAG_ACCOUNT_KEY || tag === TAG_BLOCKHASH) && b[p + 1] === 32 && p + 34 <= end) {
        p += 34;
        continue;
      }
      if (tag < 0x80) p++;
      else {
        tag = varint(b, p, end);
        if (tag < 0) {
          bad = true;
          break;
        }
        p = vEnd;
      }
      const wire = tag & 7;
      const field = tag < 0x80 ? tag >>> 3 : Math.floor(tag / 8);
      if (wire === WT_LEN) {
        let n = p < end ? b[p]! : 0x80;
        if (n < 0x80) p++;
        else {
          n = varint(b, p, end);
          if (n < 0) {
            bad = true;
            break;
          }
          p = vEnd;
        }
        if (p + n > end) {
          bad = true;
          break;
        }
        if (field === F_SIGNATURES) {
          if (sigCount++ === 0 && n === 64) sigOff = p;
        } else if (field === F_INSTRUCTIONS) this.instruction(b, p, p + n);
        else if (field === F_VERSIONED) legacy = !boolValue(b, p, p + n);
        p += n;
      } else if (wire === WT_VARINT) {
        let v = p < end ? b[p]! : 0x80;
        if (v < 0x80) p++;
        else {
          v = varint(b, p, end);
          if (v < 0) {
            // A u64 beyond 2^53 (slot) still skips correctly: find the varint's last byte (FieldWalker's rule).
            let q = p;
            while (q < end && q - p < 10 && b[q]! >= 0x80) q++;
            if (q >= end || q - p >= 10) {
              bad = true;
              break;
            }
            v = Number.NaN;
            p = q + 1;
          } else p = vEnd;
        }
        if (field === F_NUM_REQUIRED) nReq = v;
        else if (field === F_RO_SIGNED) roS = v;
        else if (field === F_RO_UNSIGNED) roU = v;
      } else if (wire === WT_I64) {
        if (p + 8 > end) {
          bad = true;
          break;
        }
        p += 8;
      } else if (wire === WT_I32) {
        if (p + 4 > end) {
          bad = true;
          break;
        }
        p += 4;
      } else {
        bad = true;
        break;
      }
    }
    this.numRequiredSignatures = nReq;
    this.numReadonlySigned = roS;
    this.numReadonlyUnsigned = roU;
    this.signatureOff = sigOff;
    this.signatureCount = sigCount;
    this.legacy = legacy;
    this.bad = bad;
    return this;
  }

  /**
   * The same facts from a record's `facts` header (factsHeaderOf has checked its VERSION), checked against its own
   * count and against `message`: false — nothing set that a caller may use — when its length does not match its
   * count or an offset or length falls outside the message, and the caller reads the message instead.
   */
  fromHeader(keys: Uint8Array, keysLength: number, message: Uint8Array, h: Uint8Array): boolean {
    const end = message.length;
    const n = h[FACTS_IX_COUNT_OFF]! | (h[FACTS_IX_COUNT_OFF + 1]! << 8);
    if (h.length !== FACTS_HEAD_SZ + n * FACTS_IX_SZ) return false;
    const sig = h[FACTS_SIG_OFF]! | (h[FACTS_SIG_OFF + 1]! << 8);
    if (sig !== FACTS_NO_SIGNATURE && sig + 64 > end) return false;
    while (n > this.ixProgram.length) {
      this.ixProgram = grow(this.ixProgram);
      this.ixDataOff = grow(this.ixDataOff);
      this.ixDataLen = grow(this.ixDataLen);
    }
    const prog = this.ixProgram;
    const off = this.ixDataOff;
    const len = this.ixDataLen;
    for (let i = 0, o = FACTS_HEAD_SZ; i < n; i++, o += FACTS_IX_SZ) {
      const at = h[o + 1]! | (h[o + 2]! << 8);
      const l = h[o + 3]! | (h[o + 4]! << 8);
      if (at + l > end) return false;
      prog[i] = h[o]!;
      off[i] = at;
      len[i] = l;
    }
    this.message = message;
    this.keys = keys;
    this.keyCount = keysLength >>> 5;
    this.ixCount = n;
    this.loadedWritable = 0;
    this.numRequiredSignatures = h[FACTS_NUM_REQUIRED_OFF]!;
    this.numReadonlySigned = h[FACTS_RO_SIGNED_OFF]!;
    this.numReadonlyUnsigned = h[FACTS_RO_UNSIGNED_OFF]!;
    this.signatureOff = sig === FACTS_NO_SIGNATURE ? -1 : sig;
    this.signatureCount = h[FACTS_SIG_COUNT_OFF]!;
    this.legacy = (h[FACTS_FLAGS_OFF]! & FACTS_FLAG_LEGACY) !== 0;
    this.bad = false;
    return true;
  }

  /** One CompiledInstruction in b[start, end): 1 program_id_index varint, 3 data bytes (the last of each wins). */
  private instruction(b: Uint8Array, start: number, end: number): void {
    let program = 0;
    let off = end;
    let len = 0;
    let p = start;
    while (p < end) {
      let tag = b[p]!;
      if (tag < 0x80) p++;
      else {
        tag = varint(b, p, end);
        if (tag < 0) return;
        p = vEnd;
      }
      const wire = tag & 7;
      const field = tag < 0x80 ? tag >>> 3 : Math.floor(tag / 8);
      if (wire === WT_VARINT) {
        let v = p < end ? b[p]! : 0x80;
        if (v < 0x80) p++;
        else {
          v = varint(b, p, end);
          if (v < 0) {
            let q = p;
            while (q < end && q - p < 10 && b[q]! >= 0x80) q++;
            if (q >= end || q - p >= 10) return;
            v = Number.NaN;
            p = q + 1;
          } else p = vEnd;
        }
        if (field === 1) program = v;
      } else if (wire === WT_LEN) {
        let n = p < end ? b[p]! : 0x80;
        if (n < 0x80) p++;
        else {
          n = varint(b, p, end);
          if (n < 0) return;
          p = vEnd;
        }
        if (p + n > end) return;
        if (field === 3) {
          off = p;
          len = n;
        }
        p += n;
      } else if (wire === WT_I64) {
        if (p + 8 > end) return;
        p += 8;
      } else if (wire === WT_I32) {
        if (p + 4 > end) return;
        p += 4;
      } else return;
    }
    const i = this.ixCount++;
    if (i >= this.ixProgram.length) {
      this.ixProgram = grow(this.ixProgram);
      this.ixDataOff = grow(this.ixDataOff);
      this.ixDataLen = grow(this.ixDataLen);
    }
    this.ixProgram[i] = Number.isFinite(program) && program <= 0x7fffffff ? program : -1;
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

/** Where the last varint() ended (module scratch: read() is not reentrant, and a result object would allocate). */
let vEnd = 0;

/** A varint at b[o] of at most 8 bytes (≤ 2^56, FieldWalker's bound), ending before `limit`; sets vEnd. -1 when
 *  truncated or longer. */
function varint(b: Uint8Array, o: number, limit: number): number {
  let v = 0;
  let mul = 1;
  for (let i = 0; i < 8; i++) {
    if (o >= limit) return -1;
    const x = b[o++]!;
    v += (x & 0x7f) * mul;
    if (x < 0x80) {
      vEnd = o;
      return v;
    }
    mul *= 128;
  }
  return -1;
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
