// Reads the address-table lookups and the instructions out of an encoded SubscribeResponseTransaction (the
// message bytes a stream.transactions record carries, proto/wire.ts) without decoding the rest: top-level fields
// are skipped by their wire type until field 8 (instructions) or 9 (address_table_lookups).
//
//   SubscribeResponseTransaction   … 0x42 instructions[] len ‖ CompiledInstruction
//                                     0x4a address_table_lookups[] len ‖ MessageAddressTableLookup …
//   MessageAddressTableLookup      0x0a account_key bytes · 0x12 writable_indexes bytes · 0x1a readonly_indexes bytes
//   CompiledInstruction            0x08 program_id_index varint · 0x12 accounts bytes · 0x1a data bytes
//
// The cursors are reusable and allocate nothing: a hub holds one of each and resets it per transaction.

const WT_VARINT = 0;
const WT_I64 = 1;
const WT_LEN = 2;
const WT_I32 = 5;
const FIELD_INSTRUCTIONS = 8;
const FIELD_LOOKUPS = 9;

/** Reads a varint at `o` (≤ 2^53); sets `end`. -1 when truncated or too long. */
class Varint {
  end = 0;
  read(b: Uint8Array, o: number, limit: number): number {
    let v = 0;
    let mul = 1;
    for (let i = 0; i < 8; i++) {
      if (o >= limit) return -1;
      const x = b[o++]!;
      v += (x & 0x7f) * mul;
      if (x < 0x80) {
        this.end = o;
        return v;
      }
      mul *= 128;
    }
    return -1;
  }
}

/** Walks one level of fields in [start, end): after next() returns true, `field`, `wire`, and for length-delimited
 *  fields `off`/`len` (for varints `value`) describe the current one. `bad` is set when the bytes do not parse. */
export class FieldWalker {
  private readonly vi = new Varint();
  private b: Uint8Array = new Uint8Array(0);
  private pos = 0;
  private end = 0;
  field = 0;
  wire = 0;
  off = 0;
  len = 0;
  value = 0;
  bad = false;

  reset(b: Uint8Array, start: number, end: number): void {
    this.b = b;
    this.pos = start;
    this.end = end;
    this.bad = false;
  }

  next(): boolean {
    if (this.pos >= this.end) return false;
    const tag = this.vi.read(this.b, this.pos, this.end);
    if (tag < 0) return this.fail();
    this.field = Math.floor(tag / 8);
    this.wire = tag & 7;
    let p = this.vi.end;
    switch (this.wire) {
      case WT_VARINT: {
        const v = this.vi.read(this.b, p, this.end);
        if (v < 0) {
          // A u64 beyond 2^53 (slot) still skips correctly: find the varint's last byte.
          let q = p;
          while (q < this.end && q - p < 10 && this.b[q]! >= 0x80) q++;
          if (q >= this.end || q - p >= 10) return this.fail();
          this.value = Number.NaN;
          this.pos = q + 1;
          return true;
        }
        this.value = v;
        this.pos = this.vi.end;
        return true;
      }
      case WT_LEN: {
        const n = this.vi.read(this.b, p, this.end);
        if (n < 0) return this.fail();
        p = this.vi.end;
        if (p + n > this.end) return this.fail();
        this.off = p;
        this.len = n;
        this.pos = p + n;
        return true;
      }
      case WT_I64:
        if (p + 8 > this.end) return this.fail();
        this.pos = p + 8;
        return true;
      case WT_I32:
        if (p + 4 > this.end) return this.fail();
        this.pos = p + 4;
        return true;
      default:
        return this.fail();
    }
  }

  private fail(): false {
    this.bad = true;
    this.pos = this.end;
    return false;
  }
}

/** Iterates the address-table lookups of one message. After next(): the table key at `b[tableOff, +32)`, the
 *  index lists at `[writableOff, +writableLen)` and `[readonlyOff, +readonlyLen)`. */
export class LookupCursor {
  private readonly top = new FieldWalker();
  private readonly inner = new FieldWalker();
  b: Buffer = Buffer.alloc(0);
  tableOff = 0;
  writableOff = 0;
  writableLen = 0;
  readonlyOff = 0;
  readonlyLen = 0;
  /** Set when the message or a lookup does not parse, or a table key is not 32 bytes. */
  bad = false;

  reset(message: Buffer): this {
    this.b = message;
    this.top.reset(message, 0, message.length);
    this.bad = false;
    return this;
  }

  next(): boolean {
    while (this.top.next()) {
      if (this.top.field !== FIELD_LOOKUPS) continue;
      if (this.top.wire !== WT_LEN) return this.fail();
      const it = this.inner;
      it.reset(this.b, this.top.off, this.top.off + this.top.len);
      let table = -1;
      this.writableOff = this.writableLen = this.readonlyOff = this.readonlyLen = 0;
      while (it.next()) {
        if (it.wire !== WT_LEN) continue;
        if (it.field === 1 && it.len === 32) table = it.off;
        else if (it.field === 2) {
          this.writableOff = it.off;
          this.writableLen = it.len;
        } else if (it.field === 3) {
          this.readonlyOff = it.off;
          this.readonlyLen = it.len;
        }
      }
      if (it.bad || table < 0) return this.fail();
      this.tableOff = table;
      return true;
    }
    if (this.top.bad) this.bad = true;
    return false;
  }

