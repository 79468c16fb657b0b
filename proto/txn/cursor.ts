import { CU16_SHORT, cu16Size, cu16Value, decodeCompactU16 } from './compact-u16';
import type { TxnReason } from './reasons';

// A bounds-checked reader over one transaction. Every read checks the bytes left first; the first failure is
// kept in `fail` and later reads return empties, so decoders check `fail` once per step instead of per byte.
// `end` is min(buffer end, start + 1232): running into it means truncated when the buffer ends there, and
// oversize when the buffer goes on (an entry batch holds more transactions after this one).

const EMPTY = Buffer.alloc(0);

export class TxnCursor {
  fail: TxnReason | null = null;

  constructor(
    readonly bytes: Buffer,
    public off: number,
    readonly end: number,
  ) {}

  private short(): void {
    if (this.fail === null) this.fail = this.end < this.bytes.length ? 'oversize' : 'truncated';
  }

  /** True when n more bytes can be read; records the failure otherwise. */
  has(n: number): boolean {
    if (this.fail !== null) return false;
    if (n > this.end - this.off) {
      this.short();
      return false;
    }
    return true;
  }

  u8(): number {
    if (!this.has(1)) return 0;
    return this.bytes[this.off++]!;
  }

  cu16(): number {
    if (this.fail !== null) return 0;
    const packed = decodeCompactU16(this.bytes, this.off, this.end);
    if (packed < 0) {
      if (packed === CU16_SHORT) this.short();
      else this.fail = 'bad_compact_u16';
      return 0;
    }
    this.off += cu16Size(packed);
    return cu16Value(packed);
  }

  /** A view (no copy) of the next n bytes. */
  take(n: number): Buffer {
    if (!this.has(n)) return EMPTY;
    const v = this.bytes.subarray(this.off, this.off + n);
    this.off += n;
    return v;
  }

  /** compact-u16 length, then that many bytes (as a view). */
  vec(): Buffer {
    const n = this.cu16();
    return this.take(n);
  }
}
