// compact-u16 ("short_vec" length): 7 bits per byte, low bits first, high bit = another byte follows, at most
// 3 bytes. The third byte may only carry 2 bits (16 - 7 - 7). Like the validators' decoder, non-minimal forms
// (a trailing 0x00 continuation, e.g. 0x80 0x00 for 0) are rejected: one value, one encoding.
//
//   value      bytes
//   0..0x7f    0b0xxxxxxx
//   ..0x3fff   0b1xxxxxxx 0b0xxxxxxx
//   ..0xffff   0b1xxxxxxx 0b1xxxxxxx 0b000000xx

/** Sentinel of decodeCompactU16: past `end` (caller decides whether that means truncated or oversize). */
export const CU16_SHORT = -1;
/** Sentinel of decodeCompactU16: overlong, non-minimal or above 0xffff. */
export const CU16_INVALID = -2;

/**
 * Reads a compact-u16 at `off`, never past `end`. Returns the value and the bytes used packed into one number
 * (`value | size << 16`) so the hot path allocates nothing; use cu16Value / cu16Size. Negative = a sentinel.
 */
export function decodeCompactU16(bytes: Uint8Array, off: number, end: number): number {
  if (off >= end) return CU16_SHORT;
  const b0 = bytes[off]!;
  if (b0 < 0x80) return b0 | (1 << 16);
  if (off + 1 >= end) return CU16_SHORT;
  const b1 = bytes[off + 1]!;
  if (b1 < 0x80) {
    if (b1 === 0) return CU16_INVALID; // non-minimal: fits in one byte
    return (b0 & 0x7f) | (b1 << 7) | (2 << 16);
  }
  if (off + 2 >= end) return CU16_SHORT;
  const b2 = bytes[off + 2]!;
  if (b2 === 0 || b2 > 0x03) return CU16_INVALID; // non-minimal, or a 4th byte / bits above 16
  return (b0 & 0x7f) | ((b1 & 0x7f) << 7) | (b2 << 14) | (3 << 16);
}

export function cu16Value(packed: number): number {
  return packed & 0xffff;
}

export function cu16Size(packed: number): number {
  return packed >>> 16;
}

/** The encoder of the pair (tests, shredder inputs). */
export function encodeCompactU16(value: number): Buffer {
  if (!Number.isInteger(value) || value < 0 || value > 0xffff) throw new RangeError(`compact-u16 out of range: ${value}`);
  if (value < 0x80) return Buffer.from([value]);
  if (value < 0x4000) return Buffer.from([(value & 0x7f) | 0x80, value >> 7]);
  return Buffer.from([(value & 0x7f) | 0x80, ((value >> 7) & 0x7f) | 0x80, value >> 14]);
}