  private fail(): false {
    this.bad = true;
    return false;
  }
}

/** Iterates the instructions of one message. After next(): `programIdIndex`, and the accounts and data views. */
export class InstructionCursor {
  private readonly top = new FieldWalker();
  private readonly inner = new FieldWalker();
  b: Buffer = Buffer.alloc(0);
  programIdIndex = 0;
  accountsOff = 0;
  accountsLen = 0;
  dataOff = 0;
  dataLen = 0;
  bad = false;

  reset(message: Buffer): this {
    this.b = message;
    this.top.reset(message, 0, message.length);
    this.bad = false;
    return this;
  }

  next(): boolean {
    while (this.top.next()) {
      if (this.top.field !== FIELD_INSTRUCTIONS) continue;
      if (this.top.wire !== WT_LEN) return this.fail();
      const it = this.inner;
      it.reset(this.b, this.top.off, this.top.off + this.top.len);
      this.programIdIndex = 0;
      this.accountsLen = this.dataLen = 0;
      while (it.next()) {
        if (it.field === 1 && it.wire === WT_VARINT) this.programIdIndex = it.value;
        else if (it.field === 2 && it.wire === WT_LEN) {
          this.accountsOff = it.off;
          this.accountsLen = it.len;
        } else if (it.field === 3 && it.wire === WT_LEN) {
          this.dataOff = it.off;
          this.dataLen = it.len;
        }
      }
      if (it.bad) return this.fail();
      return true;
    }
    if (this.top.bad) this.bad = true;
    return false;
  }

  private fail(): false {
    this.bad = true;
    return false;
  }
}

/** Ints per lookup in scanLookups' output: table key offset, writable offset, length, readonly offset, length. */
export const LOOKUP_INTS = 5;

/**
 * The lookups of `message` in one tight pass (the matching hot path): for each, LOOKUP_INTS ints into `out`.
 * Returns how many were found, -1 when the bytes do not parse, or -2 when `out` is too small (the caller grows it
 * and asks again). Same layout and rules as LookupCursor, without its per-field method calls.
 */
export function scanLookups(b: Uint8Array, out: Int32Array): number {
  const end = b.length;
  let p = 0;
  let k = 0;
  while (p < end) {
    // tag: every field number of the message is < 16, so a one-byte tag; anything longer is skipped generically.
    let tag = b[p++]!;
    if (tag >= 0x80) {
      let shift = 7;
      tag &= 0x7f;
      for (;;) {
        if (p >= end || shift > 28) return -1;
        const x = b[p++]!;
        tag |= (x & 0x7f) << shift;
        if (x < 0x80) break;
        shift += 7;
      }
    }
    const wire = tag & 7;
    if (wire === 0) {
      while (p < end && b[p]! >= 0x80) p++;
      if (p++ >= end) return -1;
      continue;
    }
    if (wire === 1) {
      p += 8;
      continue;
    }
    if (wire === 5) {
      p += 4;
      continue;
    }
    if (wire !== 2) return -1;
    let len = 0;
    let mul = 1;
    for (;;) {
      if (p >= end || mul > 2 ** 28) return -1;
      const x = b[p++]!;
      len += (x & 0x7f) * mul;
      if (x < 0x80) break;
      mul *= 128;
    }
    const body = p;
    p += len;
    if (p > end) return -1;
    if (tag >>> 3 !== FIELD_LOOKUPS) continue;
    if ((k + 1) * LOOKUP_INTS > out.length) return -2;
    // MessageAddressTableLookup: three bytes fields, lengths < 2^14 in any valid message.
    let table = -1;
    let wo = 0;
    let wl = 0;
    let ro = 0;
    let rl = 0;
    let q = body;
    while (q < p) {
      const t = b[q++]!;
      if ((t & 7) !== 2 || t >= 0x80) return -1;
      let l = b[q++]!;
      if (l >= 0x80) l = (l & 0x7f) | (b[q++]! << 7);
      if (q + l > p) return -1;
      const f = t >>> 3;
      if (f === 1 && l === 32) table = q;
      else if (f === 2) {
        wo = q;
        wl = l;
      } else if (f === 3) {
        ro = q;
        rl = l;
      }
      q += l;
    }
    if (table < 0) return -1;
    const o = k * LOOKUP_INTS;
    out[o] = table;
    out[o + 1] = wo;
    out[o + 2] = wl;
    out[o + 3] = ro;
    out[o + 4] = rl;
    k++;
  }
  return p === end ? k : -1;
}
